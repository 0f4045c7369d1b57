"""Prediction records: written one by one as they complete, read back for resume and scoring.

A prediction is keyed by (tokenizer, task, max_seq_length, index) — the dataset config, the
task, the split's L and the sample number, as in the data's row schema. `ruler eval` appends
JSON lines and flushes each one, so an interrupted run keeps every finished row; a line torn
by a crash is dropped on resume. Any other framework can hand `ruler score` a JSONL or Parquet
file with at least the key columns and `prediction`.
"""

from __future__ import annotations

import json
import math
import os
import reprlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import pyarrow.parquet as pq

from ruler.kernel import strict_json
from ruler.kernel.atomic import naming
from ruler.kernel.errors import RulerError

KEY_COLUMNS = ("tokenizer", "task", "max_seq_length", "index")
REQUIRED_COLUMNS = (*KEY_COLUMNS, "prediction")
STATUSES = ("ok", "skipped", "error")

Key = tuple[str, str, int, int]


@dataclass
class Prediction:
    tokenizer: str
    task: str
    max_seq_length: int
    index: int
    prediction: str | None  # None when the row was skipped or failed
    status: str = "ok"  # ok | skipped (never sent: does not fit) | error (request failed)
    reason: str = ""  # why a row was skipped or failed, for people
    skip_kind: str = ""  # a skipped row's `eval.records.skip_reasons.SkipReason` (what code reads)
    prompt_tokens: int = 0
    output_tokens: int = 0
    finish_reason: str = ""
    data_sha256: str = ""  # content_sha256 of the split file the row came from
    elapsed_s: float = 0.0  # from the start of generation to this row's completion
    # Reasoning mode only (ruler.eval.reasoning): the model's whole output, of which
    # `prediction` is the answer after its reasoning, and the row's reasoning state.
    raw_prediction: str | None = None
    reasoning: str = ""
    backend: str = ""  # the engine that answered (a results folder may hold several)
    model: str = ""  # the model that answered: a predictions file copied away still says
    # Where the engine reports its own count of the prompt (a server's usage.prompt_tokens):
    # that count, and why it differs from the row's rendering (empty: it does not). Such a
    # row ran on another prompt than the build's (`--allow-prompt-mismatch` keeps it, flagged).
    server_prompt_tokens: int | float | None = None
    prompt_mismatch: str = ""
    # A server's (only where there is something to say): why the prompt count was not
    # checked, the model it answered as when not the one asked for, counts it reported in an
    # unexpected form (ruler.eval.backends.openai_replies).
    prompt_unchecked: str = ""
    server_model: str = ""
    server_notes: str = ""
    # A row counting its prompt alone whose prompt + budget exceeded the engine's context ran with
    # this smaller budget (the context left); None: its whole budget.
    output_budget: int | None = None
    # Where a known secret (the API key) was replaced by <redacted> in `prediction`, per
    # secret its fingerprint and offsets (`ruler.eval.records.redaction`): scoring restores the
    # answer as generated. None: nothing was.
    redacted: list[dict[str, Any]] | None = None

    @property
    def key(self) -> Key:
        return (self.tokenizer, self.task, self.max_seq_length, self.index)

    def record(self) -> dict[str, Any]:
        """The JSON record; the reasoning fields only in reasoning mode, the server's prompt
        count only where the engine reports one, the output budget only where clamped, the
        skip kind only for a skipped row."""
        rec = asdict(self)
        if not self.reasoning:
            del rec["raw_prediction"], rec["reasoning"]
        for name in ("server_prompt_tokens", "skip_kind", "prompt_mismatch", "prompt_unchecked",
                     "server_model", "server_notes", "output_budget", "redacted"):
            if rec[name] is None or rec[name] == "":  # not reported, not clamped, not cut
                del rec[name]
        return rec


#: Fields that can be long (a reasoning model's raw output is up to the whole budget).
LONG_FIELDS = ("raw_prediction",)


def key_of(record: dict[str, Any]) -> Key:
    """The record's key; ValueError naming the field when a key column has the wrong type."""
    return (_text(record["tokenizer"], "tokenizer"), _text(record["task"], "task"),
            key_integer(record["max_seq_length"], "max_seq_length"),
            key_integer(record["index"], "index"))


def key_integer(value: Any, name: str) -> int:
    """A key number: an int, or a float that is exactly a whole number (3.0, as in a Parquet
    float column that pandas wrote for an integer column with nulls). Everything else is
    refused rather than converted: int(3.5) or int("3") would key a prediction to a row it
    was not made for, and bools are ints to Python but never an index."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} {value!r} is not an integer")
    if isinstance(value, float):
        if not value.is_integer():  # also NaN and infinity
            raise ValueError(f"{name} {value!r} is not an integer")
        return int(value)
    return value


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} {value!r} is not a string")
    return value


def _check_fields(record: dict[str, Any]) -> None:
    """The fields scoring reads besides the key: a prediction is the model's text or null (no
    answer); anything else (a dict, a number, NaN from a float column) is a damaged or
    foreign file, and stringifying it would score text nobody generated."""
    pred = record["prediction"]
    if pred is not None and not isinstance(pred, str):
        name = type(pred).__name__
        kind = "NaN" if isinstance(pred, float) and math.isnan(pred) else \
            f"{'an' if name[0] in 'aeiou' else 'a'} {name}"
        raise ValueError(f"prediction is {kind} ({str(pred)[:40]}), expected a string (the "
                         f"model's answer) or null (no answer)")
    for name in ("data_sha256", "reason", "input_sha256", "input"):
        value = record.get(name)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{name} {reprlib.repr(value)} is not a string")
    if record.get("length") is not None:  # the row's length, which ties it to the build
        key_integer(record["length"], "length")
    if record.get("redacted") is not None:  # where a secret was cut out of the prediction
        from ruler.eval.records.redaction import shape_problem

        problem = shape_problem(record["redacted"], pred)
        if problem:
            raise ValueError(problem)


def format_key(key: Key) -> str:
    return f"{key[0]}/{key[1]}/{key[2]}#{key[3]}"


class PredictionWriter:
    """Append-only JSONL writer; every record is flushed before the next is accepted."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _drop_torn_tail(self.path)
        self._fh = open(self.path, "a", encoding="utf-8")

    def write(self, pred: Prediction) -> None:
        with naming(self.path):  # a full disk names the file (a torn line is cut on resume)
            self._fh.write(json.dumps(pred.record(), ensure_ascii=False) + "\n")
            self._fh.flush()

    def close(self) -> None:
        with naming(self.path):
            try:
                self._fh.flush()
                os.fsync(self._fh.fileno())
            finally:
                self._fh.close()  # closed even when the flush failed (its error raised again)

    def __enter__(self) -> "PredictionWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line that a crash left without its newline (it is not a whole record)."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    cut = data.rfind(b"\n") + 1
    with open(path, "r+b") as fh:
        fh.truncate(cut)


def _iter_jsonl(path: Path, tolerate_torn_tail: bool,
                drop: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    """Records line by line (a results folder's predictions can be gigabytes)."""
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = strict_json.parse(line)
            except json.JSONDecodeError as e:
                if tolerate_torn_tail and not line.endswith("\n") and not fh.read(1):
                    return  # an interrupted write: resume redoes this row
                raise RulerError(f"{path}:{n}: not a JSON object ({e.msg})") from None
            except strict_json.NotPlainJSON as e:
                raise RulerError(f"{path}:{n}: {e}") from None
            if not isinstance(record, dict):
                raise RulerError(f"{path}:{n}: expected a JSON object per line")
            for name in drop:
                record.pop(name, None)
            yield record


def iter_records(path: str | os.PathLike, tolerate_torn_tail: bool = False,
                 drop: Iterable[str] = ()) -> Iterator[dict[str, Any]]:
    """Records of a JSONL (one object per line) or Parquet predictions file, streamed, without
    the fields named in `drop`."""
    path = Path(path)
    if not path.is_file():
        raise RulerError(f"predictions file {path} does not exist")
    drop = tuple(drop)
    if path.suffix == ".parquet":
        try:
            table = pq.read_table(path)
        except Exception as e:  # pyarrow raises several types for damaged files
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            raise RulerError(f"predictions file {path} is not readable as Parquet: "
                             f"{type(e).__name__}: {first}") from None
        table = table.drop_columns([c for c in drop if c in table.column_names])
        yield from table.to_pylist()
        return
    try:
        yield from _iter_jsonl(path, tolerate_torn_tail, drop)
    except UnicodeDecodeError as e:
        raise RulerError(f"predictions file {path} is not UTF-8 text (JSON lines expected; "
                         f"a Parquet file must end in .parquet): {e.reason}") from None


def read_records(path: str | os.PathLike, tolerate_torn_tail: bool = False,
                 drop: Iterable[str] = ()) -> list[dict]:
    """Records of a JSONL (one object per line) or Parquet predictions file."""
    return list(iter_records(path, tolerate_torn_tail, drop))


def index_records(records: Iterable[dict[str, Any]], source: str,
                  keep: Callable[[dict[str, Any]], Any] | None = None) -> dict[Key, Any]:
    """Check columns and keys; return the records by key (or `keep(record)`, to hold less).

    A key may repeat only when every earlier occurrence is a failed request (status "error")
    or a row skipped as too long (status "skipped") that a resumed run retried; any other
    duplicate is ambiguous and an error.
    """
    out: dict[Key, Any] = {}
    statuses: dict[Key, str] = {}
    duplicates: list[Key] = []
    for n, r in enumerate(records):
        missing = [c for c in REQUIRED_COLUMNS if c not in r]
        if missing:
            raise RulerError(f"{source}: record {n + 1} lacks column(s) {', '.join(missing)}; "
                             f"every record needs {', '.join(REQUIRED_COLUMNS)} "
                             f"(max_seq_length = the split's L, index = the sample number)")
        try:
            key = key_of(r)
        except ValueError as e:
            raise RulerError(f"{source}: record {n + 1}: {e} (the key columns are "
                             f"{', '.join(KEY_COLUMNS)}: two strings and two integers)") from None
        try:
            _check_fields(r)
        except ValueError as e:
            raise RulerError(f"{source}: record {n + 1} ({format_key(key)}): {e}") from None
        status = r.get("status", "ok")
        if status not in STATUSES:
            raise RulerError(f"{source}: record {n + 1} has unknown status {status!r}")
        if statuses.get(key, "error") not in ("error", "skipped"):
            duplicates.append(key)
        statuses[key] = status
        out[key] = r if keep is None else keep(r)
    if duplicates:
        shown = ", ".join(format_key(k) for k in duplicates[:5])
        more = f" and {len(duplicates) - 5} more" if len(duplicates) > 5 else ""
        raise RulerError(f"{source}: {len(duplicates)} duplicate prediction key(s): {shown}{more}")
    return out
