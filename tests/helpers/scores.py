"""scores.json records made in the test, without a build or a run: what `ruler report`,
Table 3 and `ruler compare` read, with chosen models, configs, tasks, lengths and row values."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Sequence

from ruler.catalog.benchmarks import BENCHMARKS
from ruler.eval.metrics.intervals import score_interval
from ruler.eval.records.results_folder import SCORES_NAME
from ruler.eval.records.run_record import DatasetRecord
from ruler.eval.records.scores_record import CellScore, ScoresRecord, Selection
from ruler.eval.scoring.score import write_scores

#: Row value of (task, L, row index): 0..1.
Values = Callable[[str, int, int], float]


def right(task: str, L: int, i: int) -> float:
    return 1.0


def wrong(task: str, L: int, i: int) -> float:
    return 0.0


def alternating(task: str, L: int, i: int) -> float:
    return float((i + len(task) + L // 1024) % 3 != 0)


def scores(model: str | None, config: str, tasks: Sequence[str], lengths: Sequence[int],
           values: Values = right, rows: int = 10, metric: str = "string_match_all",
           spec: str = "data", benchmark: str | None = None,
           language: str | None = None) -> ScoresRecord:
    """A complete scores record: every (task, L) cell with `rows` answered rows, recording
    `benchmark` (default: the one the catalog lists the tasks in, as the build of such a
    config records it) and, for ONERULER, `language`, as `ruler score` records them."""
    if benchmark is None:
        benchmark = next((b for b, own in BENCHMARKS.items() if tasks[0] in own), "ruler")
    cells, files = [], {}
    for task in tasks:
        for L in lengths:
            row_scores = [[i, values(task, L, i)] for i in range(rows)]
            interval = score_interval([v for _, v in row_scores])
            sha = hashlib.sha256(f"{config}/{task}/{L}".encode()).hexdigest()
            files[f"{task}/{L}"] = sha
            cells.append(CellScore(
                task=task, max_seq_length=L, metric=metric,
                score=100 * sum(v for _, v in row_scores) / rows, rows=rows, scored=rows,
                nulls=0, skipped=0, errors=0, missing=0, data_sha256=sha,
                row_scores=row_scores, ci95=interval.to_json(), ci_method=interval.method,
                tied_by={"data_sha256": rows}, unverified=0))
    return ScoresRecord(dataset=DatasetRecord(spec=spec, files=files), config=config,
                        model=model, cells=cells, depth_items={}, variant={},
                        benchmark=benchmark, axes={"language": language} if language else {},
                        selection=Selection(tasks=list(tasks), lengths=list(lengths),
                                            by="config"))


def write(folder: Path, record: ScoresRecord) -> Path:
    """`folder/scores.json` holding `record`, as `ruler score` writes it."""
    folder.mkdir(parents=True, exist_ok=True)
    write_scores(folder / SCORES_NAME, record)
    return folder
