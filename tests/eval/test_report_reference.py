"""Published results beside a run (`ruler report RUN --reference NAME`, `ruler compare RUN
reference:NAME`) and the paper's Table 3 over runs of different models (`ruler report RUN RUN
--reference NAME`), on a real build of all 13 tasks at 4K (qwen2.5, 3 samples each) and
fake-backend runs named after a published model.

The published values come from the registry (checked against their sources in
test_published_results.py); here: that each is placed where it belongs relative to the run's
interval, that the set-up differences are named, and that the LaTeX table compiles (pdflatex,
where installed: `apt-get install texlive-latex-base texlive-latex-recommended`).
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.builds import build
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.catalog.variants import NoContext
from ruler.commands.main import main
from ruler.eval.records.scores_record import SCORES_FORMAT
from ruler.eval.report.reference import comparisons, mark_plot
from ruler.eval.report.run import load_scores, write_report

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
PUBLISHED = "ruler-readme/meta-llama-3.1-8b-instruct"  # 4K: 95.5, effective 32K


def _eval(data: Path, out: Path, model: str, *extra: str) -> Path:
    assert main(["eval", "--backend", "fake", "--model", model, "--model-tokenizer", "qwen2.5",
                 "--data", str(data), "--out", str(out), "--no-progress", "--no-report",
                 *extra]) == 0
    return out


def _blanked(gold: Path, out: Path, data: Path, blank: int) -> Path:
    """A copy of a gold run's predictions with the first `blank` answers (in file order)
    emptied, scored by `ruler score` into `out`."""
    records = [json.loads(x) for x in (gold / "predictions.jsonl").read_text().splitlines()]
    for r in records[:blank]:
        r["prediction"] = ""
    out.mkdir()
    (out / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["score", "--predictions", str(out / "p.jsonl"), "--data", str(data),
                 "--out", str(out), "--no-plots"]) == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reference")
    data = root / "data"
    build(data, "qwen2.5", STANDARD_TASKS, (4096,), samples=3, workers=1)
    gold = _eval(data, root / "gold", LLAMA)
    return {"data": data, "gold": gold, "root": root,
            "close": _blanked(gold, root / "close", data, 2),
            "empty": _eval(data, root / "empty", "fake/other-model", "--fake-answers", "empty")}


@pytest.mark.build
@pytest.mark.subprocess
def test_the_report_places_the_published_value_against_the_run_s_interval(runs, tmp_path,
                                                                         capsys):
    out = tmp_path / "gold"
    assert main(["report", str(runs["gold"]), "--out", str(out), "--reference",
                 "meta-llama-3.1-8b-instruct"]) == 0
    printed = capsys.readouterr().out
    assert f"published {PUBLISHED}: the published score lies 4K below (of the run's 95 % " \
           f"interval); effective length run 4K, published 32K" in printed
    md = (out / "report.md").read_text()
    assert f"## Beside the published result `{PUBLISHED}`" in md
    assert "| 4K | 95.5 | 100.00 | [100.0, 100.0] | +4.50 | **below** (run higher) |" in md
    assert "| 8K | 93.8 | n/a (not run) | — | — | — |" in md
    assert "| Effective length | 32K | 4K | | | |" in md
    assert "- Samples: published from 500 samples per task and length, this run from 3" in md
    assert "- Lengths: published at 8K, 16K, 32K, 64K, 128K, which the run did not run" in md
    assert "Model:" not in md  # the run's model is the published one
    data = json.loads((out / "report.json").read_text())
    (ref,) = data["references"]
    assert ref["by_length"][0] == {"task": None, "max_seq_length": 4096, "published": 95.5,
                                   "published_derived": False, "run": 100.0,
                                   "ci95": [100.0, 100.0], "difference": 4.5,
                                   "published_position": "below", "run_missing_because": None}
    assert ref["published"]["source"]["commit"] == "c3f5e3b4f87f97e048793bb510a3a6b19a46bf3a"
    rows = list(csv.DictReader((out / "report_reference.csv").open()))
    assert rows[0]["published_position"] == "below" and len(rows) == 6
    assert (out / "scores_overall.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.build
@pytest.mark.subprocess
def test_a_run_within_noise_of_the_published_value_is_inside_and_per_task_lines(runs):
    """Two answers of 39 blanked: the 4K mean (94.87) has an interval holding 95.5; the
    maintainer's per-task GPT-4 scores (issue #63) are compared task by task."""
    r = write_report(runs["close"], plots=False,
                     references=[PUBLISHED, "ruler-issue-63/gpt-4-1106-preview"])
    llama, gpt4 = r.references
    (line,) = [x for x in llama.by_length if x.length == 4096]
    assert line.run == pytest.approx((11 * 100 + 2 * 200 / 3) / 13, abs=0.01)
    assert line.interval.low < 95.5 < line.interval.high and line.position == "inside"
    assert len(gpt4.by_task) == 13 and gpt4.by_length[0].derived
    qa2 = next(x for x in gpt4.by_task if x.task == "qa_2")
    assert (qa2.published, qa2.run, qa2.position) == (70.0, 100.0, "inside")
    assert any(d.startswith("Model: the run's model is meta-llama/Llama-3.1-8B-Instruct; "
                            "the published result is of GPT-4-1106-preview")
               for d in gpt4.differences)
    assert "| 4K | 96.6 † |" in (runs["close"] / "report.md").read_text()


@pytest.mark.build
@pytest.mark.subprocess
def test_the_model_hint_base_mode_and_a_partial_task_set(runs, tmp_path):
    r = write_report(runs["gold"], tmp_path / "hint", plots=False)
    assert r.reference_hint == [PUBLISHED]
    assert f"Published results exist for this model: `{PUBLISHED}`" in \
        (tmp_path / "hint" / "report.md").read_text()
    base = _eval(runs["data"], tmp_path / "base", LLAMA, "--mode", "base", "--tasks",
                 "niah_single_1,vt", "--allow-length-mismatch")
    (c,) = write_report(base, plots=False, references=[PUBLISHED]).references
    assert "Prompt mode: published in chat mode, this run in base mode (chat template or " \
           "not, where the answer prefix sits): not the same prompts." in c.differences
    assert any(d.startswith("Tasks: the run has 2 of RULER's 13 tasks") for d in c.differences)
    assert c.by_length[0].run is None and "not comparable" in c.by_length[0].why_no_run


@pytest.mark.build
@pytest.mark.subprocess
def test_published_markers_on_the_figure(runs, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    (c,) = comparisons(write_report(runs["gold"], tmp_path, plots=False), [PUBLISHED])
    fig, ax = plt.subplots()
    mark_plot(ax, [c], ["4K"], [4096])
    (line,) = ax.get_lines()
    assert list(line.get_ydata()) == [95.5] and line.get_label().startswith("published: ")
    plt.close(fig)


@pytest.mark.build
@pytest.mark.subprocess
def test_compare_with_a_published_result(runs, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", str(runs["empty"]), f"reference:{PUBLISHED}", "--out",
                 str(out)]) == 0
    md = (out / "compare.md").read_text()
    assert "| 4K | 95.5 | 0.00 | [0.0, 0.0] | -95.50 | **above** (run lower) |" in md
    assert "- Model: the run's model is fake/other-model" in md
    assert json.loads((out / "compare.json").read_text())["by_length"][0][
        "published_position"] == "above"
    assert (out / "compare.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["compare", str(runs["empty"]), "reference:no-such-model"]) == 2
    assert "no published result named 'no-such-model'" in capsys.readouterr().err


def test_a_ruler2_run_has_no_published_counterpart(tmp_path, capsys):
    """RULERv2's tasks: the registry holds RULER v1 results only, and says so."""
    cells = [{"task": t, "max_seq_length": 8192, "metric": "ruler2", "score": 50.0, "rows": 2,
              "scored": 2, "nulls": 0, "skipped": 0, "errors": 0, "missing": 0,
              "data_sha256": "x", "skip_reasons": []} for t in ("mk_niah_basic", "qa_hard")]
    (tmp_path / "scores.json").write_text(json.dumps({
        "format": SCORES_FORMAT, "config": "llama-3.1--v2", "model": LLAMA,
        "dataset": {"spec": "d", "revision": None, "files": {}}, "cells": cells}))
    assert main(["report", str(tmp_path), "--reference", PUBLISHED, "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "no published results for RULERv2 in the registry (it holds RULER results " \
           "only)" in err
    assert not (tmp_path / "report.md").exists()
    assert load_scores(tmp_path).model == LLAMA


@pytest.mark.build
@pytest.mark.subprocess
def test_two_runs_and_a_published_row_make_one_table_3_that_compiles(runs, tmp_path, capsys):
    out = tmp_path / "t3"
    assert main(["report", str(runs["gold"]), str(runs["empty"]), "--reference", PUBLISHED,
                 "--out", str(out)]) == 0
    md = (out / "table3.md").read_text()
    lines = [x for x in md.splitlines() if x.startswith("| ")]
    assert lines[0] == "| Models | Claimed Length | Effective Length | 4K | 8K | 16K | 32K | " \
                       "64K | 128K | Avg. | wAvg. (inc) | wAvg. (dec) |"
    assert lines[1].startswith("| Llama2 (7B) | 4K | | 85.6 |")
    # the run's averages are over 4K alone, the published row's over 4K..128K: marked §
    assert lines[2] == (f"| {LLAMA} | 128K | 4K | <ins>100.0</ins> [100.0, 100.0] | — | — | — "
                        f"| — | — | 100.0 § [100.0, 100.0] | 100.0 § [100.0, 100.0] | "
                        f"100.0 § [100.0, 100.0] |")
    assert lines[3] == ("| Llama3.1 (8B) † | 128K | 32K | <ins>95.5</ins> | <ins>93.8</ins> | "
                        "<ins>91.6</ins> | <ins>87.4</ins> | 84.7 | 77.0 | 88.3 | 85.4 | 91.3 |")
    assert lines[4].startswith("| fake/other-model | — | < 4K | 0.0 [0.0, 0.0] |")
    tex = (out / "table3.tex").read_text()
    assert r"\toprule" in tex and r"\underline{95.5}" in tex and r"\bottomrule" in tex
    assert "fake/other-model" in tex and r"Llama3.1 (8B)$^\dagger$" in tex
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.skip("pdflatex not installed (apt-get install texlive-latex-base "
                    "texlive-latex-recommended): the LaTeX was checked as text only")
    (out / "doc.tex").write_text("\\documentclass{article}\n\\usepackage{booktabs}\n"
                                 "\\begin{document}\n\\input{table3.tex}\n\\end{document}\n")
    done = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                          cwd=out, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    assert (out / "doc.pdf").read_bytes()[:5] == b"%PDF-"


@pytest.mark.slow  # end to end: a no-context build and its eval
@pytest.mark.build
@pytest.mark.subprocess
def test_the_no_context_baseline_beside_the_run(runs, tmp_path, capsys):
    """The same model on the --no-context variant: a task it answers without the haystack
    (here qa_1, answered from the references by hand) is named in the health section."""
    data = tmp_path / "data"  # a copy: the module's build keeps its one config
    shutil.copytree(runs["data"], data)
    build(data, "qwen2.5", ("qa_1", "vt"), (4096,), samples=3, workers=1, variant=NoContext())
    empty = _eval(data, tmp_path / "nc", LLAMA, "--tokenizer-config", "qwen2.5--nocontext",
                  "--fake-answers", "empty", "--mode", "chat")
    gold = _eval(data, tmp_path / "nc-gold", LLAMA, "--tokenizer-config",
                 "qwen2.5--nocontext", "--mode", "chat")
    records = [json.loads(x) for x in (empty / "predictions.jsonl").read_text().splitlines()]
    answers = {(r["task"], r["index"]): r["prediction"] for r in map(
        json.loads, (gold / "predictions.jsonl").read_text().splitlines())}
    for r in records:
        if r["task"] == "qa_1":
            r["prediction"] = answers[("qa_1", r["index"])]
    knows = tmp_path / "knows"
    knows.mkdir()
    (knows / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["score", "--predictions", str(knows / "p.jsonl"), "--data", str(data),
                 "--out", str(knows)]) == 0
    capsys.readouterr()
    assert main(["report", str(runs["gold"]), "--out", str(tmp_path / "r"), "--no-plots",
                 "--no-context", str(knows)]) == 0
    md = (tmp_path / "r" / "report.md").read_text()
    assert "| No-context baseline | check | without the context the model scores qa_1 @ 4K " \
           "100.0 (run 100.0); 0 on the other 1 cell(s). |" in md
    assert main(["report", str(runs["gold"]), "--out", str(tmp_path / "r2"), "--no-plots",
                 "--no-context", str(empty)]) == 0
    assert "| No-context baseline | ok | 0 on all 2 task x length cell(s) without the " \
           "context. |" in (tmp_path / "r2" / "report.md").read_text()
    assert main(["report", str(runs["gold"]), "--no-context", str(runs["empty"])]) == 2
    assert "is not a run on a --no-context config" in capsys.readouterr().err
