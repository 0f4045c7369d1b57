"""What `ruler score --predictions PATH` reads: PATH's format decides the reader.

- a folder: lm-eval output (its `samples_*.jsonl`, at any depth) or Inspect logs (`*.eval`);
- an lm-eval `samples_<task>_<date>.jsonl` file;
- an Inspect log (`.eval`, or a `.json` log);
- NeMo-Skills output (`output.jsonl` / `output-rs<seed>.jsonl` of `ns eval`, or a folder of
  them): keyed by prompt text against the dataset (`integrations.nemo_skills`);
- anything else: `ruler eval`'s own JSONL/Parquet records (`ruler.eval.predictions`); a
  results folder's `predictions.jsonl` brings its run's model, mode and `--limit` (run.json),
  and records that all name one model (`ruler eval` writes it into each) bring that model.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from ruler.builder.errors import RulerError
from ruler.builder.hashing import file_sha256
from ruler.eval.integrations.inspect_logs import is_inspect_log, log_files, read_inspect_log
from ruler.eval.integrations.lm_eval_samples import is_samples_file, read_samples, samples_files
from ruler.eval.integrations.nemo_skills import (
    is_nemo_skills_output,
    nemo_skills_files,
    read_nemo_skills,
)
from ruler.eval.integrations.prediction_source import PredictionSource
from ruler.eval.predictions import LONG_FIELDS, read_records
from ruler.eval.report_health import run_settings
from ruler.eval.results_folder import PREDICTIONS_NAME, RUN_NAME
from ruler.eval.results_schema import read_run
from ruler.eval.scores_record import PredictionsRecord


def read_predictions(path: str | os.PathLike[str]) -> PredictionSource:
    """Prediction records (key columns, prediction, status...) of any supported source."""
    path = Path(path)
    source = _read(path)
    source.origin = path
    source.files = source.files or [path]
    return source


def _read(path: Path) -> PredictionSource:
    if path.is_dir():
        samples, logs, outputs = samples_files(path), log_files(path), nemo_skills_files(path)
        if sum(map(bool, (samples, logs, outputs))) > 1:
            raise RulerError(f"{path} holds the output of several frameworks (lm-eval samples, "
                             f"Inspect logs, NeMo-Skills output.jsonl): pass one file or a "
                             f"folder of one framework's output")
        if samples:
            source = read_samples(samples)
        elif logs:
            source = PredictionSource.merge([read_inspect_log(log) for log in logs])
        elif outputs:
            source = read_nemo_skills(outputs)
        else:
            raise RulerError(f"{path} is a folder without lm-eval samples (samples_*.jsonl, "
                             f"from --log_samples), Inspect logs (*.eval) or NeMo-Skills "
                             f"output (output.jsonl)")
        source.files = samples or logs or outputs
        return source
    if not path.is_file():
        raise RulerError(f"predictions file {path} does not exist")
    if is_samples_file(path):
        return read_samples([path])
    if is_inspect_log(path):
        return read_inspect_log(path)
    if is_nemo_skills_output(path):
        return read_nemo_skills([path])
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
                            asked={(run.config, *_cell(key)) for key in run.dataset.files},
                            serving=run.serving, settings=run_settings(run))


def _named_model(records: list[dict[str, Any]]) -> str | None:
    """The model every record names (`ruler eval` writes it into each), else None."""
    names = {r.get("model") for r in records}
    name = names.pop() if len(names) == 1 else None
    return name if isinstance(name, str) and name else None


def _cell(key: str) -> tuple[str, int]:
    """"task/L" -> (task, L)."""
    task, L = key.rsplit("/", 1)
    return task, int(L)


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
