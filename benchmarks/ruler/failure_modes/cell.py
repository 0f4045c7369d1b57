"""Labelling a scored cell: what `ruler score` (and `ruler eval`, which scores) records in each
cell of scores.json as its `failures`.

Only the wrong rows are read again, for their input (megabytes at long lengths, which
scoring itself never reads): a cell whose rows are all right costs nothing but, for QA, the
short `question` column, whose digest pairs a row with its no-context twin."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ruler.benchmarks.ruler import METRICS as OWN_METRICS
from ruler.benchmarks.ruler.failure_modes.base import LabelRow
from ruler.benchmarks.ruler.failure_modes.labeler import label_row, labels_family
from ruler.benchmarks.ruler.failure_modes.labels import DEFINITIONS
from ruler.benchmarks.ruler.failure_modes.qa import question_key
from ruler.benchmarks.ruler.failure_modes.text import squad_norm
from ruler.catalog.tasks import TASKS
from ruler.eval.failure_modes.record import CellFailures, QaAnswer, RowFailure
from ruler.eval.metrics.specs import postprocess_pred
from ruler.eval.records.dataset import Dataset, SplitFile
from ruler.kernel.scrub import redact_known

_BATCH = 32


def family_of(task: str) -> str | None:
    """The family of a catalog task (None: a task this ruler does not know)."""
    spec = TASKS.get(task)
    return spec.family.name if spec is not None else None


def label_cell(ds: Dataset, f: SplitFile, metric: str, indices: Sequence[int],
               predictions: Sequence[str], values: Sequence[float],
               records: Mapping[int, Mapping[str, Any]],
               outputs: Mapping[int, Sequence[str]]) -> CellFailures | None:
    """The labels of a cell's answered rows (`indices`, their `predictions` and `values`
    under `metric`; `records`: the prediction records by index, for their finish reason;
    `outputs`: the rows' references); None where its rows are not labelled (a family or a
    metric of another benchmark than RULER v1's)."""
    family = family_of(f.task)
    if family is None or not labels_family(family) or metric not in OWN_METRICS:
        return None
    wrong = {i for i, v in zip(indices, values) if v < 1.0}
    qa = family == "qa"
    if not wrong and not qa:
        return CellFailures(definitions=DEFINITIONS, family=family, labelled=len(indices))
    columns = ("index", "question") + (("input", "answer_prefix") if wrong else ())
    texts = {int(r["index"]): r for batch in ds.iter_rows(f, columns, _BATCH) for r in batch
             if int(r["index"]) in wrong or qa}
    rows: list[RowFailure] = []
    answers: list[QaAnswer] = []
    for i, pred, value in zip(indices, predictions, values):
        row = texts.get(i)
        if qa and row is not None:
            # stored in scores.json: never a secret the answer held (eval.records.redaction)
            stored = squad_norm(postprocess_pred(redact_known(pred)))
            answers.append(QaAnswer(index=i, answer=stored,
                                    question=question_key(row["question"])))
        if i not in wrong or row is None:
            continue
        got = label_row(LabelRow(task=f.task, family=family, input=row["input"],
                                 outputs=tuple(outputs[i]), answer_prefix=row["answer_prefix"],
                                 metric=metric, question=row["question"]),
                        pred, str(records.get(i, {}).get("finish_reason") or ""), value)
        if got is not None:
            rows.append(RowFailure(index=i, label=got.label, flags=list(got.flags),
                                   distance=got.distance, char_distance=got.char_distance,
                                   chance=got.chance, rank=got.rank))
    return CellFailures(definitions=DEFINITIONS, family=family, labelled=len(indices),
                        rows=rows, answers=answers if qa else None)
