"""lm-evaluation-harness output -> prediction records for `ruler score`.

lm-eval (`--log_samples --output_path DIR`) writes `DIR/<model>/samples_<task>_<date>.jsonl`, a
line per document with the logged `doc` (for an exported task: a row of the dataset, with its
key columns) and `filtered_resps` (the completion generated after the answer prefix), and
`results_<date>.json`, whose `configs` keep each exported task's metadata. The split file's
`content_sha256` recorded there becomes the records' `data_sha256`, and the logged doc's
`input` (its digest) and `length` go with each record, so `ruler score` refuses samples made
from another revision of the dataset, with or without the results file beside them.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from ruler.eval.records.build_tie import prompt_digest
from ruler.eval.records.predictions import KEY_COLUMNS, key_of, read_records
from ruler.eval.scoring.prediction_readers import PredictionReader
from ruler.eval.scoring.prediction_source import PredictionSource
from ruler.kernel.errors import RulerError
from ruler.kernel.strict_json import read_json

_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d\d-\d\dT[\d.-]+)\.jsonl$")


def is_samples_file(path: Path) -> bool:
    return bool(_SAMPLES.match(Path(path).name))


def samples_files(folder: Path) -> list[Path]:
    return sorted(p for p in Path(folder).rglob("samples_*.jsonl") if is_samples_file(p))


def _results_path(samples_file: Path) -> Path | None:
    """The run's `results_<date>.json` beside a samples file."""
    m = _SAMPLES.match(samples_file.name)
    return samples_file.with_name(f"results_{m.group('date')}.json") if m else None


def _results_of(samples_file: Path) -> dict[str, Any]:
    """The run's results file's content ({} when it is not there). One that is there but
    damaged is an error: it is what ties the samples to the build they were made from."""
    results = _results_path(samples_file)
    if results is None or not results.is_file():
        return {}
    data = read_json(results, allow_nan=True)  # lm-eval writes NaN for some statistics
    if not isinstance(data, dict):
        raise RulerError(f"{results}: not an lm-eval results file (a JSON object expected)")
    return data


def _content_hashes(results: dict[str, Any], where: str) -> dict[tuple[str, str, int], str]:
    """(config, task, L) -> content_sha256 recorded in the exported tasks' metadata."""
    out = {}
    for name, cfg in _object(results.get("configs")).items():
        meta = _object(_object(_object(cfg).get("metadata")).get("ruler"))
        if {"config", "task", "max_seq_length", "content_sha256"} <= meta.keys():
            try:
                key = key_of({"tokenizer": meta["config"], "task": meta["task"],
                              "max_seq_length": meta["max_seq_length"], "index": 0})
            except ValueError as e:
                raise RulerError(f"{where}: task {name}'s ruler metadata is damaged: "
                                 f"{e}") from None
            out[key[:3]] = meta["content_sha256"]
    return out


def _object(value: Any) -> dict[str, Any]:
    """A section of lm-eval's results file: what lm-eval writes is an object; anything else
    (another version's layout, a hand edit) records nothing ruler reads."""
    return value if isinstance(value, dict) else {}


def _model_and_limit(results: dict[str, Any]) -> tuple[str | None, int | None]:
    config = _object(results.get("config"))
    args = _object(config.get("model_args"))
    named = [args.get("pretrained"), args.get("model"), results.get("model_name")]
    model = next((m for m in named if isinstance(m, str) and m), None)
    limit = config.get("limit")
    # --limit N (N >= 1) takes the first N docs of every task, as `ruler eval --limit N`;
    # a fraction has no single N.
    limit = int(limit) if isinstance(limit, (int, float)) and not isinstance(limit, bool) \
        and math.isfinite(limit) and limit >= 1 and float(limit).is_integer() else None
    return model, limit


def _generation(results: dict[str, Any]) -> dict[str, Any]:
    """How lm-eval generated (eval.metrics.health settings): each exported task's
    generation_kwargs as the results file records them (a --gen_kwargs override included)."""
    by_task: dict[str, int] = {}
    temperatures = set()
    for cfg in (results.get("configs") or {}).values():
        meta = ((cfg or {}).get("metadata") or {}).get("ruler") or {}
        kwargs = (cfg or {}).get("generation_kwargs") or {}
        if not isinstance(kwargs, dict) or not isinstance(meta.get("task"), str):
            continue
        if isinstance(kwargs.get("max_gen_toks"), int):
            by_task[meta["task"]] = kwargs["max_gen_toks"]
        sampled = kwargs.get("do_sample")
        temp = kwargs.get("temperature")
        temperatures.add(float(temp) if isinstance(temp, (int, float)) and sampled
                         is not False else 0.0 if sampled is False or temp == 0 else None)
    temperature = temperatures.pop() if len(temperatures) == 1 else None
    out: dict[str, Any] = {"framework": "lm-eval", "max_tokens_by_task": by_task}
    if temperature is not None:
        out["temperature"] = temperature
        out["decoding"] = "greedy" if temperature == 0 else f"sampled, temperature {temperature}"
    return out


def _record(sample: dict[str, Any], where: str, hashes: dict) -> dict[str, Any]:
    doc = sample.get("doc")
    if not isinstance(doc, dict) or any(c not in doc for c in KEY_COLUMNS):
        builtin = isinstance(doc, dict) and "gen_prefix" in doc and "tokenizer" not in doc
        raise RulerError(
            f"{where}: the logged doc has no {'/'.join(KEY_COLUMNS)}: not a task written by "
            f"`ruler export lm-eval`" + (" (these are lm-eval's built-in `ruler` tasks, a "
                                         "different generator whose rows are not in this "
                                         "dataset)" if builtin else ""))
    try:
        key = key_of(doc)
    except ValueError as e:
        raise RulerError(f"{where}: the logged doc's {e}") from None
    resps = sample.get("filtered_resps")
    prediction = resps[0] if isinstance(resps, list) and resps else resps
    record = {**dict(zip(KEY_COLUMNS, key)), "data_sha256": hashes.get(key[:3], ""),
              **row_evidence(doc)}
    if isinstance(prediction, str):
        return {**record, "prediction": prediction, "status": "ok"}
    return {**record, "prediction": None, "status": "error",
            "reason": f"lm-eval logged no text response ({prediction!r})"}


def row_evidence(doc: dict[str, Any]) -> dict[str, Any]:
    """What the logged doc (the row lm-eval read) holds that ties the sample to this build's
    row (`ruler.eval.records.build_tie`): the digest of its prompt `input`, and its `length`."""
    out: dict[str, Any] = {}
    if isinstance(doc.get("input"), str):
        out["input_sha256"] = prompt_digest(doc["input"])
    if doc.get("length") is not None:
        out["length"] = doc["length"]  # checked, as every record's, where records are indexed
    return out


def read_samples(paths: list[Path]) -> PredictionSource:
    """Prediction records of lm-eval samples files (the unfiltered "none" responses), with the
    model and `--limit` of the run(s) when their results files say so."""
    runs: dict[str, list[str]] = {}
    for path in paths:
        m = _SAMPLES.match(Path(path).name)
        if m:
            runs.setdefault(m.group("task"), []).append(m.group("date"))
    repeated = {task: dates for task, dates in runs.items() if len(dates) > 1}
    if repeated:
        task, dates = next(iter(sorted(repeated.items())))
        raise RulerError(f"lm-eval ran task {task} {len(dates)} times here "
                         f"({', '.join(sorted(dates))}): pass one samples file, or a folder "
                         f"with one run of each task")
    parts = []
    for path in paths:
        results = _results_of(Path(path))
        hashes = _content_hashes(results, str(_results_path(Path(path))))
        records = [_record(sample, f"{path}:{n + 1}", hashes)
                   for n, sample in enumerate(read_records(path))
                   # other filters are the user's own; the exported tasks define none
                   if sample.get("filter", "none") == "none"]
        # The tasks the run was given: every exported task records its (config, task, L).
        parts.append(PredictionSource(records, *_model_and_limit(results),
                                      asked=set(hashes) or None,
                                      settings=_generation(results)))
    return PredictionSource.merge(parts)


#: `ruler score` reads lm-eval's samples through this (`eval.scoring.prediction_readers`).
READER = PredictionReader(
    name="lm-eval", what=("lm-eval samples (samples_*.jsonl, from --log_samples)",
                          "lm-eval samples"),
    claims=is_samples_file, files_in=samples_files, read=read_samples)
