"""Table 3 over runs (`ruler report RUN RUN ... --table`): rows labelled by what tells them
apart, averages over another length set than the table's marked, on scores records made in
the test (no build; the end-to-end table with published rows is in test_report_reference.py)."""

from __future__ import annotations

import json

from helpers.scores import alternating, right, scores, write, wrong
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.commands.main import main
from ruler.eval.published_results import load_registry
from ruler.eval.report.run import build_report
from ruler.eval.report.table3 import build_table, to_latex, to_markdown

PUBLISHED = "ruler-readme/meta-llama-3.1-8b-instruct"  # 4K..128K


def _rows(md: str) -> list[str]:
    return [x for x in md.splitlines() if x.startswith("| ")]


def test_runs_of_one_name_on_two_configs_are_told_apart_by_config(tmp_path, capsys):
    """Issue 40 #18: two runs of "m" on different builds were two rows `m` (100.0 and 0.0),
    no config named anywhere."""
    a = write(tmp_path / "a", scores("m", "qwen2.5", STANDARD_TASKS, (4096,), right))
    b = write(tmp_path / "b", scores("m", "llama-3.1", STANDARD_TASKS, (4096,), wrong))
    out = tmp_path / "t3"
    assert main(["report", str(a), str(b), "--table", "--out", str(out)]) == 0
    md = (out / "table3.md").read_text()
    runs = [x for x in _rows(md) if x.startswith("| m ")]
    assert [x.split(" | ")[0] for x in runs] == ["| m (config qwen2.5)",
                                                  "| m (config llama-3.1)"]
    assert "100.0" in runs[0] and "0.0 [0.0, 0.0]" in runs[1]
    assert f"config `qwen2.5`, run `{a}`" in md and f"config `llama-3.1`, run `{b}`" in md
    rows = json.loads((out / "table3.json").read_text())["rows"]
    assert [(r["model"], r["config"], r["where"]) for r in rows if r["kind"] == "run"] == [
        ("m", "qwen2.5", str(a)), ("m", "llama-3.1", str(b))]
    tex = (out / "table3.tex").read_text()
    assert "m (config qwen2.5)" in tex and "m (config llama-3.1)" in tex


def test_two_runs_of_one_model_and_config_are_told_apart_by_run():
    one = scores("m", "qwen2.5", STANDARD_TASKS, (4096,), right)
    two = scores("m", "qwen2.5", STANDARD_TASKS, (4096,), alternating)
    other = scores("n", "qwen2.5", STANDARD_TASKS, (4096,), right)
    t = build_table([("runs/1", build_report(one)), ("runs/2", build_report(two)),
                     ("runs/3", build_report(other))], [], load_registry())
    labels = [r.label for r in t.rows if r.kind == "run"]
    assert labels == ["m (config qwen2.5, run runs/1)", "m (config qwen2.5, run runs/2)", "n"]
    assert len(set(labels)) == 3


def test_averages_over_other_lengths_than_the_published_row_s_are_marked():
    """A 4K-only run's Avg. and wAvg. sat unmarked beside the published 4K..128K averages."""
    registry = load_registry()
    run = build_report(scores("meta-llama/Llama-3.1-8B-Instruct", "qwen2.5", STANDARD_TASKS,
                              (4096,), right))
    t = build_table([("gold", run)], [registry.find(PUBLISHED)], registry)
    md = to_markdown(t)
    gold, published = _rows(md)[2:4]
    # the numbers are as before, each average marked
    assert gold.endswith("| 100.0 § [100.0, 100.0] | 100.0 § [100.0, 100.0] | "
                         "100.0 § [100.0, 100.0] |")
    assert published.endswith("| 88.3 | 85.4 | 91.3 |")  # over the table's lengths: unmarked
    assert ("- § Avg. and wAvg. of meta-llama/Llama-3.1-8B-Instruct are over 4K only, not the "
            "table's 4K, 8K, 16K, 32K, 64K, 128K: they do not compare with the others'.") in md
    row = next(r for r in t.to_json()["rows"] if r["kind"] == "run")
    assert row["averaged_over"] == [4096] and row["averages_comparable"] is False
    assert r"100.0$^\S$" in to_latex(t)


def test_runs_averaged_over_the_same_lengths_are_not_marked():
    a = build_report(scores("a", "qwen2.5", STANDARD_TASKS, (4096, 8192), right))
    b = build_report(scores("b", "qwen2.5", STANDARD_TASKS, (4096, 8192), alternating))
    md = to_markdown(build_table([("a", a), ("b", b)], [], load_registry()))
    assert "§" not in md


def test_runs_of_two_benchmarks_are_refused_and_one_benchmark_names_the_table(tmp_path,
                                                                               capsys):
    """A RULER run and a RULERv2 run made one table under "# RULER: Table 3", RULER's 85.6
    threshold row above the RULERv2 scores: blended, not compared."""
    from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS

    v1 = write(tmp_path / "v1", scores("m", "llama-3.1", STANDARD_TASKS, (4096,), right))
    v2 = write(tmp_path / "v2", scores("n", "llama-3.1--v2", RULER2_TASKS, (4096,),
                                       alternating))
    assert main(["report", str(v1), str(v2), "--table"]) == 2
    err = capsys.readouterr().err
    assert "are of different benchmarks (RULER: " in err and f"RULERv2: {v2}" in err
    assert main(["report", str(v1), str(v2), "--table", "--reference",
                 "ruler-readme/meta-llama-3.1-8b-instruct"]) == 2
    other = write(tmp_path / "v2b", scores("o", "llama-3.1--v2", RULER2_TASKS, (4096,), right))
    assert main(["report", str(v2), str(other), "--table"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("# RULERv2: Table 3\n")
    assert "Llama2 (7B)" not in md and "<ins>" not in md and "threshold" not in md
    assert main(["report", str(v2), str(other), "--table", "--reference",
                 "ruler-readme/meta-llama-3.1-8b-instruct"]) == 2
    assert "RULER: ruler-readme/meta-llama-3.1-8b-instruct" in capsys.readouterr().err
