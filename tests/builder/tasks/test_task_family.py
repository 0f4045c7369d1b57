"""A task family is one registered unit: a family and a task defined here, outside the package
(no product file edited), build, verify, load and score like the 13.

The toy family ("say the magic number") has its own generator on the real machinery (template
ends, pieces cut at clean junctions, the per-sample RNG, the fitter and exact token counts of a
real tokenizer), its own row check and gold spans. It reaches `ruler` two ways, each in a
`ruler` process of its own so this test session's catalog stays the 13 tasks:

- as a plug-in: an installed distribution (a dist-info folder on PYTHONPATH) whose entry point
  in group `ruler.task_families` names `register` below; the build's workers are spawned, so
  they find it the way the CLI does, by the entry point, not by inheriting it;
- registered in the process that calls the CLI (`register()`, then `ruler.commands.main.main`), with
  forked workers, which inherit it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

import pytest

from ruler.catalog.base import Draft, TaskGenerator, joined, template_ends
from ruler.catalog.family import TaskFamily, get_family, register_family
from ruler.catalog.tasks import TASKS, FamilySpec, TaskSpec, register_task
from ruler.kernel.errors import RulerError
from ruler.kernel.rng import below

# --- the toy family ------------------------------------------------------------------------------

TOY = FamilySpec(
    name="toy_magic",
    template="Remember the magic number hidden in the text below.\n{context}\nWhat is the "
             "magic number?",
    answer_prefix=" The magic number is",
    tokens_to_generate=16,
    metric="string_match_all",
)
TOY_TASK = TaskSpec("toy_task", TOY, MappingProxyType({"digits": 7}))
FILLER = "The grass is green and the sky is blue."
NEEDLE = "The magic number is {}."
_NEEDLE = re.compile(r"The magic number is (\d+)\.")


class MagicNumberGenerator(TaskGenerator):
    """Filler lines with one line holding the magic number, at a random line."""

    unit = "filler lines"
    calibration_step = 25

    def draft(self, index: int, rng, size: int) -> Draft:
        digits = self.spec.params["digits"]
        number = str(10 ** (digits - 1) + below(rng, 9 * 10 ** (digits - 1)))  # size-free first
        slot = below(rng, size + 1)
        lines = [FILLER] * size
        lines.insert(slot, NEEDLE.format(number))
        head, tail = template_ends(TOY.template)
        text, pieces = joined(head, lines, "\n", tail, clean=True)
        start = len(head) + slot * (len(FILLER) + 1)
        return Draft(input=text, answer_prefix=TOY.answer_prefix, outputs=(number,),
                     gold_spans=((start, start + len(lines[slot])),),
                     context_span=(len(head), len(text) - len(tail)), size=size,
                     pieces=pieces)


def check_toy_row(row: Mapping) -> str | None:
    found = _NEEDLE.findall(row["input"])
    return None if found == list(row["outputs"]) else \
        f"magic numbers {found} in the input, outputs are {list(row['outputs'])}"


def toy_gold_spans(row: Mapping, generator=None):
    head, tail = template_ends(TOY.template)
    text = row["input"]
    if not text.startswith(head) or not text.endswith(tail):
        return "task text not found"
    end = len(text) - len(tail)
    return [m.start() for m in _NEEDLE.finditer(text, len(head), end)], (len(head), end)


TOY_FAMILY = TaskFamily(spec=TOY, generator=MagicNumberGenerator, check_row=check_toy_row,
                        gold_spans=toy_gold_spans)


def register() -> None:
    """What a plug-in's entry point (or a notebook) calls: the family, then its task."""
    register_family(TOY_FAMILY)
    register_task(TOY_TASK)


# --- running ruler with the toy family ------------------------------------------------------------

# This module, importable by name in a `ruler` process (pytest imports it from its folder).
MODULE_ROOT = Path(__file__).resolve().parents[__name__.count(".")]

REGISTERED_HERE = r"""
import sys
from %s import register
register()
from ruler.commands.main import main
sys.exit(main(sys.argv[1:]))
""" % __name__


def _plugin_site(tmp_path: Path) -> Path:
    """A folder that, on PYTHONPATH, is an installed distribution with this module's
    `register` in the `ruler.task_families` entry point group."""
    site = tmp_path / "site"
    dist = site / "ruler_toy_family-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ruler-toy-family\n"
                                   "Version: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[ruler.task_families]\ntoy = {__name__}:register\n")
    return site


def _ruler(argv: list[str], paths: list[Path], timeout: float = 300,
           script: str | None = None, status: int = 0) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, paths)))
    cmd = [sys.executable, "-c", script, *argv] if script else [sys.executable, "-m", "ruler",
                                                               *argv]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    assert proc.returncode == status, f"{argv}: {proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


BUILD = ["build", "--tokenizer", "gpt-4", "--tasks", "toy_task", "--lengths", "4096",
         "--samples", "3", "--workers", "2", "--no-progress"]


@pytest.mark.slow
def test_a_toy_family_from_outside_builds_verifies_loads_and_scores(tmp_path):
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ruler.builder.schema import ROW_SCHEMA

    site, out = _plugin_site(tmp_path), tmp_path / "data"
    paths = [site, MODULE_ROOT]
    _ruler([*BUILD, "--out", str(out), "--start-method", "spawn"], paths)
    rel = "data/gpt-4/toy_task/4096.parquet"
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["files"]) == [rel] and manifest["builds"]["gpt-4"]["tasks"] == \
        ["toy_task"]
    card = (out / "README.md").read_text()
    assert "| `toy_task` | toy_magic | digits=7 | 16 | `string_match_all` | — | yes |" in card

    rows = datasets.load_dataset(str(out), "gpt-4", split="4096").to_list()
    assert [r["index"] for r in rows] == [0, 1, 2] and {r["task"] for r in rows} == {"toy_task"}
    for r in rows:
        assert check_toy_row(r) is None and len(r["outputs"][0]) == 7
        assert 4096 - 16 <= r["length"] <= 4096  # fitted: a filler line is ~10 tokens
        assert r["tokens_to_generate"] == 16 and r["metric"] == "string_match_all"
        assert len(r["gold_token_positions"]) == 1 and 0 < r["gold_depths"][0] < 1
    assert len({r["outputs"][0] for r in rows}) == 3
    assert datasets.load_dataset(str(out), "gpt-4--toy_task", split="4096").num_rows == 3

    # verify: every row re-tokenized with its gold re-derived (the family's gold_spans), the
    # family's check_row, and all 3 rows rebuilt through the family's generator
    report = _ruler(["verify", str(out), "--full", "--regenerate", "3"], paths).stdout
    # rows, bytes, content, rows, re-tokenized, gold re-derived, answers, rebuilt
    assert re.search(rf"^{rel} +3 +ok +ok +ok +3 +3 +ok +3$", report, re.M), report

    # the same rows from a process that registered the family itself, with forked workers
    here = tmp_path / "here"
    _ruler([*BUILD, "--out", str(here), "--start-method", "fork"], [MODULE_ROOT],
           script=REGISTERED_HERE)
    assert pq.read_table(here / rel).to_pylist() == pq.read_table(out / rel).to_pylist()

    # a row whose magic number was changed: verify finds it through the family's check_row
    tampered = pq.read_table(here / rel).to_pylist()
    tampered[1]["input"] = tampered[1]["input"].replace(tampered[1]["outputs"][0], "1000000")
    pq.write_table(pa.Table.from_pylist(tampered, schema=ROW_SCHEMA), here / rel)
    report = _ruler(["verify", str(here), "--no-load"], paths, status=1).stdout
    assert "row 1: answer not recoverable: magic numbers ['1000000'] in the input" in report, \
        report

    # scored as any task: the right answers score 100, one depth item per row (the family's
    # default depth rule: the first gold item's depth)
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"tokenizer": "gpt-4", "task": "toy_task",
                                         "max_seq_length": 4096, "index": r["index"],
                                         "prediction": f" {r['outputs'][0]}."}) + "\n"
                             for r in rows))
    _ruler(["score", "--predictions", str(preds), "--data", str(out)], paths)
    scores = json.loads((tmp_path / "preds.jsonl.scores" / "scores.json").read_text())
    assert [(c["task"], c["score"]) for c in scores["cells"]] == [("toy_task", 100.0)]
    assert scores["depth_items"]["toy_task/4096"] == [
        [round(r["gold_depths"][0], 6), 1.0] for r in rows]


def test_a_registered_task_or_family_never_replaces_a_known_one():
    get_family("niah")  # registered by its module, imported on first use
    with pytest.raises(RulerError, match="in the catalog already"):
        register_task(TaskSpec("niah_single_1", TOY, MappingProxyType({"digits": 7})))
    with pytest.raises(RulerError, match="in the catalog already with other constants"):
        register_task(TaskSpec("toy_other", FamilySpec("niah", TOY.template, TOY.answer_prefix,
                                                       16, "string_match_all")))
    with pytest.raises(RulerError, match="registered already"):
        register_family(TaskFamily(spec=TASKS["niah_single_1"].family,
                                   generator=MagicNumberGenerator, check_row=check_toy_row,
                                   gold_spans=toy_gold_spans))
    with pytest.raises(RulerError, match="names a folder"):
        register_task(TaskSpec("toy/task", TOY))
    assert "toy_other" not in TASKS and "toy/task" not in TASKS  # nothing half-registered
    assert TASKS["niah_single_1"].family.template != TOY.template
    assert get_family("niah").generator.__name__ == "NiahGenerator"


@pytest.mark.subprocess
def test_a_task_without_registered_family_code_is_one_line(tmp_path):
    """A plug-in that registers its task but not its family's code: the build says so."""
    script = r"""
import sys
from types import MappingProxyType
from ruler.catalog.tasks import FamilySpec, TaskSpec, register_task
register_task(TaskSpec("orphan_task", FamilySpec("orphan", "{context}", "", 8, "string_match_all")))
from ruler.commands.main import main
sys.exit(main(sys.argv[1:]))
"""
    proc = subprocess.run([sys.executable, "-c", script, "build", "--tokenizer", "gpt-4",
                           "--tasks", "orphan_task", "--samples", "1", "--workers", "1",
                           "--no-progress", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "ruler: error: no code is registered for task family 'orphan'"), proc.stderr
    assert "Traceback" not in proc.stderr
