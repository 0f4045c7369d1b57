"""Dataclasses that mirror a JSON object of a file ruler writes and reads back.

The manifest (`builder.manifest`), a results folder's run.json and scores.json
(`eval.records.run_record`, `eval.records.scores_record`) are read and written only through such
records, so code past the reader holds typed fields, never a dict. Each record keeps what it does
not know, and what it did not find:

- keys no field names (a newer writer's) stay in `extra` and are written back;
- a field the JSON lacked (an older writer's file) holds its default, and `to_json` leaves
  it out again while it still holds that default (`absent`), so a file read and written
  back is the same JSON whatever version wrote it;
- fields named in `OPTIONAL` are left out when None (formats where a null never stands for
  a value: the manifest's records); every other field is written, None as null.

Nested records are decoded by the functions in `DECODE` (field -> function of the JSON
value) and encoded by `to_json` wherever they sit (a field, a list, a dict's values). A
record's JSON has been checked for shape before `from_json` (`builder.manifest_schema`,
`eval.records.results_schema`): decoding trusts it.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
from typing import Any, Callable, ClassVar, Mapping, TypeVar

R = TypeVar("R", bound="JsonRecord")
#: What a record decodes one field's JSON value with.
Decode = Callable[[Any], Any]

#: Fields of every record that are no keys of its JSON.
_OWN = frozenset({"extra", "absent"})


def extra_field() -> Any:
    """A record's `extra` field: the JSON keys no field names."""
    return dataclasses.field(default_factory=dict, kw_only=True)


def absent_field() -> Any:
    """A record's `absent` field: the fields (and `DERIVED` keys) its JSON lacked."""
    return dataclasses.field(default=frozenset(), kw_only=True, compare=False, repr=False)


class JsonRecord:
    """Base of the records: each is a dataclass with the fields `extra` and `absent`, which
    `Record` and `FrozenRecord` give their subclasses."""

    #: Fields left out of the JSON when None (see the module docstring).
    OPTIONAL: ClassVar[frozenset[str]] = frozenset()
    #: field -> how its JSON value becomes the field's value (nested records).
    DECODE: ClassVar[Mapping[str, Decode]] = {}
    #: Keys `to_json` writes that are no fields (values derived from the fields: a
    #: subclass's `derived_json`); read back, they are neither fields nor `extra`.
    DERIVED: ClassVar[tuple[str, ...]] = ()

    extra: dict[str, Any]
    absent: frozenset[str]

    @classmethod
    def json_fields(cls) -> list[dataclasses.Field[Any]]:
        # a subclass is a dataclass (the class docstring): fields() of it, not of this base
        return [f for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                if f.name not in _OWN]

    @classmethod
    def from_json(cls: type[R], data: Mapping[str, Any]) -> R:
        names = [f.name for f in cls.json_fields()]
        values = {name: (cls.DECODE[name](data[name]) if name in cls.DECODE
                         and data[name] is not None else copy.deepcopy(data[name]))
                  for name in names if name in data}
        known = {*names, *cls.DERIVED}
        return cls(**values,  # type: ignore[call-arg]
                   extra={k: copy.deepcopy(v) for k, v in data.items() if k not in known},
                   absent=frozenset(n for n in (*names, *cls.DERIVED) if n not in data))

    def to_json(self) -> dict[str, Any]:
        own: dict[str, Any] = {}
        for f in self.json_fields():
            value = getattr(self, f.name)
            if value is None and f.name in self.OPTIONAL:
                continue
            if f.name in self.absent and value == _default(f):
                continue
            own[f.name] = encode(value)
        derived = {k: encode(v) for k, v in self.derived_json().items()
                   if k not in self.absent}
        return {**copy.deepcopy(self.extra), **own, **derived}

    def derived_json(self) -> dict[str, Any]:
        """The `DERIVED` keys' values (none by default)."""
        return {}


@dataclasses.dataclass(kw_only=True)
class Record(JsonRecord):
    """A record whose fields may change once it is made."""

    extra: dict[str, Any] = extra_field()
    absent: frozenset[str] = absent_field()


@dataclasses.dataclass(frozen=True, kw_only=True)
class FrozenRecord(JsonRecord):
    """A record whose fields never change once it is made."""

    extra: dict[str, Any] = extra_field()
    absent: frozenset[str] = absent_field()


def fields_json(record: JsonRecord) -> dict[str, Any]:
    """Every field of `record` as JSON data, those its file lacked at their defaults, without
    the keys it does not know: the record as this version sees it."""
    return {f.name: encode(getattr(record, f.name)) for f in record.json_fields()}


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def encode(value: Any) -> Any:
    """`value` as JSON data: records by their `to_json`, enums by their value, tuples as
    lists; containers copied."""
    if isinstance(value, JsonRecord):
        return value.to_json()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def record_map(decode: Callable[[Any], R]) -> Callable[[Any], dict[str, R]]:
    """A `DECODE` function for a JSON object of records (id -> record)."""
    return lambda data: {k: decode(v) for k, v in data.items()}


def record_list(decode: Callable[[Any], R]) -> Callable[[Any], list[R]]:
    """A `DECODE` function for a JSON list of records."""
    return lambda data: [decode(v) for v in data]
