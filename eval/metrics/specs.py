"""Metrics: how a row's prediction is scored, by the name the data's `metric` column holds.

`METRIC_SPECS` (a `ruler.kernel.registry.Registry`) maps each name to a `MetricSpec`: which
function scores a row, what it is given of the model's text (upstream RULER's post-processing,
`postprocess_pred`, or the generation as it is, `raw_generation`) and how a task's rows make
its score. Each benchmark declares its own (`Benchmark.metrics`: RULER's upstream
`string_match_all` / `string_match_part`, `ruler.benchmarks.ruler.metrics`; the others in
their folders), registered the first time a name is asked for; a plug-in offers
one in its benchmark or through entry point group `ruler.metrics`. A metric may need more of
the row than its references (`MetricSpec.keyed`: the row's task and what its build records,
never a config's name).
"""

from __future__ import annotations

import re
from contextlib import nullcontext
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    AbstractSet,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
    TypeVar,
)

from ruler.kernel.registry import LiveView, Registry, builtin_code

if TYPE_CHECKING:
    from ruler.builder.manifest import BuildEntry

_CONTROL = re.compile(r"[\x00-\x1f]")


def postprocess_pred(predict_str: str) -> str:
    """Upstream's only normalisation: strip, control characters to newlines, strip."""
    predict_str = predict_str.strip()
    # Remove all non-printable characters
    predict_str = _CONTROL.sub("\n", predict_str).strip()
    return predict_str


def raw_generation(predict_str: str) -> str:
    """The generation as it is (an upstream whose post-processing is the identity: NeMo-Skills'
    evaluator)."""
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
    """A task score as NeMo-Skills' `accuracy` / `symbolic_correct` is: the mean of the rows'
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
    benchmark: str = ""  # the id of the benchmark that declares it, for people
    # A right answer, as a model writes it, from the references (the fake backend's `gold`)
    gold: Callable[[Sequence[str]], str] = joined_references
    # True: `row` also takes the row's task and its build key (`build_key`): a metric that
    # picks its comparison by the row's task and its words by what the row's build records
    # (a language), so that one `metric` column value serves all of a benchmark's tasks.
    keyed: bool = False
    # A keyed metric's build key: what it reads of the manifest's entry of the row's config
    # (`builder.manifest.BuildEntry`: its axis values), never of the config's name; a
    # ValueError for a build that records none.
    build_key: Callable[[BuildEntry], str] | None = None
    # False: a row is right or wrong as a whole (a missing or extra number fails it), so a
    # gold item is scored as its row is, not on its own references (`eval.metrics.depth`).
    partial_credit: bool = True
    # Upstream's own task score over the prepared predictions and references, where upstream
    # has one (RULER's `string_match_all`); None: `aggregate` of the rows' values.
    task_score: Callable[..., float] | None = None
    # The metric of the rows this one may rescore in their stead (`ruler score --metric`);
    # None: only rows that name it.
    replaces: str | None = None


#: Every metric by the name the data's `metric` column holds: those the benchmarks declare
#: (`Benchmark.metrics`, registered the first time a name is missing or the list is read), any
#: registered (`METRIC_SPECS.register(spec, name)`), then those a plug-in offers in entry point
#: group `ruler.metrics` (`name = "pkg.module:SPEC"`): rows of a plug-in's task family name its
#: metric, and `ruler score` and the fake backend find it there.
METRIC_SPECS: Registry[MetricSpec] = Registry(
    "metric", "ruler.metrics", accepts=lambda obj: isinstance(obj, MetricSpec),
    on_miss=lambda: _benchmark_metrics())


def _benchmark_metrics() -> None:
    from ruler.catalog.benchmarks import BENCHMARK_SPECS

    for name in BENCHMARK_SPECS.names():
        bench = BENCHMARK_SPECS.get(name)
        if bench is None:
            continue
        with nullcontext() if BENCHMARK_SPECS.from_plugin(name) else builtin_code():
            for metric, spec in bench.metrics.items():
                METRIC_SPECS.register(spec, metric, origin=f"benchmark {name}")


_Fn = TypeVar("_Fn", bound=Callable[..., object])


def _table(of: Callable[[str, MetricSpec], _Fn]) -> Mapping[str, _Fn]:
    """A read-only view of one function of ruler's own metrics (those its benchmarks declare),
    by name."""
    return LiveView(lambda: {n: of(n, METRIC_SPECS[n]) for n in METRIC_SPECS.builtin_names()})


_Name = TypeVar("_Name")


class _Keyed(AbstractSet[str]):
    """The names of ruler's own keyed metrics (`MetricSpec.keyed`)."""

    def _names(self) -> set[str]:
        return {n for n in METRIC_SPECS.builtin_names() if METRIC_SPECS[n].keyed}

    @classmethod
    def _from_iterable(cls, names: Iterable[_Name]) -> AbstractSet[_Name]:
        # what set operations (`names & KEYED_METRICS`) return: a plain set of the names
        return set(names)

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._names()))

    def __len__(self) -> int:
        return len(self._names())


#: Ruler's metrics whose row function also takes the row's task and build key
#: (`MetricSpec.keyed`).
KEYED_METRICS: AbstractSet[str] = _Keyed()


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


#: Upstream's aggregate metric (0..100) of ruler's own metrics, by name: upstream's own
#: function where the metric has one (`MetricSpec.task_score`, RULER's), else the aggregate of
#: the rows' values (other upstreams aggregate row by row; a keyed
#: metric's aggregate also takes the rows' task and build key). Each on predictions as its
#: `MetricSpec.prepare` leaves them.
METRICS: Mapping[str, Callable[..., float]] = _table(
    lambda name, spec: spec.task_score or _rows_aggregate(name))

#: Per-row metric (0..1) by the same names, on the prepared prediction.
ROW_METRICS: Mapping[str, Callable[..., float]] = _table(lambda name, spec: spec.row)

#: What each metric is given of the model's text (post-processed, or as generated).
PREPARE: Mapping[str, Callable[[str], str]] = _table(lambda name, spec: spec.prepare)


def task_score(metric: str, preds: Sequence[str], refs: Sequence[Sequence[str]],
               task: str = "", key: str = "") -> float:
    """Upstream's task score over raw predictions: prepared as the metric's upstream does, then
    the named metric (a keyed one given the rows' `task` and their build key, `build_key`)."""
    spec = metric_spec(metric)
    if not preds:
        raise ValueError("cannot score an empty set of predictions")
    keys = (task, key) if spec.keyed else ()
    aggregate = spec.task_score or _rows_aggregate(metric)
    return aggregate([spec.prepare(p) for p in preds], refs, *keys)
