"""Inspect logs (`.eval`, or `.json` written with `--log-format json`) -> prediction records.

The `ruler` Inspect task keeps each row's key, its `length` and its split file's
`content_sha256` in the sample's metadata and the row's `input` as the sample's input, which tie
the sample to this build's row (`ruler.eval.records.build_tie`); the model's completion
(generated after the pre-filled answer prefix) is the sample's output. Reading goes through
`inspect_ai.log.read_eval_log`, imported here only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ruler.eval.records.build_tie import prompt_digest
from ruler.eval.records.predictions import KEY_COLUMNS
from ruler.eval.records.scores_record import cell_of
from ruler.eval.scoring.prediction_readers import PredictionReader
from ruler.eval.scoring.prediction_source import PredictionSource
from ruler.kernel.errors import RulerError


def is_inspect_log(path: Path) -> bool:
    path = Path(path)
    if path.suffix == ".eval":
        return True
    if path.suffix != ".json":
        return False
    with open(path, "rb") as fh:
        head = fh.read(4096)
    # Inspect's JSON logs open with {"version": N, "status": ..., "eval": {...
    return head.lstrip().startswith(b'{"version"') and b'"eval"' in head


def log_files(folder: Path) -> list[Path]:
    return sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.suffix in
                  (".eval", ".json") and is_inspect_log(p))


def _read_log(path: Path):
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise RulerError(f"{path} is an Inspect log: reading it needs inspect-ai "
                         f"(pip install inspect-ai)") from None
    try:
        return read_eval_log(str(path))
    except (OSError, ValueError, json.JSONDecodeError) as e:
        raise RulerError(f"{path}: not a readable Inspect log ({type(e).__name__}: {e})") \
            from None


def read_inspect_log(path: Path) -> PredictionSource:
    """Prediction records of one Inspect log of the `ruler` task, with its model and the
    task's `limit` (first N rows of each split)."""
    log = _read_log(path)
    if not log.samples:
        raise RulerError(f"{path}: the log holds no samples (status {log.status})")
    records = []
    for s in log.samples:
        meta = s.metadata or {}
        if any(c not in meta for c in KEY_COLUMNS):
            raise RulerError(f"{path}: sample {s.id} has no {'/'.join(KEY_COLUMNS)} metadata: "
                             f"not a log of the `ruler` Inspect task (ruler.eval.inspect)")
        if s.epoch != 1:
            raise RulerError(f"{path}: the log holds several epochs; RULER decodes greedily, "
                             f"score a log of one epoch")
        record = {**{c: meta[c] for c in KEY_COLUMNS}, "data_sha256": meta.get("data_sha256", ""),
                  **_row_evidence(s, meta)}
        if s.error is not None:
            records.append({**record, "prediction": None, "status": "error",
                            "reason": s.error.message[:500]})
        else:
            stop = getattr(s.output, "stop_reason", None)
            records.append({**record, "prediction": s.output.completion, "status": "ok",
                            # Inspect's "max_tokens" is the engines' finish_reason "length"
                            "finish_reason": "length" if stop == "max_tokens" else
                            str(stop or "")})
    limit = (log.eval.task_args or {}).get("limit")
    return PredictionSource(records, log.eval.model,
                            int(limit) if isinstance(limit, int) and limit > 0 else None,
                            asked=_asked(log.eval.metadata), settings=_generation(log))


def _generation(log) -> dict:
    """How Inspect generated (eval.metrics.health settings): the run's generate config."""
    config = getattr(getattr(log, "plan", None), "config", None) or \
        getattr(log.eval, "model_generate_config", None)
    out: dict = {"framework": "inspect"}
    max_tokens = getattr(config, "max_tokens", None)
    temperature = getattr(config, "temperature", None)
    if isinstance(max_tokens, int):
        out["max_tokens"] = max_tokens
    if isinstance(temperature, (int, float)):
        out["temperature"] = float(temperature)
    return out


def _row_evidence(sample: Any, meta: dict[str, Any]) -> dict[str, Any]:
    """What the sample holds that ties it to this build's row (`ruler.eval.records.build_tie`): the
    digest of its prompt (the `ruler` task's one user message is the row's `input`) and the
    row's `length` from its metadata."""
    out: dict[str, Any] = {}
    given = sample.input
    users = [given] if isinstance(given, str) else \
        [m.text for m in given or () if getattr(m, "role", None) == "user"]
    if len(users) == 1 and isinstance(users[0], str):
        out["input_sha256"] = prompt_digest(users[0])
    if meta.get("length") is not None:
        out["length"] = meta["length"]  # checked, as every record's, where records are indexed
    return out


def _asked(metadata: dict | None) -> set[tuple[str, str, int]] | None:
    """The cells the run asked for: the `ruler` task records its config and split files
    in the task metadata (`ruler.eval.integrations.inspect_task`)."""
    ruler: Any = (metadata or {}).get("ruler")  # any JSON: its shape is checked by reading it
    try:
        config = ruler["tokenizer_config"]
        return {(config, *cell_of(key)) for key in ruler["files"]}
    except (TypeError, KeyError, ValueError, AttributeError):
        return None  # a log of an older ruler task: the whole config is asked for


def read_inspect_logs(paths: list[Path]) -> PredictionSource:
    """The records of one Inspect log, or of several (a folder of them), merged."""
    return PredictionSource.merge([read_inspect_log(log) for log in paths])


#: `ruler score` reads Inspect logs through this (`eval.scoring.prediction_readers`).
READER = PredictionReader(
    name="inspect", what=("Inspect logs (*.eval)", "Inspect logs"), claims=is_inspect_log,
    files_in=log_files, read=read_inspect_logs)
