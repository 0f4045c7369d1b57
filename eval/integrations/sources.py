"""What `ruler score --predictions PATH` reads: PATH's format decides the reader.

- a folder: lm-eval output (its `samples_*.jsonl`, at any depth) or Inspect logs (`*.eval`);
- an lm-eval `samples_<task>_<date>.jsonl` file;
- an Inspect log (`.eval`, or a `.json` log);
- anything else: `ruler eval`'s own JSONL/Parquet records (`ruler.eval.predictions`).
"""

from __future__ import annotations

import os
from pathlib import Path
from ruler.builder.errors import RulerError
from ruler.eval.integrations.inspect_logs import is_inspect_log, log_files, read_inspect_log
from ruler.eval.integrations.lm_eval_samples import is_samples_file, read_samples, samples_files
from ruler.eval.integrations.prediction_source import PredictionSource
from ruler.eval.predictions import read_records


def read_predictions(path: str | os.PathLike) -> PredictionSource:
    """Prediction records (key columns, prediction, status...) of any supported source."""
    path = Path(path)
    if path.is_dir():
        samples, logs = samples_files(path), log_files(path)
        if samples and logs:
            raise RulerError(f"{path} holds both lm-eval samples and Inspect logs: pass one "
                             f"file or a folder of one framework's output")
        if samples:
            return read_samples(samples)
        if logs:
            return PredictionSource.merge([read_inspect_log(log) for log in logs])
        raise RulerError(f"{path} is a folder without lm-eval samples (samples_*.jsonl, from "
                         f"--log_samples) or Inspect logs (*.eval)")
    if not path.is_file():
        raise RulerError(f"predictions file {path} does not exist")
    if is_samples_file(path):
        return read_samples([path])
    if is_inspect_log(path):
        return read_inspect_log(path)
    return PredictionSource(read_records(path))
