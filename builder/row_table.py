"""Rows as an Arrow table, built from buffers: the table `pa.Table.from_pylist` makes, without
pyarrow's pandas shim.

Every way pyarrow converts Python values (`pa.array` of a list or of a NumPy array,
`Table.from_pylist`) first asks whether the value is a pandas object, which imports pandas: a
third of a second of every build process's start-up (each worker, each one-file build),
for a library the builder never uses. Arrays made from their buffers ask nothing. Only the
schema's own kinds are built here (non-null strings, 64-bit integers and floats, and lists of
them); a table this cannot build (a value of another type, text over 2 GiB in one column) is
left to `Table.from_pylist`, whose result is the same.
"""

from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

#: The largest offset of Arrow's `string` and `list` types (int32).
_MAX_OFFSET = 2**31 - 1
_NUMERIC = {pa.int64(): np.int64, pa.float64(): np.float64}
#: The Python types each numeric column takes as they are (bool is an int to Python, not here)
_TAKES = {pa.int64(): (int,), pa.float64(): (int, float)}


class _Unsupported(Exception):
    """A column this module does not build (Table.from_pylist does)."""


def rows_table(rows: Sequence[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """The rows as a table of `schema` (each row a dict holding every field)."""
    try:
        arrays = [_array([row[field.name] for row in rows], field.type) for field in schema]
    except (_Unsupported, TypeError, OverflowError, ValueError):
        return pa.Table.from_pylist(list(rows), schema=schema)
    return pa.Table.from_arrays(arrays, schema=schema)


def _array(values: list, kind: pa.DataType) -> pa.Array:
    if kind == pa.string():
        return _strings(values)
    if kind in _NUMERIC:
        return _numbers(values, kind)
    if pa.types.is_list(kind):
        return _lists(values, kind)
    raise _Unsupported(kind)


def _offsets(lengths: list[int]) -> pa.Buffer:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > _MAX_OFFSET:
        raise _Unsupported("offsets beyond int32")
    return pa.py_buffer(offsets.astype(np.int32))


def _strings(values: list) -> pa.Array:
    if not all(type(v) is str for v in values):
        raise _Unsupported("a value that is not a str")
    encoded = [v.encode("utf-8") for v in values]
    return pa.Array.from_buffers(pa.string(), len(values),
                                 [None, _offsets(list(map(len, encoded))),
                                  pa.py_buffer(b"".join(encoded))])


def _numbers(values: list, kind: pa.DataType) -> pa.Array:
    takes = _TAKES[kind]
    if not all(type(v) in takes for v in values):
        raise _Unsupported("a value of another type")
    data = np.array(values, dtype=_NUMERIC[kind])
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(data)])


def _lists(values: list, kind: pa.ListType) -> pa.Array:
    if not all(type(v) in (list, tuple) for v in values):
        raise _Unsupported("a value that is not a list")
    child = _array(list(itertools.chain.from_iterable(values)), kind.value_type)
    return pa.Array.from_buffers(kind, len(values), [None, _offsets(list(map(len, values)))],
                                 children=[child])
