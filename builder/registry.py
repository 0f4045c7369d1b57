"""One registry mechanism for everything ruler lets others add: benchmarks, task families,
tasks, variants, backends, metrics, prediction readers, exporters and publish steps.

A `Registry` maps names to entries of one kind. An entry is registered three ways:

- `register(obj)`: the object itself (a plug-in module's own call, or the product's);
- `register_lazy(name, "module:attr")`: an address, imported the first time the name is asked
  for, so one entry's dependencies never load for another (`ruler --help` imports no
  inference stack and no task generator);
- an entry point in the registry's group (`ruler.backends`, ...): a pip-installed package
  extends the installed `ruler` command, and every process (the CLI's, each spawned worker)
  finds it by being installed, not by being sent. An entry point's value names either the
  entry itself (`name = "pkg.mod:OBJ"`, registered under the entry point's name) or a module or
  function that registers entries when imported or called (how one package adds several, e.g.
  a task family and its tasks); the group's entry points are read once per process, when a
  name is missing or the whole list is read.

A name is registered once: registering another object under a taken name is a
`DuplicateName` (replacing an entry silently would change what a command means depending on
what happened to be imported), registering the same object again does nothing. An unknown
name is an `UnknownName` that lists the known ones and the closest matches. Both are
RulerErrors (one line at the CLI). Loading is thread-safe: an entry's module is imported and
a group's entry points are read once, under the registry's lock.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import sys
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Generic, Iterator, Mapping, TypeVar

from ruler.builder.errors import RulerError

T = TypeVar("T")


class UnknownName(RulerError, KeyError):
    """A name no entry has (a KeyError too, so a registry reads as a Mapping)."""

    def __str__(self) -> str:  # KeyError's str() would quote the message
        return str(self.args[0]) if self.args else ""


class DuplicateName(RulerError, ValueError):
    """A name registered twice with different entries."""


def load_target(target: str) -> Any:
    """The object an address names: `package.module:attr.sub` (an attribute path), or a
    whole module for `package.module`."""
    module_name, _, attrs = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for attr in filter(None, attrs.split(".")):
        obj = getattr(obj, attr)
    return obj


@functools.lru_cache(maxsize=1)
def _installed_entry_points() -> Any:
    """Every installed entry point, read once per process (the scan reads each installed
    distribution's metadata; the registries share it)."""
    from importlib.metadata import entry_points

    return entry_points()


def entry_points_of(group: str) -> list[Any]:
    """The group's installed entry points, by name; a name offered twice with the same value
    (a package found on two paths) counts once."""
    seen: dict[str, Any] = {}
    for ep in sorted(_installed_entry_points().select(group=group),
                     key=lambda e: (e.name, e.value)):
        known = seen.get(ep.name)
        if known is not None and known.value != ep.value:
            raise DuplicateName(f"two installed plug-ins offer {ep.name!r} in entry point group "
                                f"{group}: {known.value} and {ep.value}; uninstall one")
        seen[ep.name] = ep
    return list(seen.values())


@dataclass
class _Entry:
    target: str | None  # the address of a lazy entry (None: registered as an object)
    origin: str  # who offered it, for messages
    obj: Any = None
    loaded: bool = False
    loading: bool = False  # being imported (its module may read the registry meanwhile)
    plugin: bool = False  # offered by an entry point: it may be a registrar


def _same(a: Any, b: Any) -> bool:
    return a is b or a == b


class Registry(Mapping[str, T], Generic[T]):
    """Named entries of one kind (see the module docstring). A read-only Mapping over the
    entries, in registration order (built-ins first); reading an entry imports it if it is
    lazy, listing all of them loads the group's plug-ins.

    Args:
        kind: what an entry is, in messages ("backend", "task family").
        group: the entry point group plug-ins offer entries in, or None.
        accepts: whether an object is an entry of this kind (an entry point's target that is
            not one is a registrar: a module, or a function called once).
        name_of: an entry's own name, checked against the name it is registered under (a
            variant's `field`, a backend's `name`); None: entries carry no name.
        same: whether two objects are the same entry (registering it again does nothing).
        on_miss: called once before a name is declared unknown or the whole list is read:
            what else may register entries of this kind (the task catalog: the families'
            plug-ins, which register their tasks).
    """

    def __init__(self, kind: str, group: str | None = None, *,
                 accepts: Callable[[Any], bool] = lambda obj: True,
                 name_of: Callable[[Any], str] | None = None,
                 same: Callable[[Any, Any], bool] = _same,
                 on_miss: Callable[[], None] | None = None):
        self.kind, self.group = kind, group
        self._accepts, self._name_of, self._same, self._on_miss = accepts, name_of, same, on_miss
        self._entries: dict[str, _Entry] = {}
        self._table_lock = threading.Lock()  # held only to change the table, never to import
        self._load_lock = threading.RLock()  # held while importing: one load at a time
        self._plugins = "not read"  # -> "reading" -> "read"

    # --- registering ---------------------------------------------------------------------------

    def register(self, obj: T, name: str | None = None, origin: str | None = None) -> T:
        """Register `obj` under `name` (default: its own name) and return it, so this works
        as a decorator too."""
        if not self._accepts(obj):
            raise TypeError(f"{obj!r} is not a {self.kind}")
        own = self._name_of(obj) if self._name_of else None
        if name is None:
            if own is None:
                raise TypeError(f"register a {self.kind} under a name")
            name = own
        elif own is not None and own != name:
            raise DuplicateName(f"{self.kind} {own!r} cannot be registered as {name!r}")
        origin = origin or _origin_of(obj)
        with self._table_lock:
            known = self._entries.get(name)
            if known is None or (not known.loaded and _registers_itself(known.target, obj)):
                # new, or what a lazy entry's address names, registered by its own module
                self._entries[name] = _Entry(None, origin, obj, loaded=True,
                                             plugin=bool(known and known.plugin))
                return obj
            if known.loaded and self._same(known.obj, obj):
                return obj
        raise DuplicateName(f"{self.kind} {name!r} is registered already (by {known.origin}); "
                            f"a {self.kind} cannot replace another: give it another name")

    def register_lazy(self, name: str, target: str, origin: str = "ruler") -> None:
        """Register the entry at address `target` ("package.module:attr"), imported the first
        time `name` is asked for."""
        with self._table_lock:
            known = self._entries.get(name)
            if known is not None and known.target != target:
                raise DuplicateName(f"{self.kind} {name!r} is registered already (by "
                                    f"{known.origin}); {target} cannot replace it")
            if known is None:
                self._entries[name] = _Entry(target, origin)

    def unregister(self, name: str) -> None:
        """Remove an entry (a test cleans up after itself)."""
        with self._table_lock:
            self._entries.pop(name, None)

    # --- reading -------------------------------------------------------------------------------

    def __getitem__(self, name: str) -> T:
        entry = self._entries.get(name)
        if entry is None:
            self.load_plugins()
            entry = self._entries.get(name)
        if entry is None:  # a registrar plug-in may register it
            self._load_plugin_entries()
            entry = self._entries.get(name)
        if entry is None:
            raise UnknownName(self.unknown_message(name))
        if not entry.loaded:
            self._load(name)
            entry = self._entries.get(name)
            if entry is None or not entry.loaded:  # a plug-in registrar's label
                raise UnknownName(self.unknown_message(name))
        return entry.obj

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        entry = self._entries.get(name)
        if entry is not None and (entry.loaded or not entry.plugin):
            return True
        return name in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def names(self) -> tuple[str, ...]:
        """Every name, in registration order (the plug-ins' loaded: a registrar's entries
        are known only once it ran)."""
        self.load_plugins()
        self._load_plugin_entries()
        return tuple(self._entries)

    def known_names(self) -> tuple[str, ...]:
        """The names registered so far, without loading anything (for messages)."""
        return tuple(self._entries)

    def loaded_items(self) -> list[tuple[str, T]]:
        """The entries loaded so far, without loading anything."""
        return [(n, e.obj) for n, e in list(self._entries.items()) if e.loaded]

    def unknown_message(self, name: str) -> str:
        names = self.known_names()
        close = difflib.get_close_matches(name, names, n=3)
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        return (f"unknown {self.kind} {name!r}; choose one of {', '.join(names) or 'none'}"
                f"{hint}")

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self._entries)!r})"

    # --- loading -------------------------------------------------------------------------------

    def load_plugins(self) -> None:
        """Read the group's entry points (once per process) into lazy entries, and give
        `on_miss` its one call."""
        if self._plugins == "read":
            return
        with self._load_lock:  # waits while another thread reads them
            if self._plugins != "not read":  # read, or being read by this thread (a plug-in
                return  # reading the list while it loads)
            self._plugins = "reading"
            try:
                if self._on_miss is not None:
                    self._on_miss()
                for ep in entry_points_of(self.group) if self.group else ():
                    self._offer(ep)
            finally:
                self._plugins = "read"

    def _offer(self, ep: Any) -> None:
        dist = getattr(getattr(ep, "dist", None), "name", None)
        origin = f"plug-in {dist or ep.value} (entry point {ep.name} in group {self.group})"
        with self._table_lock:
            known = self._entries.get(ep.name)
            if known is None:
                self._entries[ep.name] = _Entry(ep.value, origin, plugin=True)
                return
        if known.target != ep.value:
            raise DuplicateName(f"{origin} offers {self.kind} {ep.name!r}, which is registered "
                                f"already (by {known.origin}): rename it in the plug-in")

    def _load_plugin_entries(self) -> None:
        for name, entry in list(self._entries.items()):
            if entry.plugin and not entry.loaded:
                self._load(name)

    def _load(self, name: str) -> None:
        with self._load_lock:
            entry = self._entries.get(name)
            if entry is None or entry.loaded or entry.loading:  # loaded, or loading it now
                return
            entry.loading = True
            try:
                self._import(name, entry)
            finally:
                entry.loading = False

    def _import(self, name: str, entry: _Entry) -> None:
        try:
            obj = load_target(entry.target)
        except RulerError:
            raise
        except Exception as e:
            raise RulerError(f"{self.kind} {name!r} ({entry.target}, {entry.origin}) failed "
                             f"to load: {type(e).__name__}: {e}") from e
        now = self._entries.get(name)
        if now is not None and now.loaded:  # the module registered it while imported
            return
        if self._accepts(obj) and not isinstance(obj, ModuleType):
            own = self._name_of(obj) if self._name_of else None
            if own is not None and own != name:
                raise RulerError(f"{self.kind} {name!r} ({entry.target}, {entry.origin}) "
                                 f"is named {own!r}: the names must agree")
            with self._table_lock:
                entry.obj, entry.loaded = obj, True
            return
        if callable(obj) and not isinstance(obj, ModuleType):
            try:
                obj()  # a registrar: it registers entries itself
            except RulerError:
                raise
            except Exception as e:
                raise RulerError(f"{self.kind} plug-in {name!r} ({entry.target}, "
                                 f"{entry.origin}) failed to load: {type(e).__name__}: "
                                 f"{e}") from e
        now = self._entries.get(name)
        if now is not None and now.loaded:
            return
        if not entry.plugin:
            raise RulerError(f"{self.kind} {name!r}: {entry.target} is not a {self.kind} "
                             f"and did not register one")
        with self._table_lock:  # a registrar's label, not an entry of its own
            if self._entries.get(name) is entry:
                del self._entries[name]


def _registers_itself(target: str | None, obj: Any) -> bool:
    """Whether `obj` is the entry a lazy address names, registered by its own module: the
    module is being imported (its top level registers what the address names), or `obj` is
    the object at the address of a module imported already."""
    module_name, _, attrs = (target or "").partition(":")
    module = sys.modules.get(module_name)
    if module is None:
        return False
    if getattr(getattr(module, "__spec__", None), "_initializing", False):
        return True
    found: Any = module
    for attr in filter(None, attrs.split(".")):
        found = getattr(found, attr, None)
    return bool(attrs) and found is obj


def _origin_of(obj: Any) -> str:
    """Where `obj` was registered from, for messages: a class's or function's module, else
    the module that called the registering function (past this module and the `register_*`
    functions that wrap it)."""
    if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__"):
        return f"module {obj.__module__}"
    frame = sys._getframe(1)
    while frame is not None and (frame.f_globals.get("__name__") == __name__
                                 or frame.f_code.co_name.startswith("register")):
        frame = frame.f_back
    return f"module {frame.f_globals.get('__name__')}" if frame is not None else "unknown"
