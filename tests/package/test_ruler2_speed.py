"""perf.ruler2_speed runs NeMo-Skills' generators with exactly the arguments its
prepare_data.py passes: the reference README in ../shared lists them per task, as run."""

from __future__ import annotations

import re

from helpers.paths import REFERENCE
from perf.ruler2_speed import upstream_arguments
from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS


def test_each_task_gets_upstreams_generator_and_arguments():
    readme = (REFERENCE / "nemo-skills-ruler2" / "llama-3.1" / "README.md").read_text()
    table = dict(re.findall(r"^\| (\w+) \| (prepare_\w+ \| `[^`]+`) \|$", readme, re.M))
    assert sorted(table) == sorted(RULER2_TASKS)
    for task in RULER2_TASKS:
        generator, args = upstream_arguments(task)
        assert f"{generator} | `{' '.join(args)}`" == table[task], task
