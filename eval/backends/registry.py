"""The table of generation backends: `ruler eval --backend NAME` looks its name up here.

A backend is one `BackendSpec`: its name, the module its inference stack needs (checked before
any slow work, with the one line that says how to install it), a factory from its options to a
`Backend`, and its options type, whose fields declare the backend's own flags. `ruler eval`'s
`--backend` choices, its help and the flags each backend adds all come from this table
(`BACKENDS`; how a backend joins it: `ruler.eval.backends`).
"""

from __future__ import annotations

import argparse
import importlib.util
from dataclasses import dataclass, fields
from typing import Callable

from ruler.eval.backends.base import Backend, BackendOptions
from ruler.kernel.errors import RulerError
from ruler.kernel.flags import add_flags, flag_values
from ruler.kernel.registry import Registry

#: What `ruler eval` uses when `--backend` is not given.
DEFAULT_BACKEND = "vllm"


@dataclass(frozen=True)
class BackendSpec:
    """One backend. `factory(options)` may be slow (it loads the model) and is where the
    inference stack is imported: importing the backend's module must stay cheap, since every
    `ruler` command imports them all to build its parser."""

    name: str
    factory: Callable[[BackendOptions], Backend]
    summary: str = ""  # one line for `ruler eval --help`
    requirement: str | None = None  # the module the backend imports (None: nothing extra)
    install_hint: str = ""  # the one line said when `requirement` is not installed
    # Its options: BackendOptions, or a frozen subclass whose own fields declare the flags
    # `ruler eval` shows in a group `--backend NAME` (and `ruler.evaluate` takes as keywords),
    # and whose `__post_init__` checks them.
    options_type: type[BackendOptions] = BackendOptions
    # False for a backend without a model (fake): there is no model tokenizer to default to,
    # so prompts are rendered with the dataset config's own unless --model-tokenizer says.
    runs_a_model: bool = True
    # True where --model is the name a server knows the model by (openai), not weights to
    # load: prompts are then rendered with --model-tokenizer, which the run must be given
    # (unless --model is a tokenizer folder).
    serves_model_by_name: bool = False

    def own_flags(self) -> tuple[str, ...]:
        """The fields of its options type that are its own flags (not BackendOptions')."""
        shared = {f.name for f in fields(BackendOptions)}
        return tuple(f.name for f in fields(self.options_type) if f.name not in shared)

    def options_from(self, args: argparse.Namespace, model: str) -> BackendOptions:
        """Its options from `ruler eval`'s parsed flags (checked by the options type)."""
        return self.options_type(model=model, **flag_values(self.options_type, args))


#: Every backend by name: ruler's (imported on first use), then those registered, then the
#: plug-ins' (entry point group `ruler.backends`).
BACKENDS: Registry[BackendSpec] = Registry(
    "backend", "ruler.backends", accepts=lambda obj: isinstance(obj, BackendSpec),
    name_of=lambda spec: spec.name)
for _name in ("vllm", "openai", "hf", "fake"):  # the order `--backend` lists them
    BACKENDS.register_lazy(_name, f"ruler.eval.backends.{_name}:SPEC")


def register_backend(spec: BackendSpec) -> BackendSpec:
    """Add a backend to the table. A name is registered once: replacing a backend silently
    would change what a command means depending on what happened to be imported."""
    return BACKENDS.register(spec)


def unregister_backend(name: str) -> None:
    """Remove a backend (a plug-in's tests clean up after themselves)."""
    BACKENDS.unregister(name)


def backend_names() -> tuple[str, ...]:
    """The registered backends, in the order they were registered (a plug-in's whose options
    make no flags left out)."""
    for name in BACKENDS.names():
        if BACKENDS.from_plugin(name):
            _usable(name, BACKENDS[name])
    return BACKENDS.names()


def get_backend(name: str) -> BackendSpec:
    spec = BACKENDS[name]
    if BACKENDS.from_plugin(name) and not _usable(name, spec):
        return BACKENDS[name]  # left out: one line saying why
    return spec


#: The plug-in backends found usable in this process.
_USABLE: set[str] = set()


def _usable(name: str, spec: BackendSpec) -> bool:
    """Whether a plug-in backend's options make flags (a frozen BackendOptions subclass whose
    fields declare them): one that does not is left out with a warning, and `ruler eval` works
    on without it."""
    if name in _USABLE:
        return True
    try:
        add_flags(argparse.ArgumentParser(add_help=False), spec.options_type, spec.own_flags())
    except Exception as e:  # a plug-in's own code
        BACKENDS.leave_out(name, f"its options make no flags ({type(e).__name__}: {e})")
        return False
    _USABLE.add(name)
    return True


def require_backend(name: str) -> None:
    """Fail in one line, before any work, when a backend's inference stack is not installed."""
    spec = get_backend(name)
    if spec.requirement is None:
        return
    try:
        found = importlib.util.find_spec(spec.requirement) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, a broken install
        found = False
    if not found:
        raise RulerError(spec.install_hint or f"--backend {name} needs {spec.requirement}, "
                                              f"which is not installed")


def make_backend(name: str, opts: BackendOptions) -> Backend:
    require_backend(name)
    return get_backend(name).factory(opts)


def backend_help() -> str:
    """`--backend`'s help: the registered backends, each with its summary."""
    names = backend_names()
    return ("inference engine, one of %(choices)s (default: %(default)s). "
            + "; ".join(f"{s.name}: {s.summary}".replace("%", "%%")
                        for s in map(get_backend, names) if s.summary))


def add_backend_flags(parser: argparse.ArgumentParser) -> None:
    """Each backend's own flags, in a group per backend (a flag two backends declare alike,
    `--dtype`, is in the first one's)."""
    for name in backend_names():
        spec = get_backend(name)
        add_flags(parser.add_argument_group(f"--backend {name}"), spec.options_type,
                  spec.own_flags())
