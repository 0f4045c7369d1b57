"""Score by depth: where the answered rows' gold items sit in the context, and whether the
prediction found each one.

Every answered row gives one or more items (depth, score in 0..1), from its recorded
`gold_depths`, so this works on any build (a depth-swept one puts the same number of rows in
every bin; a default one samples depths as upstream does). Which items a row has is its task
family's rule (`TaskFamily.depth_items`: each item's depth and the references it is scored
on; each family's `depth_items` says how); the score is the row's metric on those references,
except under a metric without partial credit, where each item scores as its whole row does (a
multi-value answer is right only with every value). Rows without gold positions give none.

`depth_table` bins the items (bin b of N: depths in [b/N, (b+1)/N), `ruler.catalog.depths`)
per task and length; cells with fewer than `min_samples` items are flagged, never hidden.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, Sequence

from ruler.catalog.benchmarks import in_task_order
from ruler.catalog.depths import bin_of
from ruler.catalog.family import DepthItem, first_gold_item, get_family
from ruler.catalog.tasks import TASKS
from ruler.eval.metrics.specs import METRIC_SPECS, row_score
from ruler.eval.records.scores_record import cell_of

#: Bins of a report on a build that was not depth-swept (a swept one uses its own N).
DEFAULT_DEPTH_BINS = 10
#: The most bins a report takes (`--depth-bins`): every table and heatmap has a row per bin.
MAX_REPORT_DEPTH_BINS = 100
#: A cell scored on fewer items than this is marked in tables and plots.
DEFAULT_MIN_SAMPLES = 5
#: Decimals kept of a depth in scores.json (bins are at least 1/20 wide).
DEPTH_DECIMALS = 6

#: The group of tasks the report also averages (`DepthTables.niah`, "all niah"): the tasks
#: whose family's `depth_group` is this.
GROUP = "niah"

Item = tuple[float, float]  # (depth in [0, 1], score in [0, 1])


def row_columns(task: str) -> tuple[str, ...]:
    """The columns `row_items` reads of a `task` row: these four, and what its family's depth
    items need (the input, megabytes at long lengths, only where it must)."""
    spec = TASKS.get(task)
    extra = get_family(spec.family.name).depth_columns(spec) if spec is not None else ()
    return ("task", "metric", "outputs", "gold_depths") + extra


def gold_items(row: Mapping[str, Any]) -> list[DepthItem]:
    """The row's gold items by its family's rule (one at the first gold depth for a task
    outside the catalog)."""
    spec = TASKS.get(row["task"])
    return get_family(spec.family.name).depth_items(row) if spec is not None \
        else first_gold_item(row)


def row_items(row: Mapping[str, Any], prediction: str, metric: str | None = None,
              key: str = "") -> list[Item]:
    """The (depth, score) items of one answered row; see the module docstring. `metric`: the
    one scoring the row (default: the row's own); `key`: its build key, for a keyed metric
    (`MetricSpec.keyed`, `build_key`)."""
    if not row.get("gold_depths"):
        return []
    metric = metric or row["metric"]
    items = gold_items(row)
    if not METRIC_SPECS[metric].partial_credit:  # each item is right where its row is
        value = row_score(metric, prediction, row["outputs"], row["task"], key)
        return [(depth, value) for depth, _ in items]
    return [(depth, row_score(metric, prediction, refs, row["task"], key))
            for depth, refs in items]


def compact(items: Iterable[Item]) -> list[list[float]]:
    """Items as scores.json stores them."""
    return [[round(d, DEPTH_DECIMALS), s] for d, s in items]


@dataclass(frozen=True)
class DepthCell:
    """One (task, length, depth bin) cell."""

    bin: int
    lo: float
    hi: float
    score: float | None  # mean item score x 100; None without items
    n: int  # items scored
    too_few: bool  # n < min_samples (for a task group: any member's cell)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def bin_cells(items: Sequence[Sequence[float]], bins: int, min_samples: int) -> list[DepthCell]:
    """The items of one (task, length) in `bins` cells."""
    sums, counts = [0.0] * bins, [0] * bins
    for depth, score in items:
        b = bin_of(depth, bins)
        sums[b] += score
        counts[b] += 1
    return [DepthCell(b, b / bins, (b + 1) / bins,
                      100 * sums[b] / counts[b] if counts[b] else None, counts[b],
                      counts[b] < min_samples)
            for b in range(bins)]


def group_cells(members: Sequence[Sequence[DepthCell]], bins: int) -> list[DepthCell]:
    """Cells of a task group (all niah tasks): per bin, the plain mean of the members' scores
    (each task weighs the same, as RULER averages tasks); flagged when any member's cell is
    flagged or empty."""
    out = []
    for b in range(bins):
        cells = [m[b] for m in members]
        scores = [c.score for c in cells if c.score is not None]
        out.append(DepthCell(b, b / bins, (b + 1) / bins,
                             sum(scores) / len(scores) if scores else None,
                             sum(c.n for c in cells),
                             any(c.too_few or c.score is None for c in cells)))
    return out


@dataclass
class DepthTables:
    """Score by depth bin for every task and length that has items, and for all niah tasks."""

    bins: int
    min_samples: int
    tasks: list[str]
    lengths: list[int]
    cells: dict[str, dict[int, list[DepthCell]]]  # task -> length -> bins
    niah: dict[int, list[DepthCell]]  # length -> bins (empty without niah tasks)
    niah_tasks: list[str]

    def as_json(self) -> dict[str, Any]:
        return {
            "bins": self.bins, "min_samples": self.min_samples,
            "edges": [b / self.bins for b in range(self.bins + 1)],
            "task_order": self.tasks, "lengths": self.lengths,
            "tasks": {t: {str(L): [c.as_json() for c in by_bin] for L, by_bin in by_L.items()}
                      for t, by_L in self.cells.items()},
            "niah": {str(L): [c.as_json() for c in by_bin] for L, by_bin in self.niah.items()},
            "niah_tasks": self.niah_tasks,
        }


def depth_table(items: Mapping[str, Sequence[Sequence[float]]], bins: int,
                min_samples: int = DEFAULT_MIN_SAMPLES) -> DepthTables:
    """Bin `items` ("task/L" -> [[depth, score], ...], as in scores.json)."""
    cells: dict[str, dict[int, list[DepthCell]]] = {}
    for key, cell_items in items.items():
        if not cell_items:
            continue
        task, length = cell_of(key)
        cells.setdefault(task, {})[length] = bin_cells(cell_items, bins, min_samples)
    tasks = in_task_order(cells)
    cells = {t: dict(sorted(cells[t].items())) for t in tasks}
    lengths = sorted({L for by_L in cells.values() for L in by_L})
    niah_tasks = [t for t in tasks
                  if t in TASKS and get_family(TASKS[t].family.name).depth_group == GROUP]
    niah = {}
    for L in lengths:
        members = [cells[t][L] if L in cells[t] else bin_cells([], bins, min_samples)
                   for t in niah_tasks]
        if members:
            niah[L] = group_cells(members, bins)
    return DepthTables(bins, min_samples, tasks, lengths, cells, niah, niah_tasks)
