"""JSON from files a user hands over (predictions, a results folder's run.json and scores.json,
lm-eval's results file), read so that what Python's `json` would pass silently is refused.

- A key twice in one object: `json` keeps the last one, so `{"prediction": "a", "prediction":
  "b"}` would be scored as "b" though nothing says which one the model gave.
- NaN and Infinity, which are not JSON, where a file must be plain JSON (`allow_nan=False`).
- Nesting deep enough to exhaust the interpreter's recursion (a RecursionError, not a
  ValueError, would otherwise escape every reader as a traceback).

`parse` raises `json.JSONDecodeError` for text that is not JSON at all (so a line torn by a
crash stays recognisable as such) and `NotPlainJSON` for the cases above; `loads` and
`read_json` turn both into one `RulerError` line naming the file.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ruler.kernel.errors import RulerError


class NotPlainJSON(ValueError):
    """Text that `json` parses but that is refused here (the message says why)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # the rare case: find the key to name it
        key = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
        raise NotPlainJSON(f"the key {key!r} appears twice in one object: which value "
                           f"was meant is unknown (a JSON reader silently keeps one)")
    return out


def _no_constant(name: str) -> Any:
    raise NotPlainJSON(f"{name} is not a JSON value (NaN and Infinity are not JSON)")


def parse(text: str, allow_nan: bool = True) -> Any:
    """`text` as JSON; json.JSONDecodeError when it is not JSON, NotPlainJSON when it repeats
    a key, nests too deeply or (unless `allow_nan`) holds NaN or Infinity."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys,
                          parse_constant=None if allow_nan else _no_constant)
    except RecursionError:
        raise NotPlainJSON("nested too deeply to read (deeper than the interpreter's "
                           "recursion limit)") from None


def describe(error: ValueError) -> str:
    """A parse error in a few words: json's message with its line and column, or ours."""
    if isinstance(error, json.JSONDecodeError):
        return f"not valid JSON ({error.msg}: line {error.lineno} column {error.colno})"
    return str(error)


def loads(text: str, where: str, allow_nan: bool = True) -> Any:
    """`parse`, with any error as one RulerError line starting with `where`."""
    try:
        return parse(text, allow_nan)
    except ValueError as e:
        raise RulerError(f"{where}: {describe(e)}") from None


def read_json(path: str | Path, allow_nan: bool = False) -> Any:
    """The JSON document of file `path`, or one RulerError line naming it (unreadable, not
    UTF-8, not JSON, or refused by `parse`)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise RulerError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise RulerError(f"cannot read {path}: {e.strerror or e}") from None
    return loads(text, str(path), allow_nan)
