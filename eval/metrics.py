"""RULER's metrics and prediction post-processing, exactly as upstream computes them.

Two benchmarks, two upstreams: RULER v1's `string_match_all` / `string_match_part` below, on
the post-processed prediction; RULERv2's `ruler2_all` / `ruler2_2steps` / `ruler2_part`
(`ruler.eval.ruler2_metric`) and `multichoice` (`ruler.eval.multichoice`), as NeMo-Skills scores
them, on the raw generation; ONERULER's `oneruler` (upstream's evaluate.py) and
`oneruler_corrected` (`ruler.eval.oneruler_metric`), on the raw generation too, which also
read the row's task and the language its build records (`MetricSpec.keyed`). `METRIC_SPECS` (a
`ruler.builder.registry.Registry`, which a plug-in extends through entry point group
`ruler.metrics`) says, per name the data's `metric` column holds, which function scores a row,
what it is given and how a task's rows make its score.

v1 upstream: NVIDIA/RULER `scripts/eval/synthetic/constants.py` (metrics, unchanged since the
first commit) and `scripts/eval/evaluate.py:postprocess_pred`. The two aggregate functions
below are upstream's code verbatim, including its quirks: matching is a case-insensitive
substring test with no word boundaries ('art' matches 'party'), and a reference listed twice
counts twice in `string_match_all`'s recall. The per-row forms give the same numbers and let
reports count, drop or inspect single rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from ruler.builder.registry import Registry
from ruler.eval.multichoice import boxed_answer, multichoice
from ruler.eval.oneruler_metric import check_language, oneruler, oneruler_corrected
from ruler.eval.ruler2_metric import ruler2_2steps, ruler2_all, ruler2_part

if TYPE_CHECKING:
    from ruler.builder.manifest import BuildEntry

_CONTROL = re.compile(r"[\x00-\x1f]")


def postprocess_pred(predict_str: str) -> str:
    """Upstream's only normalisation: strip, control characters to newlines, strip."""
    predict_str = predict_str.strip()
    # Remove all non-printable characters
    predict_str = _CONTROL.sub("\n", predict_str).strip()
    return predict_str


# --- upstream, verbatim ---------------------------------------------------------------------

def string_match_part(preds, refs):
    score = sum([max([1.0 if r.lower() in pred.lower() else 0.0 for r in ref]) for pred, ref in zip(preds, refs)]) / len(preds) * 100  # noqa: E501
    return round(score, 2)


def string_match_all(preds, refs):
    score = sum([sum([1.0 if r.lower() in pred.lower() else 0.0 for r in ref]) / len(ref) for pred, ref in zip(preds, refs)]) / len(preds) * 100  # noqa: E501
    return round(score, 2)


# --- per row ------------------------------------------------------------------------------

def row_match_part(pred: str, refs: Sequence[str]) -> float:
    """1.0 if any reference is a substring of the prediction (case-insensitive), else 0.0."""
    return max(1.0 if r.lower() in pred.lower() else 0.0 for r in refs)


def row_match_all(pred: str, refs: Sequence[str]) -> float:
    """The fraction of references found in the prediction (duplicates count each time)."""
    return sum(1.0 if r.lower() in pred.lower() else 0.0 for r in refs) / len(refs)


def raw_generation(predict_str: str) -> str:
    """NeMo-Skills' RULERv2 evaluator scores the generation as it is (its post-processing is
    the identity)."""
    return predict_str


def score_of_rows(row_scores: Sequence[float]) -> float:
    """A task score (0..100, 2 decimals) from per-row values of `ROW_METRICS` on post-processed
    predictions: the very float operations of upstream's aggregates (sum in row order, / n,
    * 100, round), so the same number to the last bit. Frameworks that score row by row (the
    lm-evaluation-harness export, the Inspect scorer) aggregate with this."""
    if not row_scores:
        raise ValueError("cannot score an empty set of rows")
    return round(sum(row_scores) / len(row_scores) * 100, 2)


def percent_of_rows(row_scores: Sequence[float]) -> float:
    """A RULERv2 task score: NeMo-Skills' `accuracy` / `symbolic_correct`, the mean of the rows'
    values as a percentage, not rounded."""
    if not row_scores:
        raise ValueError("cannot score an empty set of rows")
    return 100.0 * sum(row_scores) / len(row_scores)


def joined_references(references: Sequence[str]) -> str:
    """The references joined by spaces: an answer every string metric scores 1 (no blank line
    in it, so 2steps' cut at the last one keeps them all)."""
    return " ".join(references)


@dataclass(frozen=True)
class MetricSpec:
    """One metric of the `metric` column."""

    # (prepared prediction, references) -> 0..1; keyed: (..., task, build key) -> 0..1
    row: Callable[..., float]
    prepare: Callable[[str], str]  # what upstream scores: the post-processed or raw text
    aggregate: Callable[[Sequence[float]], float]  # the rows' values -> the task score
    benchmark: str  # "ruler" (v1), "ruler2" or "oneruler"
    # A right answer, as a model writes it, from the references (the fake backend's `gold`)
    gold: Callable[[Sequence[str]], str] = joined_references
    # True: `row` also takes the row's task and its build key (`build_key`). ONERULER's metric
    # picks its comparison by task name and its none-words by the language the row's build
    # records, and one `metric` column value serves all 7 tasks and 26 languages.
    keyed: bool = False
    # A keyed metric's build key: what it reads of the manifest's entry of the row's config
    # (`builder.manifest.BuildEntry`), never of the config's name; a ValueError for a build
    # that records none (ONERULER's: its `language`, "ko" or "en-ko").
    build_key: Callable[[BuildEntry], str] | None = None
    # False: a row is right or wrong as a whole (ONERULER: a missing or extra number fails
    # it), so a gold item is scored as its row is, not on its own references (`eval.depth`).
    partial_credit: bool = True
    # The metric of the rows this one may rescore in their stead (`ruler score --metric`);
    # None: only rows that name it.
    replaces: str | None = None


def _oneruler_language(build: BuildEntry) -> str:
    """The language a ONERULER build records (upstream's `--language`: "ko", "en-ko")."""
    if build.language_code is None:
        raise ValueError("its manifest entry records no ONERULER language")
    return check_language(build.language_code)


#: Every metric by the name the data's `metric` column holds: upstream's, then any registered
#: (`METRIC_SPECS.register(spec, name)`), then those a plug-in offers in entry point group
#: `ruler.metrics` (`name = "pkg.module:SPEC"`): rows of a plug-in's task family name its
#: metric, and `ruler score` and the fake backend find it there.
METRIC_SPECS: Registry[MetricSpec] = Registry(
    "metric", "ruler.metrics", accepts=lambda obj: isinstance(obj, MetricSpec))

_BUILTIN: dict[str, MetricSpec] = {
    "string_match_all": MetricSpec(row_match_all, postprocess_pred, score_of_rows, "ruler"),
    "string_match_part": MetricSpec(row_match_part, postprocess_pred, score_of_rows, "ruler"),
    "ruler2_all": MetricSpec(ruler2_all, raw_generation, percent_of_rows, "ruler2"),
    "ruler2_2steps": MetricSpec(ruler2_2steps, raw_generation, percent_of_rows, "ruler2"),
    "ruler2_part": MetricSpec(ruler2_part, raw_generation, percent_of_rows, "ruler2"),
    "multichoice": MetricSpec(multichoice, raw_generation, percent_of_rows, "ruler2",
                              gold=boxed_answer),
    # upstream's avg_acc is the plain mean of the rows' 0/1, not rounded
    "oneruler": MetricSpec(oneruler, raw_generation, percent_of_rows, "oneruler", keyed=True,
                           build_key=_oneruler_language, partial_credit=False),
    "oneruler_corrected": MetricSpec(oneruler_corrected, raw_generation, percent_of_rows,
                                     "oneruler", keyed=True, build_key=_oneruler_language,
                                     partial_credit=False, replaces="oneruler"),
}
for _name, _spec in _BUILTIN.items():
    METRIC_SPECS.register(_spec, _name, origin="ruler")

#: Ruler's metrics whose row function also takes the row's task and build key (`MetricSpec.keyed`;
#: the lm-eval export's utils.py copies this table, as it copies ruler's metrics only).
KEYED_METRICS = frozenset(name for name, spec in _BUILTIN.items() if spec.keyed)


def build_key(metric: str, build: BuildEntry) -> str:
    """What the keyed metric `metric` reads of a row's build (`MetricSpec.build_key`: from
    the manifest's entry of its config); "" for a metric that reads nothing of it. A
    ValueError for a build that records no such fact."""
    spec = metric_spec(metric)
    return spec.build_key(build) if spec.keyed and spec.build_key is not None else ""


def metric_spec(metric: str) -> MetricSpec:
    """The metric `metric` (a KeyError naming the known ones when there is none)."""
    return METRIC_SPECS[metric]


def row_score(metric: str, prediction: str, references: Sequence[str], task: str = "",
              key: str = "") -> float:
    """One row's value (0..1) under `metric`, from the model's text as generated; `task` (the
    row's `task` column) and `key` (its build key: `build_key`) are read by keyed metrics
    only."""
    spec = metric_spec(metric)
    keys = (task, key) if spec.keyed else ()
    return spec.row(spec.prepare(prediction), list(references), *keys)


def rescoring_metric(rows_metric: str, asked: str | None) -> str:
    """The metric to score rows whose `metric` column is `rows_metric` with, when `asked`
    (`ruler score --metric`) names one: itself, or one that `replaces` it; a ValueError
    otherwise."""
    if asked is None or asked == rows_metric:
        return rows_metric
    if metric_spec(asked).replaces != rows_metric:
        fits = [rows_metric] + [n for n, s in METRIC_SPECS.items() if s.replaces == rows_metric]
        raise ValueError(f"metric {asked!r} cannot score rows whose metric is {rows_metric!r} "
                         f"(these rows: {', '.join(fits)})")
    return asked


def _rows_aggregate(metric: str) -> Callable[..., float]:
    def aggregate(preds: Sequence[str], refs: Sequence[Sequence[str]], *keys: str) -> float:
        spec = metric_spec(metric)
        return spec.aggregate([spec.row(p, list(r), *keys) for p, r in zip(preds, refs)])

    aggregate.__name__ = metric
    return aggregate


#: Upstream's aggregate metric (0..100, rounded to 2 decimals) by the name the data's `metric`
#: column holds. v1: upstream's own functions; RULERv2 and ONERULER: the mean of the rows
#: (NeMo-Skills and OneRuler's evaluate.py aggregate row by row; a keyed metric's aggregate also
#: takes the rows' task and config). Each on predictions as its `MetricSpec.prepare` leaves
#: them. The tables here (and the lm-eval export's utils.py, copied from them) hold ruler's own
#: metrics; a plug-in's is read from `METRIC_SPECS`.
METRICS: Mapping[str, Callable[..., float]] = {
    "string_match_all": string_match_all,
    "string_match_part": string_match_part,
    **{name: _rows_aggregate(name) for name, spec in _BUILTIN.items()
       if spec.benchmark != "ruler"},
}

#: Per-row metric (0..1) by the same names, on the prepared prediction.
ROW_METRICS: Mapping[str, Callable[[str, Sequence[str]], float]] = {
    name: spec.row for name, spec in _BUILTIN.items()}

#: What each metric is given of the model's text (v1: post-processed; RULERv2: as generated).
PREPARE: Mapping[str, Callable[[str], str]] = {
    name: spec.prepare for name, spec in _BUILTIN.items()}


def task_score(metric: str, preds: Sequence[str], refs: Sequence[Sequence[str]],
               task: str = "", key: str = "") -> float:
    """Upstream's task score over raw predictions: prepared as the metric's upstream does
    (v1: post-processed; RULERv2, ONERULER: as generated), then the named metric (a keyed one
    given the rows' `task` and their build key, `build_key`)."""
    spec = metric_spec(metric)
    if not preds:
        raise ValueError("cannot score an empty set of predictions")
    keys = (task, key) if spec.keyed else ()
    aggregate = METRICS.get(metric) or _rows_aggregate(metric)
    return aggregate([spec.prepare(p) for p in preds], refs, *keys)
