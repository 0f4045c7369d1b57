"""The benchmark a comparison or a pooled report is of is named from the runs' records (their
scored tasks' benchmark), never a default "RULER" (issue 40 #25: `ruler compare` of ONERULER
runs was headed "RULER comparison")."""

from __future__ import annotations

import json

from helpers.scores import alternating, right, scores, write
from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS
from ruler.commands.main import main
from ruler.eval.report.compare import compare_scores, to_markdown


def test_a_comparison_of_oneruler_runs_is_headed_oneruler(tmp_path):
    a = write(tmp_path / "a", scores("m", "llama-3.1--oneruler-ko", ONERULER_TASKS, (8000,),
                                     right, metric="oneruler", language="ko"))
    b = write(tmp_path / "b", scores("n", "llama-3.1--oneruler-ko", ONERULER_TASKS, (8000,),
                                     alternating, metric="oneruler", language="ko"))
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out), "--no-plots"]) == 0
    md = (out / "compare.md").read_text()
    assert md.startswith("# ONERULER comparison: A - B\n") and "# RULER comparison" not in md
    assert json.loads((out / "compare.json").read_text())["benchmark"] == "oneruler"


def test_each_benchmark_names_itself_in_the_comparison_and_its_figure():
    from ruler.eval.report.compare import figure

    for tasks, title in ((STANDARD_TASKS, "RULER"), (RULER2_TASKS, "RULERv2"),
                         (ONERULER_TASKS, "ONERULER")):
        c = compare_scores(scores("m", "cfg", tasks, (4096,), right),
                           scores("n", "cfg", tasks, (4096,), alternating))
        assert to_markdown(c).startswith(f"# {title} comparison: A - B")
        assert figure(c).axes[0].get_title().startswith(f"{title} A - B: m vs n")


def test_replicates_of_a_ruler2_config_are_headed_rulerv2(tmp_path, capsys):
    base = scores("m", "llama-3.1--v2", RULER2_TASKS, (4096,), right)
    rep = scores("m", "llama-3.1--v2--rep1", RULER2_TASKS, (4096,), alternating)
    rep.variant = {"replicate": 1}
    runs = [write(tmp_path / f"r{n}", r) for n, r in enumerate((base, rep))]
    assert main(["report", *map(str, runs)]) == 0
    assert capsys.readouterr().out.startswith("# RULERv2 results over 2 replicates: m\n")
