"""One registry mechanism for everything ruler lets others add: benchmarks, task families,
tasks, variants, backends, metrics, prediction readers, exporters and publish steps.

A `Registry` maps names to entries of one kind, registered as objects (`register`), as lazy
"module:attr" addresses imported the first time the name is asked for (`register_lazy`: one
entry's dependencies never load for another, so `ruler --help` imports no inference stack), or
by the entry points of its group, read once per process when a name is missing or the whole
list is read: a pip-installed package extends the installed `ruler` in every process, the
CLI's and each spawned worker's. docs/extending.md ("Plug-ins: one mechanism") says what users
see: one line for an unknown name (`UnknownName`) or a name registered twice with another
entry (`DuplicateName`: replacing silently would make a command mean what happened to be
imported), and a broken plug-in left out with one warning line (`plugin_warning`), so one
broken package never breaks every command. Loading is thread-safe: an entry's module is
imported and a group's entry points are read once, under the registry's lock.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib
import sys
import threading
from dataclasses import dataclass
from types import FrameType, ModuleType
from typing import Any, Callable, ContextManager, Generic, Iterator, Mapping, TypeVar

from ruler.kernel.errors import RulerError

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


#: Whether registries read the installed plug-ins (`ignore_installed_plugins`).
_READ_INSTALLED = [True]


def ignore_installed_plugins() -> None:
    """From now on in this process, no registry reads an entry point group: what is listed is
    ruler's own and what code registers (docs/cli_reference.py writes ruler's own commands,
    whatever a developer has installed)."""
    _READ_INSTALLED[0] = False


def offered_entry_points(group: str) -> tuple[list[Any], dict[str, str]]:
    """The group's installed entry points, by name, and a message for each name two installed
    plug-ins offer with different values (name -> message; neither is taken: which one a
    command ran would depend on the install order)."""
    if not _READ_INSTALLED[0]:
        return [], {}
    by_name: dict[str, list[Any]] = {}
    for ep in sorted(_installed_entry_points().select(group=group),
                     key=lambda e: (e.name, e.value)):
        if all(ep.value != known.value for known in by_name.get(ep.name, ())):
            by_name.setdefault(ep.name, []).append(ep)
    offered = [eps[0] for eps in by_name.values() if len(eps) == 1]
    clashes = {name: f"two installed plug-ins offer {name!r} in entry point group {group}: "
                     f"{' and '.join(f'{ep.value} ({_package_of(ep)})' for ep in eps)}; "
                     f"neither is used: uninstall one"
               for name, eps in by_name.items() if len(eps) > 1}
    return offered, clashes


def _package_of(ep: Any) -> str:
    """The installed distribution an entry point comes from, for messages."""
    return getattr(getattr(ep, "dist", None), "name", None) or "unknown package"


#: Plug-in warnings shown in this process: each once, however many registries or lookups
#: meet it.
_WARNED: set[str] = set()


def plugin_warning(message: str) -> None:
    """Say, once a process, on one line of stderr, that a plug-in is left out and why."""
    line = one_line(message)
    if line not in _WARNED:
        _WARNED.add(line)
        print(f"ruler: warning: {line}", file=sys.stderr, flush=True)


def one_line(text: str, limit: int = 600) -> str:
    """`text` on one line (a plug-in's exception may span several), at most `limit`
    characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _failure(e: BaseException) -> str:
    """What an exception raised by a plug-in's code says, on one line."""
    if isinstance(e, SystemExit):
        return f"it called sys.exit({e.code!r})"
    return one_line(f"{type(e).__name__}: {e}")


@dataclass
class _Entry:
    target: str | None  # the address of a lazy entry (None: registered as an object)
    origin: str  # who offered it, for messages
    obj: Any = None
    loaded: bool = False
    loading: bool = False  # being imported (its module may read the registry meanwhile)
    plugin: bool = False  # offered by an entry point: it may be a registrar
    from_plugin: bool = False  # registered by a plug-in's code (a registrar's entries)
    package: str | None = None  # the distribution of the plug-in that offered or registered it


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
                 on_miss: Callable[[], object] | None = None):
        self.kind, self.group = kind, group
        self._accepts, self._name_of, self._same, self._on_miss = accepts, name_of, same, on_miss
        self._entries: dict[str, _Entry] = {}
        # name -> why a plug-in's entry of that name is left out (failed to load, clashed)
        self._left_out: dict[str, str] = {}
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
                self._entries[name] = _Entry(
                    None, origin, obj, loaded=True, plugin=bool(known and known.plugin),
                    from_plugin=_in_plugin_code() or bool(known and known.from_plugin),
                    package=known.package if known else _current_package())
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
                self._entries[name] = _Entry(target, origin, from_plugin=_in_plugin_code(),
                                             package=_current_package())

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
        if entry is None and name not in self._left_out:  # a registrar plug-in may register it
            self._load_plugin_entries()
            entry = self._entries.get(name)
        if entry is None and name in self._left_out:
            raise RulerError(f"{self.kind} {name!r} is not available: {self._left_out[name]}")
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
        # a plug-in left out (a registrar that failed) may have been the one to offer it
        left = list(self._left_out.values())
        also = f"; left out: {left[0]}" if len(left) == 1 else (
            f"; {len(left)} plug-in entries were left out (see the warnings)" if left else "")
        return (f"unknown {self.kind} {name!r}; choose one of {', '.join(names) or 'none'}"
                f"{hint}{also}")

    def left_out(self) -> dict[str, str]:
        """The plug-in entries left out so far (name -> why), without loading anything."""
        return dict(self._left_out)

    def from_plugin(self, name: str) -> bool:
        """Whether the entry `name` came from an installed plug-in: offered by its entry point,
        or registered by its code (a registrar's families and tasks). What ruler registers
        itself is the rest (`builtin_names`)."""
        entry = self._entries.get(name)
        return entry is not None and (entry.plugin or entry.from_plugin)

    def package_of(self, name: str) -> str | None:
        """The installed distribution the entry `name` came from: the plug-in whose entry point
        offered it or whose code registered it; None for ruler's own."""
        entry = self._entries.get(name)
        return entry.package if entry is not None and self.from_plugin(name) else None

    def builtin_names(self) -> tuple[str, ...]:
        """Every name but those from installed plug-ins (plug-ins loaded first, as `names`
        does): what this package and the code using it registered, whatever is installed."""
        return tuple(name for name in self.names() if not self.from_plugin(name))

    def leave_out(self, name: str, why: str) -> None:
        """Leave out an entry found unusable after it loaded (a plug-in exporter whose options
        make no parser, a variant whose flag a command has already): removed, warned of once,
        and asked for later, one line saying why."""
        with self._table_lock:
            entry = self._entries.pop(name, None)
            origin = f", {entry.origin}" if entry is not None else ""
            message = one_line(f"{self.kind} {name!r}{origin}: {why}")
            self._left_out[name] = message
        plugin_warning(f"{message}; left out")

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
                offered, clashes = self._offered()
                for ep in offered:
                    self._offer(ep)
                for name, message in clashes.items():
                    self._left_out.setdefault(name, message)
                    plugin_warning(message)
            finally:
                self._plugins = "read"

    def _offered(self) -> tuple[list[Any], dict[str, str]]:
        """The group's entry points, and the names two plug-ins offer (name -> message);
        none when the installed packages' metadata cannot be read."""
        if not self.group:
            return [], {}
        try:
            return offered_entry_points(self.group)
        except Exception as e:  # damaged metadata of some installed package
            plugin_warning(f"the installed plug-ins of group {self.group} could not be read "
                           f"({_failure(e)}); none is used")
            return [], {}

    def _offer(self, ep: Any) -> None:
        origin = f"plug-in {_package_of(ep)} (entry point {ep.name} in group {self.group})"
        with self._table_lock:
            known = self._entries.get(ep.name)
            if known is None:
                self._entries[ep.name] = _Entry(ep.value, origin, plugin=True,
                                                package=_package_of(ep))
                return
        if known.target != ep.value:  # the entry there keeps its name; this one is left out
            plugin_warning(f"{origin} offers {self.kind} {ep.name!r}, which is registered "
                           f"already (by {known.origin}): rename it in the plug-in; the "
                           f"plug-in's is not used")

    def _load_plugin_entries(self) -> None:
        """Load every plug-in entry not loaded yet; one that fails is left out, warned of."""
        for name, entry in list(self._entries.items()):
            if entry.plugin and not entry.loaded:
                try:
                    self._load(name)
                except RulerError as e:
                    plugin_warning(f"{e}; left out")

    def _load(self, name: str) -> None:
        with self._load_lock:
            entry = self._entries.get(name)
            if entry is None or entry.loaded or entry.loading:  # loaded, or loading it now
                return
            entry.loading = True
            try:
                with _plugin_code(entry.plugin or entry.from_plugin, entry.package):
                    self._import(name, entry)
            except RulerError as e:
                if entry.plugin:  # left out from now on: asked for again, the same line
                    with self._table_lock:
                        if self._entries.get(name) is entry:
                            del self._entries[name]
                        self._left_out[name] = one_line(str(e))
                raise
            finally:
                entry.loading = False

    @contextlib.contextmanager
    def _own_code(self, name: str, entry: _Entry) -> Iterator[None]:
        """A failure of the entry's code (importing it, calling its registrar) as one
        RulerError line naming it; a built-in's RulerError passes as it is."""
        failed = f"{self.kind} {name!r} ({entry.target}, {entry.origin}) failed to load"
        try:
            yield
        except RulerError as e:
            if not entry.plugin:
                raise
            raise RulerError(f"{failed}: {one_line(str(e))}") from e
        except (Exception, SystemExit) as e:  # a plug-in's sys.exit at import is not obeyed
            raise RulerError(f"{failed}: {_failure(e)}") from e

    def _import(self, name: str, entry: _Entry) -> None:
        assert entry.target is not None, "an entry registered as an object is loaded already"
        with self._own_code(name, entry):
            obj = load_target(entry.target)
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
        if not callable(obj) and not isinstance(obj, ModuleType):  # 42, a misspelt address
            raise RulerError(f"{self.kind} {name!r} ({entry.target}, {entry.origin}) is "
                             f"{type(obj).__name__} {one_line(repr(obj), 80)}, not a "
                             f"{self.kind}")
        if callable(obj) and not isinstance(obj, ModuleType):
            with self._own_code(name, entry):
                obj()  # a registrar: it registers entries itself
        now = self._entries.get(name)
        if now is not None and now.loaded:
            return
        if not entry.plugin:
            raise RulerError(f"{self.kind} {name!r}: {entry.target} is not a {self.kind} "
                             f"and did not register one")
        with self._table_lock:  # a registrar's label, not an entry of its own
            if self._entries.get(name) is entry:
                del self._entries[name]


#: How deep this thread is in a plug-in's code (importing it, calling its registrar): what it
#: registers meanwhile is the plug-in's.
_PLUGIN_CODE = threading.local()


@contextlib.contextmanager
def _plugin_state(depth: int, package: str | None) -> Iterator[None]:
    was = getattr(_PLUGIN_CODE, "depth", 0), getattr(_PLUGIN_CODE, "package", None)
    _PLUGIN_CODE.depth, _PLUGIN_CODE.package = depth, package
    try:
        yield
    finally:
        _PLUGIN_CODE.depth, _PLUGIN_CODE.package = was


def _plugin_code(active: bool, package: str | None = None) -> ContextManager[None]:
    depth, was = getattr(_PLUGIN_CODE, "depth", 0), getattr(_PLUGIN_CODE, "package", None)
    return _plugin_state(depth + active, (package or was) if active else was)


def _in_plugin_code() -> bool:
    return getattr(_PLUGIN_CODE, "depth", 0) > 0


def _current_package() -> str | None:
    """The distribution of the plug-in whose code is running in this thread, if any."""
    return getattr(_PLUGIN_CODE, "package", None) if _in_plugin_code() else None


def builtin_code() -> ContextManager[None]:
    """What this thread registers meanwhile is ruler's own, even if a plug-in's code imported
    the module that registers it (a plug-in's family reusing a built-in benchmark's code)."""
    return _plugin_state(0, None)


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
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and (frame.f_globals.get("__name__") == __name__
                                 or frame.f_code.co_name.startswith("register")):
        frame = frame.f_back
    return f"module {frame.f_globals.get('__name__')}" if frame is not None else "unknown"


_Fact = TypeVar("_Fact")


class LiveView(Mapping[str, _Fact]):
    """A read-only view of a table made from the registries as they hold entries now."""

    def __init__(self, table: Callable[[], dict[str, _Fact]]):
        self._table = table

    def __getitem__(self, key: str) -> _Fact:
        return self._table()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def __repr__(self) -> str:
        return repr(self._table())
