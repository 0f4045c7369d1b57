"""Configuration dataclasses as command-line flags and as keyword arguments.

Every `ruler` command is configured by a frozen dataclass (`BuildConfig`, `EvalConfig`,
`ScoreConfig`, ...). A field that the command line sets declares its flag in its metadata with
`option(...)`: the flag's spelling, help, choices, metavar, how its text is read, and the
bounds a value must keep. From that one declaration:

- `add_flags(parser, cls)` adds the fields' argparse arguments (`ruler COMMAND --help` and
  docs/cli.md show them);
- `from_flags(cls, args)` makes the config from the parsed arguments;
- `read_keywords(cls, keywords)` reads Python keyword arguments (`ruler.evaluate(...,
  max_model_len=8192)`) as the flags read the same values: the same conversion, the same
  choices, the same message for a bad value (`FlagValueError`);
- `check_flags(config)`, called by each config's `__post_init__`, refuses a value outside the
  declared choices or bounds, naming the flag, however the config was made (flags, keywords,
  or the dataclass called directly).

What else a config checks (how fields combine, what a value means) is its own `__post_init__`'s,
one `RulerError` line naming the flag.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import MISSING, Field, dataclass, field, fields
from os import PathLike
from typing import Any, Callable, Mapping, Sequence, TypeVar, overload

from ruler.kernel.errors import RulerError

#: The metadata key a field's `Flag` is stored under.
FLAG = "ruler.flag"

# How a flag reads its value:
VALUE = "value"  # --name VALUE
SWITCH = "switch"  # --name: True when given
NEGATED = "negated"  # --no-name: the field is False when given (True otherwise)
REPEATED = "repeated"  # --name VALUE, repeatable: a tuple of the values
POSITIONAL = "positional"  # a positional argument (`nargs` "+" or "*": a tuple)
KINDS = (VALUE, SWITCH, NEGATED, REPEATED, POSITIONAL)


class FlagValueError(RulerError):
    """A value its flag cannot read (not a number, not a choice): argparse's own words for the
    command line, and the same words for a keyword argument."""


@dataclass(frozen=True)
class Flag:
    """How one config field is set from the command line.

    Attributes:
        names: the option strings, the first being the flag's name (`--out`, `--to`); empty
            for a positional argument.
        help: the `--help` text (`%(default)s` and `%(choices)s` are filled in), or a function
            giving it, for text that names what a registry holds when the parser is made.
        kind: VALUE, SWITCH, NEGATED, REPEATED or POSITIONAL.
        type: reads the flag's text at parse time (int, float, Path, a JSON reader); a bad
            value is argparse's usage error (exit 2), and the same words for a keyword.
        parse: reads the parsed value into the field's (`4k,16k` -> (4096, 16384)) after
            parsing; it also takes the value as Python code gives it (an int, a list) and
            raises RulerError on a bad one.
        choices: the values allowed (or a function giving them, e.g. a registry's names).
        metavar: what `--help` calls the value (or a function giving it).
        nargs: a positional's count ("+", "*", "?"; None: one).
        required: the flag must be given.
        minimum, maximum, above: bounds a number must keep (`above`: strictly greater).
        text_default: the default as the flag's own text (`4096`, `0/1`, `all`), where the
            field's default reads worse in `--help`; `parse` reads it.
        hidden: other spellings still accepted and not shown (an older name).
    """

    names: tuple[str, ...]
    help: str | Callable[[], str] = ""
    kind: str = VALUE
    type: Callable[[str], Any] | None = None
    parse: Callable[[Any], Any] | None = None
    choices: Sequence[Any] | Callable[[], Sequence[Any]] | None = None
    metavar: str | Callable[[], str] | None = None
    nargs: str | None = None
    required: bool = False
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    text_default: str | None = None
    hidden: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Flag kind {self.kind!r}: one of {', '.join(KINDS)}")
        if (self.kind == POSITIONAL) != (not self.names):
            raise ValueError("a positional argument has no option strings, a flag has some")

    def dest(self, field_name: str) -> str:
        """The attribute argparse stores the value in: argparse's own rule for a flag (its
        first long name, `-` as `_`), the field's name for a positional."""
        if self.kind == POSITIONAL:
            return field_name
        long = next((n for n in self.names if n.startswith("--")), self.names[0])
        return long.lstrip("-").replace("-", "_")

    def shown(self, field_name: str) -> str:
        """The flag as messages name it: `--out/--to`, or a positional's metavar."""
        return "/".join(self.names) if self.names else (self.metavar_text() or field_name)

    def allowed(self) -> Sequence[Any] | None:
        return self.choices() if callable(self.choices) else self.choices

    def metavar_text(self) -> str | None:
        return self.metavar() if callable(self.metavar) else self.metavar

    def help_text(self) -> str:
        return self.help() if callable(self.help) else self.help

    @property
    def many(self) -> bool:
        """Whether the value is a tuple of values (repeated, or a positional of several)."""
        return self.kind == REPEATED or (self.kind == POSITIONAL and self.nargs in ("+", "*"))


_T = TypeVar("_T")
_C = TypeVar("_C")


# Typed as `dataclasses.field` is: the field's value is its default's type, so mypy checks a
# default against the field's annotation (`port: int = option("--port", default="80")` is an
# error). A field without a default (a required flag) is `Any`, as `field()` is.
@overload
def option(*names: str, default: _T, **flag: Any) -> _T: ...


@overload
def option(*names: str, default_factory: Callable[[], _T], **flag: Any) -> _T: ...


@overload
def option(*names: str, **flag: Any) -> Any: ...


def option(*names: str, default: Any = MISSING, default_factory: Any = MISSING,
           **flag: Any) -> Any:
    """A dataclass field set by the flag `names` (no names: a positional argument); `flag` are
    the other `Flag` attributes. Without a default the field is required."""
    metadata = {FLAG: Flag(tuple(names), **flag)}
    if default_factory is not MISSING:
        return field(default_factory=default_factory, metadata=metadata)
    if default is not MISSING:
        return field(default=default, metadata=metadata)
    return field(metadata=metadata)


def flag_of(f: Field[Any]) -> Flag | None:
    found = f.metadata.get(FLAG)
    return found if isinstance(found, Flag) else None


def flagged_fields(cls: type) -> list[tuple[Field[Any], Flag]]:
    """The fields of the dataclass `cls` that a flag sets, in declaration order."""
    return [(f, flag) for f in fields(cls) if (flag := flag_of(f)) is not None]


def field_default(f: Field[Any]) -> Any:
    """The field's default (made, for a default factory); None for a required field."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return None


# --- the command line ---------------------------------------------------------------------------

def add_flag(container: argparse._ActionsContainer, field_name: str, flag: Flag,
             default: Any) -> None:
    """Add one flag (with `default` when not given) to a parser or argument group. A flag that
    another class declared already in this parser (`--dtype`, of vllm and hf) is shared."""
    if any(name in container._option_string_actions for name in flag.names):
        return
    kwargs: dict[str, Any] = {"help": flag.help_text() or None}
    if flag.metavar is not None:
        kwargs["metavar"] = flag.metavar_text()
    if flag.kind in (SWITCH, NEGATED):
        container.add_argument(*flag.names, action="store_true",
                               default=False if flag.kind == NEGATED else default, **kwargs)
        return
    if flag.type is not None:
        kwargs["type"] = flag.type
    if flag.choices is not None:
        kwargs["choices"] = flag.allowed()
    if flag.kind == POSITIONAL:
        if flag.nargs is not None:
            kwargs["nargs"] = flag.nargs
        if flag.nargs in ("?", "*"):
            kwargs["default"] = default
        container.add_argument(field_name, **kwargs)
        return
    dest = flag.dest(field_name)
    if flag.kind == REPEATED:
        kwargs.update(action="append", default=[])
    else:
        kwargs["default"] = flag.text_default if flag.text_default is not None else default
    container.add_argument(*flag.names, required=flag.required, dest=dest, **kwargs)
    if flag.hidden:
        container.add_argument(*flag.hidden, dest=dest, default=argparse.SUPPRESS,
                               **{k: v for k, v in kwargs.items() if k not in ("help", "default")},
                               help=argparse.SUPPRESS)


def add_flags(container: argparse._ActionsContainer, cls: type,
              names: Sequence[str] | None = None) -> None:
    """Add the flags of the dataclass `cls`'s fields (only those of `names`, when given), in
    the order the fields are declared."""
    for f, flag in flagged_fields(cls):
        if names is None or f.name in names:
            add_flag(container, f.name, flag, field_default(f))


def parsed_value(flag: Flag, raw: Any) -> Any:
    """A parsed argument as the field's value."""
    if flag.kind == NEGATED:
        return not raw
    if flag.many:
        raw = tuple(raw)
    return flag.parse(raw) if flag.parse is not None else raw


def flag_values(cls: type, args: argparse.Namespace) -> dict[str, Any]:
    """The values `args` gives the fields of `cls` that flags set. A flag left at None was not
    given: its field keeps the dataclass default."""
    values: dict[str, Any] = {}
    for f, flag in flagged_fields(cls):
        raw = getattr(args, flag.dest(f.name), None)
        if raw is not None:
            values[f.name] = parsed_value(flag, raw)
    return values


def from_flags(cls: type[_C], args: argparse.Namespace, **more: Any) -> _C:
    """The config `cls` from parsed arguments (`more`: fields no flag sets)."""
    return cls(**flag_values(cls, args), **more)


def add_command(sub: argparse._SubParsersAction, name: str, cls: type[_C],
                run: Callable[[_C], int], **parser_args: Any) -> argparse.ArgumentParser:
    """Sub-command `name`: its flags are `cls`'s fields, its handler `run` of their config."""
    p = sub.add_parser(name, **parser_args)
    add_flags(p, cls)
    p.set_defaults(func=lambda args: run(from_flags(cls, args)))
    return p


# --- keyword arguments (ruler.api) --------------------------------------------------------------

def keyword_names(cls: type, *, field_names: bool = True) -> dict[str, tuple[Field[Any], Flag,
                                                                         bool]]:
    """Every keyword that sets a field of `cls`: the flag as a keyword (`max_model_len` for
    `--max-model-len`, `no_progress`), its hidden spellings, and with `field_names` the field's
    own name (`progress`, `sources_dir`). Each maps to (field, flag, whether the keyword says
    the opposite of the field: `no_progress=True` is `progress=False`)."""
    names: dict[str, tuple[Field[Any], Flag, bool]] = {}
    for f, flag in flagged_fields(cls):
        spellings = [flag.dest(f.name)] + [h.lstrip("-").replace("-", "_") for h in flag.hidden]
        for spelling in spellings:
            names[spelling] = (f, flag, flag.kind == NEGATED)
        if field_names:
            names[f.name] = (f, flag, False)
    return names


def read_keywords(cls: type, keywords: Mapping[str, Any], *,
                  field_names: bool = True) -> dict[str, Any]:
    """The field values that `keywords` give the config `cls` (keywords it has no field for
    are left to the caller), each read as its flag reads it; None means the default."""
    values: dict[str, Any] = {}
    for name, (f, flag, opposite) in keyword_names(cls, field_names=field_names).items():
        value = keywords.get(name)
        if value is not None:
            values[f.name] = keyword_value(flag, f.name, value, opposite)
    return values


def keyword_value(flag: Flag, field_name: str, value: Any, opposite: bool = False) -> Any:
    """A keyword argument's value for the field `field_name`, read as its flag reads the same
    value written on the command line."""
    shown = flag.shown(field_name)
    if flag.kind in (SWITCH, NEGATED):
        if not isinstance(value, bool):
            raise FlagValueError(f"argument {shown}: takes True or False, got {value!r}")
        return not value if opposite else value
    if flag.parse is not None and flag.type is None and (
            not flag.many or isinstance(value, Mapping)):
        return flag.parse(value)  # it reads the text, or the value as Python gives it
    if flag.many:
        items = [value] if isinstance(value, (str, PathLike)) else list(value)
        read = tuple(_read_one(flag, shown, item) for item in items)
        return flag.parse(read) if flag.parse is not None else read
    read = _read_one(flag, shown, value)
    return flag.parse(read) if flag.parse is not None else read


def _read_one(flag: Flag, shown: str, value: Any) -> Any:
    """One value as argparse reads its text: the flag's `type`, then its choices; the messages
    are argparse's."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(dict(value)) if isinstance(value, Mapping) else str(value)
        except (TypeError, ValueError) as e:
            raise FlagValueError(f"argument {shown}: {e}") from None
    read: Any = text
    if flag.type is not None:
        try:
            read = flag.type(text)
        except argparse.ArgumentTypeError as e:
            raise FlagValueError(f"argument {shown}: {e}") from None
        except (TypeError, ValueError):
            name = getattr(flag.type, "__name__", repr(flag.type))
            raise FlagValueError(f"argument {shown}: invalid {name} value: {text!r}") from None
    allowed = flag.allowed()
    if allowed is not None and read not in allowed:
        raise FlagValueError(f"argument {shown}: invalid choice: {read!r} (choose from "
                             f"{', '.join(map(repr, allowed))})")
    return read


# --- checks every config makes ------------------------------------------------------------------

def check_flags(config: Any) -> None:
    """Refuse, in one line naming the flag, a field value outside its flag's choices or
    bounds. Configs call it first thing in `__post_init__`."""
    for f, flag in flagged_fields(type(config)):
        value = getattr(config, f.name)
        shown = flag.names[0] if flag.names else (flag.metavar_text() or f.name)
        for item in (value if flag.many and value is not None else (value,)):
            if item is not None:
                _check_one(flag, shown, item)


def _check_one(flag: Flag, shown: str, value: Any) -> None:
    allowed = flag.allowed()
    if allowed is not None and value not in allowed:
        raise RulerError(f"{shown} must be one of {', '.join(map(str, allowed))}, got {value!r}")
    bounds = ((flag.minimum, ">=", lambda v, b: v >= b), (flag.above, ">", lambda v, b: v > b),
              (flag.maximum, "<=", lambda v, b: v <= b))
    for bound, sign, holds in bounds:
        if bound is None:
            continue
        try:
            ok = not isinstance(value, bool) and holds(value, bound)  # NaN holds no bound
        except TypeError:
            ok = False
        if not ok:
            got = (f"{value:g}" if isinstance(value, float)
                   else str(value) if isinstance(value, int) else repr(value))
            raise RulerError(f"{shown} must be {sign} {_number(bound)}, got {got}")


def _number(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"
