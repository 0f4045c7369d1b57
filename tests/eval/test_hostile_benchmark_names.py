"""Facts are carried, never guessed (issue 41): a benchmark registered outside ruler's own, with
names chosen to mislead any code that reads names, is built, verified, evaluated, scored,
reported and exported as what its records say, by every command.

- benchmark `hostile` lists RULER's own `niah_single_1` and a task of its own named like one of
  RULER's, `niah_single_9` (the needle family, other parameters); its rows count the prompt
  alone (`length_rule` "prompt", unlike RULER's), it aggregates its own way (the worst task per
  length) and has no weighted averages, effective length or failure labels;
- its tokenizer folder is called `x--oneruler-ko`, like another benchmark's config;
- uninstalled (unregistered), its build folder and its results are refused in one line naming
  it, never reported as RULER's.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Sequence

import pytest

from helpers.builds import rows
from helpers.paths import TOKENIZERS
from ruler.benchmarks.ruler.tasks import NIAH
from ruler.builder.pipeline import BuildConfig, run_build
from ruler.catalog.benchmarks import BENCHMARK_SPECS, Aggregation, Benchmark
from ruler.catalog.length_rules import PROMPT_ONLY
from ruler.catalog.tasks import TASKS, TaskSpec, register_task
from ruler.commands.main import main

pytestmark = [pytest.mark.build]

L = 1024
FOLDER = "x--oneruler-ko"
CONFIG = f"{FOLDER}--hostile"
TASK = TaskSpec("niah_single_9", NIAH, MappingProxyType(dict(
    type_haystack="noise", type_needle_k="words", type_needle_v="numbers", num_needle_k=2,
    num_needle_v=1, num_needle_q=1)))


@dataclass(frozen=True)
class Worst(Aggregation):
    """The benchmark's own aggregation: a length scores as its worst task."""

    def per_length(self, scores: Sequence[float]) -> float:
        return min(scores)

    def per_length_text(self, tasks: int) -> str:
        return f"the lowest of the {tasks} task scores"


HOSTILE = Benchmark(id="hostile", title="Hostile", tasks=("niah_single_1", TASK.name),
                    config_suffix="hostile", length_rule=PROMPT_ONLY, variants=("",),
                    aggregation=Worst(text="(this benchmark's own)."))


@pytest.fixture(scope="module")
def registered():
    register_task(TASK)
    BENCHMARK_SPECS.register(HOSTILE)
    yield
    BENCHMARK_SPECS.unregister("hostile")
    TASKS.unregister(TASK.name)


@pytest.fixture(scope="module")
def built(registered, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    shutil.copytree(TOKENIZERS / "llama-3.1", root / FOLDER)
    out = root / "build"
    run_build(BuildConfig(tokenizer=str(root / FOLDER), benchmark="hostile", lengths=(L,),
                          samples=2, out=out, workers=1, progress=False))
    return out


@pytest.fixture(scope="module")
def run(built) -> Path:
    out = built.parent / "run"
    assert main(["eval", "--backend", "fake", "--model", "m", "--data", str(built),
                 "--model-tokenizer", str(built.parent / FOLDER), "--out", str(out),
                 "--no-progress", "--render-workers", "0", "--no-plots"]) == 0
    return out


def test_the_build_records_its_benchmark_and_length_rule(built):
    manifest = json.loads((built / "manifest.json").read_text())
    assert list(manifest["builds"]) == [CONFIG]
    build = manifest["builds"][CONFIG]
    assert build["benchmark"] == "hostile" and "language" not in build
    assert {f["length_rule"] for f in manifest["files"].values()} == {PROMPT_ONLY}
    # the rows count the prompt alone: their length is below L by at least their budget's room
    assert all(r["length"] <= L for r in rows(built, CONFIG, "niah_single_1", L))


def test_verify_reads_the_recorded_length_rule(built, capsys):
    assert main(["verify", str(built), "--tokenizer", f"{CONFIG}={built.parent / FOLDER}",
                 "--full"]) == 0, capsys.readouterr().out


def test_the_run_and_the_scores_carry_the_recorded_facts(run):
    scores = json.loads((run / "scores.json").read_text())
    assert (scores["benchmark"], scores["axes"]) == ("hostile", {})
    cells = {c["task"]: c for c in scores["cells"]}
    assert set(cells) == {"niah_single_1", "niah_single_9"}
    assert {(c["length_rule"], c["metric"], c["score"]) for c in cells.values()} == {
        (PROMPT_ONLY, "string_match_all", 100.0)}
    # RULER's failure labels are RULER's benchmark's: not run on another benchmark's rows
    assert all(c.get("failures") is None for c in cells.values())


def test_the_report_is_the_benchmarks_own(run):
    report = (run / "report.md").read_text()
    assert report.startswith("# Hostile results: m")
    assert "RULER" not in report.split("## Rows")[0]
    assert "Effective length" not in report and "wAvg" not in report
    assert "the lowest of the 2 task scores (this benchmark's own)." in report
    assert "Language" not in report and "failure mode" not in report.lower()
    data = json.loads((run / "report.json").read_text())
    assert data["benchmark"] == "hostile" and data["wavg_inc"] is None


def test_the_card_says_nothing_of_rulers(built):
    card = (built / "README.md").read_text()
    assert card.split("\n---\n", 1)[1].lstrip().startswith("# Hostile, built exactly")
    for ruler_only in ("13 synthetic tasks", "string_match_part", "hsieh2024ruler",
                       "Checked with a real model", "Paul Graham"):
        assert ruler_only not in card, ruler_only


def test_uninstalled_its_folders_and_results_are_refused_in_one_line(built, run, capsys):
    BENCHMARK_SPECS.unregister("hostile")
    try:
        for argv in (["report", str(run), "--no-plots"], ["verify", str(built)],
                     ["score", "--predictions", str(run / "predictions.jsonl"), "--data",
                      str(built)]):
            capsys.readouterr()
            assert main(argv) == 2, argv
            err = capsys.readouterr().err.strip()
            assert len(err.splitlines()) == 1 and "benchmark 'hostile' is not installed" in err
            assert "RULER results" not in err and "Traceback" not in err
    finally:
        BENCHMARK_SPECS.register(HOSTILE)


def test_compare_and_export_take_the_benchmark_from_the_records(built, run, tmp_path, capsys):
    assert main(["compare", str(run), str(run), "--out", str(tmp_path / "cmp"),
                 "--no-plots"]) == 0
    assert (tmp_path / "cmp" / "compare.md").read_text().startswith("# Hostile comparison")
    capsys.readouterr()
    # its rows' metric is RULER's, but the benchmark exports no lm-eval tasks: one line
    assert main(["export", "lm-eval", str(built), "--out", str(tmp_path / "lm")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "benchmark 'hostile' does not export" in err
