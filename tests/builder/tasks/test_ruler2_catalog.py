"""RULERv2's 12 tasks in the catalog: names in NeMo-Skills' order, metrics as its
`prepare_init.py` assigns them, no output reserved in `length`, and the benchmark table that
keeps them out of a v1 build."""

from __future__ import annotations

import pytest

from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS
from ruler.catalog.benchmarks import (
    BENCHMARK_SPECS,
    BENCHMARKS,
    benchmark_id,
    get_benchmark,
    in_task_order,
)
from ruler.catalog.family import family_of
from ruler.catalog.tasks import TASKS
from ruler.kernel.errors import RulerError

NAMES = ("mk_niah_basic", "mk_niah_easy", "mk_niah_medium", "mk_niah_hard", "mv_niah_basic",
         "mv_niah_easy", "mv_niah_medium", "mv_niah_hard", "qa_basic", "qa_easy", "qa_medium",
         "qa_hard")


def upstream_metric(task: str) -> str:
    """`prepare_init.py`'s rule, restated: medium/hard mk -> multichoice; mv_niah_medium ->
    2steps; a name with "qa" -> part; the rest -> all."""
    if task in ("mk_niah_medium", "mk_niah_hard"):
        return "multichoice"
    if task == "mv_niah_medium":
        return "ruler2_2steps"
    return "ruler2_part" if "qa" in task else "ruler2_all"


def test_the_twelve_tasks_join_the_catalog_after_the_thirteen():
    assert RULER2_TASKS == NAMES
    ordered = in_task_order(TASKS)
    assert tuple(ordered)[:len(STANDARD_TASKS) + len(NAMES)] == (*STANDARD_TASKS, *NAMES)
    assert not set(NAMES) & set(STANDARD_TASKS)


@pytest.mark.parametrize("task", NAMES)
def test_metric_budget_and_family(task):
    spec = TASKS[task]
    assert spec.metric == upstream_metric(task)
    assert spec.family.answer_prefix == ""
    assert spec.tokens_to_generate == 16384 and get_benchmark("ruler2").length_rule == "prompt"
    assert family_of(task).name == spec.family.name
    assert task in BENCHMARKS["ruler2"] and task not in BENCHMARKS["ruler"]


def test_v1_rows_reserve_their_output():
    assert get_benchmark("ruler").length_rule == "prompt+tokens_to_generate"


def test_benchmark_table():
    # ruler's own (an installed plug-in's benchmark may follow: issue 40.27)
    assert {b: BENCHMARKS[b] for b in BENCHMARK_SPECS.builtin_names()} == {
        "ruler": STANDARD_TASKS, "ruler2": NAMES, "oneruler": ONERULER_TASKS}
    assert not set(STANDARD_TASKS) & (set(NAMES) | set(ONERULER_TASKS))
    assert [benchmark_id(n) for n in ("v1", "ruler", "v2", "ruler2")] == [
        "ruler", "ruler", "ruler2", "ruler2"]
    with pytest.raises(RulerError, match="unknown benchmark 'v3'"):
        benchmark_id("v3")
