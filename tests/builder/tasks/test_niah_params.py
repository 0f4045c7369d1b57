"""A needle task's parameters are checked when it is registered (the combinations its family
can build, one line for the others), and every combination that registers builds rows its own
verify accepts: gold items in text order on the noise and distractor haystacks too."""

from __future__ import annotations

import subprocess
import sys
from types import MappingProxyType

import pytest

from ruler.benchmarks.oneruler.tasks import ONERULER_NIAH
from ruler.benchmarks.ruler.tasks import NIAH
from ruler.catalog.tasks import TASKS, TaskSpec, params_problem, register_task
from ruler.kernel.errors import RulerError


def _niah(name: str, **params) -> TaskSpec:
    base = dict(type_haystack="noise", type_needle_k="words", type_needle_v="numbers",
                num_needle_k=1, num_needle_v=1, num_needle_q=1)
    return TaskSpec(name, NIAH, MappingProxyType({**base, **params}))


def test_every_catalog_task_is_one_its_family_can_build():
    assert [name for name, spec in TASKS.items() if params_problem(spec)] == []


@pytest.mark.parametrize("params, message", [
    (dict(type_haystack="essay", num_needle_k=41), "41 needles on an essay haystack"),
    (dict(type_haystack="essay", num_needle_k=5, num_needle_v=9), "45 needles"),
    (dict(type_haystack="book"), "type_haystack 'book' is none of essay, noise, needle"),
    (dict(type_needle_v="letters"), "type_needle_v 'letters' is none of"),
    (dict(num_needle_v=0), "num_needle_v must be a whole number >= 1, got 0"),
    (dict(num_needle_q="2"), "num_needle_q must be a whole number >= 1, got '2'"),
])
def test_a_task_its_family_cannot_build_is_refused_when_registered(params, message):
    with pytest.raises(RulerError) as e:
        register_task(_niah("niah_unbuildable", **params))
    assert message in str(e.value) and "\n" not in str(e.value)
    assert "family 'niah' cannot build these parameters" in str(e.value)
    assert "niah_unbuildable" not in TASKS.names()


def test_oneruler_needles_are_checked_too():
    params = dict(type_haystack="book", type_needle_k="words", type_needle_v="numbers",
                  num_needle_k=1, num_needle_v=1, num_needle_q=2, relevant_needle=True)
    with pytest.raises(RulerError, match="num_needle_q 2 > num_needle_k 1"):
        register_task(TaskSpec("or_unbuildable", ONERULER_NIAH, MappingProxyType(params)))
    assert "or_unbuildable" not in TASKS.names()


#: Registers needle tasks with several gold needles on line haystacks (which upstream places
#: from the end: needle 0 goes in last), builds them and verifies the build, in a process of
#: its own so this session's catalog keeps its tasks.
SCRIPT = r"""
import sys
from types import MappingProxyType
from ruler.catalog.tasks import TaskSpec, register_task
from ruler.benchmarks.ruler.tasks import NIAH
from ruler.commands.main import main

for name, haystack, k, v, q in (("niah_noise_2v", "noise", 1, 2, 1),
                                ("niah_needle_2q", "needle", 3, 1, 2),
                                ("niah_noise_uuid_3v", "noise", 1, 3, 1)):
    register_task(TaskSpec(name, NIAH, MappingProxyType(dict(
        type_haystack=haystack, type_needle_k="uuids" if "uuid" in name else "words",
        type_needle_v="uuids" if "uuid" in name else "numbers",
        num_needle_k=k, num_needle_v=v, num_needle_q=q))))
out = sys.argv[1]
code = main(["build", "--tokenizer", "gpt-4", "--tasks",
             "niah_noise_2v,niah_needle_2q,niah_noise_uuid_3v", "--lengths", "1024",
             "--samples", "6", "--out", out, "--workers", "1", "--no-progress"])
sys.exit(code or main(["verify", out, "--full", "--no-load"]))
"""


@pytest.mark.build
@pytest.mark.subprocess
def test_several_gold_needles_on_a_line_haystack_build_rows_verify_accepts(tmp_path):
    """Such rows used to list their gold positions last needle first, which verify rejects
    ("not ... in order")."""
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "OK: 3 files, 18 rows" in proc.stdout
