"""What `ruler score --predictions PATH` reads: PATH's format decides the reader.

A reader (`PredictionReader`) knows one framework's output; readers are entries of
`PREDICTION_READERS`, imported on first use, so scoring depends on no integration.
- a folder: the files of the one reader that finds any (lm-eval's `samples_*.jsonl` at any
  depth, Inspect's `*.eval`, NeMo-Skills' output: JSON-lines files whose records hold a
  `generation` and the prompt, as `output.jsonl` / `output-rs<seed>.jsonl` do);
- a file: the first reader that claims it;
- anything else: `ruler eval`'s own JSONL/Parquet records (`ruler.eval.records.predictions`); a
  results folder's `predictions.jsonl` brings its run's model, mode and `--limit` (run.json),
  and records that all name one model (`ruler eval` writes it into each) bring that model.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ruler.eval.metrics.health import run_settings
from ruler.eval.records.predictions import LONG_FIELDS, read_records
from ruler.eval.records.results_folder import PREDICTIONS_NAME, RUN_NAME
from ruler.eval.records.results_schema import read_run
from ruler.eval.records.scores_record import PredictionsRecord, cell_of
from ruler.eval.scoring.prediction_source import PredictionSource
from ruler.kernel.errors import RulerError
from ruler.kernel.hashing import file_sha256
from ruler.kernel.registry import Registry

if TYPE_CHECKING:
    from ruler.eval.records.dataset import Dataset


@dataclass(frozen=True)
class PredictionReader:
    """One framework's prediction files.

    Attributes:
        name: the reader's name (the registry's key).
        what: its files in a message, long ("lm-eval samples (samples_*.jsonl, from
            --log_samples)") and short ("lm-eval samples").
        claims: `claims(path)`: whether a file is one of its own.
        files_in: `files_in(folder)`: its files under a folder, sorted.
        read: `read(paths)`: the records of its files (`PredictionSource`).
        key_rows: `key_rows(source, ds, config, tasks, lengths)`: give records read without
            their key (`source.by_prompt`) the key of the dataset row each answers, in place;
            None for a reader whose records carry their key.
    """

    name: str
    what: tuple[str, str]
    claims: Callable[[Path], bool]
    files_in: Callable[[Path], list[Path]]
    read: Callable[[list[Path]], PredictionSource]
    key_rows: Callable[..., None] | None = None


#: Every reader, in the order a file is offered to them: ruler's, then a plug-in's.
PREDICTION_READERS: Registry[PredictionReader] = Registry(
    "prediction reader", "ruler.prediction_readers",
    accepts=lambda obj: isinstance(obj, PredictionReader), name_of=lambda r: r.name)
for _name, _target in (("lm-eval", "ruler.eval.integrations.lm_eval_samples:READER"),
                       ("inspect", "ruler.eval.integrations.inspect_logs:READER"),
                       ("nemo-skills", "ruler.eval.integrations.nemo_skills:READER")):
    PREDICTION_READERS.register_lazy(_name, _target)


def read_predictions(path: str | os.PathLike[str]) -> PredictionSource:
    """Prediction records (key columns, prediction, status...) of any supported source."""
    path = Path(path)
    source = _read(path)
    source.origin = path
    source.files = source.files or [path]
    return source


def key_against(source: PredictionSource, ds: "Dataset", config: str | None,
                tasks: Sequence[str] | None = None,
                lengths: Sequence[int] | None = None) -> None:
    """Key records read without their key (NeMo-Skills output) against `ds`'s rows, through
    the reader that read them; records with their key are left as they are."""
    if source.by_prompt:
        reader = PREDICTION_READERS[source.reader or ""]
        if reader.key_rows is None:
            raise RulerError(f"reader {reader.name!r} returned records without their key and "
                             f"cannot key them against the dataset")
        reader.key_rows(source, ds, config, tasks, lengths)


def _listing(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} or {parts[-1]}"


def _read(path: Path) -> PredictionSource:
    readers = list(PREDICTION_READERS.values())
    if path.is_dir():
        found = [(r, files) for r in readers if (files := r.files_in(path))]
        if len(found) > 1:
            raise RulerError(f"{path} holds the output of several frameworks "
                             f"({', '.join(r.what[1] for r in readers)}): pass one file or a "
                             f"folder of one framework's output")
        if not found:
            raise RulerError(f"{path} is a folder without "
                             f"{_listing([r.what[0] for r in readers])}")
        (reader, files), = found
        source = reader.read(files)
        source.files, source.reader = files, reader.name
        return source
    if not path.is_file():
        raise RulerError(f"predictions file {path} does not exist")
    for reader in readers:
        if reader.claims(path):
            source = reader.read([path])
            source.reader = reader.name
            return source
    run = path.parent / RUN_NAME
    if path.name == PREDICTIONS_NAME and run.is_file():
        return _results_folder(path, run)
    records = read_records(path)
    return PredictionSource(records, _named_model(records))


def _results_folder(path: Path, run_path: Path) -> PredictionSource:
    """A `ruler eval` results folder's predictions: the run (run.json) says which model made
    them, in which prompt mode, and whether only the first N rows per file were asked for. A
    last line torn by a run still writing (or killed) is not a record yet."""
    try:
        run = read_run(run_path)
    except RulerError as e:
        raise RulerError(f"{e} (the run record beside {path.name}; move {path.name} "
                         f"elsewhere to score it without it)") from None
    return PredictionSource(read_records(path, tolerate_torn_tail=True, drop=LONG_FIELDS),
                            run.model, run.limit, mode=run.mode,
                            asked={(run.config, *cell_of(key)) for key in run.dataset.files},
                            serving=run.serving, settings=run_settings(run))


def _named_model(records: list[dict[str, Any]]) -> str | None:
    """The model every record names (`ruler eval` writes it into each), else None."""
    names = {r.get("model") for r in records}
    name = names.pop() if len(names) == 1 else None
    return name if isinstance(name, str) and name else None


def fingerprint(source: PredictionSource) -> PredictionsRecord:
    """What was scored, recorded in scores.json: the path given (absolute) and the sha256 of
    its bytes; for a folder (lm-eval samples, Inspect logs), the sha256 of the list of the
    files read with their sha256s, so any changed, added or removed file changes it."""
    origin = Path(source.origin or source.files[0]).resolve()
    if origin.is_file():
        return PredictionsRecord(path=str(origin), sha256=file_sha256(origin))
    listing = "".join(f"{Path(f).resolve().relative_to(origin)}\t{file_sha256(f)}\n"
                      for f in sorted(source.files))
    return PredictionsRecord(path=str(origin),
                             sha256=hashlib.sha256(listing.encode()).hexdigest())
