"""`ruler score`: predictions (from `ruler eval` or any framework) against the dataset's rows.

The dataset's rows are the truth: references, metric and the set of rows that should have a
prediction. Each (task, L) cell gets upstream's task score over the rows that were answered;
rows skipped (too long for the model), failed, or absent from the predictions are counted and
listed, never scored as zero. Predictions whose key is not a row of the dataset are listed as
unknown. A prediction carrying a `data_sha256` different from the split file's is an error:
it was made from another revision of the dataset.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ruler.builder.errors import RulerError
from ruler.builder.manifest import write_json_atomic
from ruler.eval.data import Dataset, SplitFile
from ruler.eval.depth import compact, row_columns, row_items
from ruler.eval.integrations.sources import read_predictions
from ruler.eval.metrics import postprocess_pred, task_score
from ruler.eval.predictions import (LONG_FIELDS, Key, format_key, index_records,
                                    read_records)
from ruler.eval.results_folder import PREDICTIONS_NAME, RUN_NAME, SCORES_NAME

SCORES_FORMAT = "ruler-scores/1"


@dataclass
class CellScore:
    task: str
    max_seq_length: int
    metric: str
    score: float | None  # None: no row was answered
    rows: int  # rows of the split (or of the evaluated subset)
    scored: int
    nulls: int  # answered with an empty prediction (after post-processing), as upstream
    skipped: int
    errors: int
    missing: int
    data_sha256: str
    skip_reasons: list[str] = field(default_factory=list)
    # reasoning mode: answered rows whose thinking hit the output budget (scored as empty)
    budget_exhausted: int = 0


@dataclass
class ScoreReport:
    dataset: dict[str, Any]
    config: str
    model: str | None
    cells: list[CellScore]
    missing: list[str]
    unknown: list[str]
    # Score by depth (eval.depth): "task/L" -> [[depth, score], ...] of the answered rows,
    # and the dataset config's depth bins when it is depth-swept (`ruler build --depths N`).
    depth_items: dict[str, list[list[float]]] = field(default_factory=dict)
    depth_bins: int | None = None
    mode: str | None = None  # the prompt mode of a `ruler eval` run (None: not known)

    def to_json(self) -> dict[str, Any]:
        return {"format": SCORES_FORMAT, **asdict(self)}


def score_predictions(ds: Dataset, records: dict[Key, dict[str, Any]],
                      files: list[SplitFile] | None = None, model: str | None = None,
                      limit: int | None = None) -> ScoreReport:
    """Score keyed prediction records against the dataset.

    `files`: the split files to score; default: every file of the predictions' config that
    any prediction names. `limit`: only the first N rows of each file are expected (`ruler eval
    --limit N`); rows beyond them are neither scored nor reported missing.
    """
    configs = sorted({k[0] for k in records})
    if len(configs) > 1:
        raise RulerError(f"predictions span several tokenizer configs ({', '.join(configs)}); "
                         f"score each config separately")
    if not configs and not files:
        raise RulerError("no predictions to score")
    config = configs[0] if configs else files[0].config
    ds.build(config)  # clear error for an unknown config
    if files is None:
        named = {(k[1], k[2]) for k in records}
        files = [f for f in ds.files(config) if (f.task, f.max_seq_length) in named]
    by_file: dict[tuple[str, int], dict[int, dict]] = defaultdict(dict)
    for k, r in records.items():
        by_file[(k[1], k[2])][k[3]] = r

    cells, missing, seen, depth_items = [], [], set(), {}
    for f in files:
        preds = by_file.get((f.task, f.max_seq_length), {})
        items: list = []
        cell, cell_missing = _score_file(ds, f, preds, limit, items)
        depth_items[f.key] = compact(items)
        cells.append(cell)
        missing += cell_missing
        seen |= {(config, f.task, f.max_seq_length, i) for i in preds}
    unknown = [format_key(k) for k in sorted(records) if k not in seen or
               records[k].get("_unknown")]
    return ScoreReport(
        dataset={"spec": ds.spec, "revision": ds.revision,
                 "files": {f.key: f.content_sha256 for f in files}},
        config=config, model=model, cells=cells, missing=missing, unknown=unknown,
        depth_items=depth_items,
        depth_bins=(ds.build(config).get("variant") or {}).get("depth_bins"))


def _score_file(ds: Dataset, f: SplitFile, preds: dict[int, dict], limit: int | None,
                depth_items: list | None = None) -> tuple[CellScore, list[str]]:
    """Score one split file; append the answered rows' depth items to `depth_items`."""
    # Only the columns scoring reads: a 128K row's input is megabytes.
    all_rows = ds.rows(f, columns=tuple(dict.fromkeys(("index",) + row_columns(f.task))))
    rows = {int(r["index"]): r for r in all_rows}
    for i, p in preds.items():
        if i not in rows:
            p["_unknown"] = True
            continue
        sha = p.get("data_sha256")
        if sha and sha != f.content_sha256:
            raise RulerError(f"prediction {format_key((f.config, f.task, f.max_seq_length, i))} "
                             f"was made from a different revision of the dataset "
                             f"(content_sha256 {sha[:12]}, the data has "
                             f"{f.content_sha256[:12]})")
    metrics = {r["metric"] for r in rows.values()}
    if len(metrics) != 1:
        raise RulerError(f"{f.path}: rows disagree on the metric: {sorted(metrics)}")
    metric = metrics.pop()
    answered, refs, reasons = [], [], Counter()
    skipped = errors = exhausted = 0
    missing = []
    considered = [int(r["index"]) for r in all_rows[: limit or None]]
    for i in considered:
        p = preds.get(i)
        status = None if p is None else p.get("status", "ok")
        if p is None:
            missing.append(format_key((f.config, f.task, f.max_seq_length, i)))
        elif status == "skipped":
            skipped += 1
            reasons[_reason_kind(p.get("reason", ""))] += 1
        elif status == "error" or p.get("prediction") is None:
            errors += 1
            reasons[_reason_kind(p.get("reason", "") or "no prediction")] += 1
        else:
            answered.append(str(p["prediction"]))
            refs.append(list(rows[i]["outputs"]))
            if depth_items is not None:
                depth_items.extend(row_items(rows[i], answered[-1]))
            exhausted += p.get("reasoning") == "budget_exhausted"
    score = task_score(metric, answered, refs) if answered else None
    nulls = sum(1 for a in answered if not postprocess_pred(a))
    cell = CellScore(f.task, f.max_seq_length, metric, score, len(considered), len(answered),
                     nulls, skipped, errors, len(missing), f.content_sha256,
                     [f"{n}x {why}" for why, n in reasons.most_common()], exhausted)
    return cell, missing


def _reason_kind(reason: str) -> str:
    """Group reasons by their kind (numbers stripped) so a summary stays short."""
    if "max_model_len" in reason:
        return "prompt + tokens_to_generate > max_model_len"
    return reason[:120]


def score_file(predictions: str | os.PathLike, ds: Dataset,
               config: str | None = None) -> ScoreReport:
    """`ruler score`: predictions from any framework (ruler's records, lm-eval's samples, an
    Inspect log; see `ruler.eval.integrations.sources`)."""
    source = read_predictions(predictions)
    records = index_records(source.records, str(predictions))
    if config:
        records = {k: r for k, r in records.items() if k[0] == config}
    return score_predictions(ds, records, model=source.model, limit=source.limit)


def score_folder(out: Path, ds: Dataset) -> ScoreReport:
    """Score a `ruler eval` results folder and write its scores.json."""
    run = json.loads((out / RUN_NAME).read_text(encoding="utf-8"))
    records = index_records(read_records(out / PREDICTIONS_NAME, tolerate_torn_tail=True,
                                         drop=LONG_FIELDS), str(out / PREDICTIONS_NAME))
    keys = {tuple(k.split("/")) for k in run["dataset"]["files"]}
    files = [f for f in ds.files(run["dataset"]["config"])
             if (f.task, str(f.max_seq_length)) in keys]
    report = score_predictions(ds, records, files, model=run.get("model"),
                               limit=run.get("limit"))
    report.mode = run.get("mode")
    write_scores(out / SCORES_NAME, report)
    return report


def write_scores(path: Path, report: ScoreReport) -> None:
    write_json_atomic(Path(path), report.to_json())
