"""`ruler report` on ONERULER scores: one run (its language, the metric that ran, the plain
mean of the tasks, accuracy per task over lengths, a task x length heatmap), and several
languages' runs of one model (`ruler report RUN RUN ...`): the language x length table with
intervals, language x task, the per-task micro accuracy, heatmaps.

The scores are hand-made: every cell has four rows of 0/1; how many are right is
`RIGHT[lang][L]`, one fewer for or_cwe (never below 0). Expected numbers are worked out in the
comments.
"""

from __future__ import annotations

import json

import pytest

from ruler.benchmarks.oneruler.report import language_tables
from ruler.benchmarks.oneruler.report import to_csv as languages_csv
from ruler.benchmarks.oneruler.report import to_markdown as languages_markdown
from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS
from ruler.commands.main import main
from ruler.eval.metrics.intervals import score_interval
from ruler.eval.records.scores_record import SCORES_FORMAT, ScoresRecord
from ruler.eval.report.run import build_report, to_json, to_markdown, write_report
from ruler.kernel.errors import RulerError


def _report(scores: dict):
    return build_report(ScoresRecord.from_json(scores))


LENGTHS = (8000, 32000)
RIGHT = {"en": {8000: 4, 32000: 3}, "ko": {8000: 3, 32000: 2}, "zh": {8000: 4, 32000: 2},
         "hi": {8000: 2, 32000: 0}}


def _rows(lang: str, task: str, L: int) -> list[float]:
    right = max(0, RIGHT[lang][L] - (task == "or_cwe"))
    return [1.0] * right + [0.0] * (4 - right)


def _cell(task: str, L: int, values: list[float], metric: str) -> dict:
    ci = score_interval(values)
    return dict(task=task, max_seq_length=L, metric=metric,
                score=100.0 * sum(values) / len(values), rows=4, scored=4, nulls=0, skipped=0,
                errors=0, missing=0, data_sha256=f"sha-{task}-{L}", skip_reasons=[],
                row_scores=[[i, v] for i, v in enumerate(values)], ci95=ci.to_json(),
                ci_method=ci.method)


def _scores(lang: str, model: str = "m", metric: str = "oneruler", tasks=ONERULER_TASKS,
            rows=None) -> dict:
    rows = rows or (lambda t, L: _rows(lang, t, L))
    cells = [_cell(t, L, rows(t, L), metric) for L in LENGTHS for t in tasks]
    # the benchmark and language a scores.json records from the manifest's build entry
    return {"format": SCORES_FORMAT, "config": f"llama-3.1--oneruler-{lang}", "model": model,
            "benchmark": "oneruler", "language": lang,
            "dataset": {"spec": "d", "revision": None,
                        "files": {f"{c['task']}/{c['max_seq_length']}": c["data_sha256"]
                                  for c in cells}},
            "cells": cells, "missing": [], "unknown": []}


# --- one run --------------------------------------------------------------------------------------

def test_one_run_is_the_plain_mean_of_the_tasks_without_an_effective_length():
    r = _report(_scores("en"))
    # en at 8000: six tasks 4/4 (100), or_cwe 3/4 (75): (600 + 75) / 7
    assert r.benchmark == "oneruler" and r.mean_label == "Mean (7 tasks)"
    assert r.summary.by_length[8000] == pytest.approx(675 / 7)
    # at 32000: six at 75, or_cwe 50: 500 / 7; Avg. the mean of the two
    assert r.summary.by_length[32000] == pytest.approx(500 / 7)
    assert r.summary.avg == pytest.approx((675 / 7 + 500 / 7) / 2)
    assert r.summary.wavg_inc is None and r.summary.effective_length is None
    assert r.intervals.by_length[8000] is not None and r.intervals.avg is not None
    assert r.intervals.wavg_inc is None and r.intervals.uncertain == []


def test_one_run_says_its_language_and_metric_and_pools_each_task_over_lengths():
    md = to_markdown(_report(_scores("en")))
    assert md.startswith("# ONERULER results: m")
    assert "Language: `en`." in md
    assert "Metric: `oneruler`: upstream's (OneRuler eval/evaluate.py, as the paper scores)" in md
    assert "wAvg" not in md and "Effective length" not in md
    assert "| 8000 | 32000 | Avg. |" in md
    assert "(the paper's accuracy of a language at a length)" in md
    # or_niah_single: 4/4 at 8000 and 3/4 at 32000 pooled: 7/8 = 87.5, Wilson [52.9, 97.8]
    assert "| or_niah_single (niah_single) | 8 | 87.5 [52.9, 97.8] |" in md
    # or_cwe: 3/4 + 2/4 = 5/8 = 62.5
    assert "| or_cwe (cwe) | 8 | 62.5 [" in md
    data = json.loads(json.dumps(to_json(_report(_scores("en")))))
    assert data["benchmark"] == "oneruler" and data["language"] == "en"
    assert data["metric"] == "oneruler" and data["effective_length"] is None


def test_the_corrected_metric_and_a_cross_lingual_run_are_named():
    md = to_markdown(_report(_scores("ko", metric="oneruler_corrected")))
    assert "Metric: `oneruler_corrected`: upstream's with its documented flaws fixed" in md
    scores = _scores("en", tasks=ONERULER_TASKS[:5])
    scores["config"], scores["language"] = "llama-3.1--oneruler-en-ko", "en-ko"
    md = to_markdown(_report(scores))
    assert "Language: cross-lingual: context (book, needles, keys) `en`, instructions " \
           "(task, question, none-word) `ko`." in md
    assert to_json(_report(scores))["language"] == "en-ko"


def test_cells_of_two_metrics_in_one_run_are_refused():
    scores = _scores("en")
    scores["cells"][0]["metric"] = "oneruler_corrected"
    with pytest.raises(RulerError, match="mix metrics"):
        to_markdown(_report(scores))


def test_write_report_draws_the_task_by_length_heatmap(tmp_path):
    (tmp_path / "scores.json").write_text(json.dumps(_scores("zh")))
    write_report(tmp_path)
    png = tmp_path / "scores_heatmap.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "report.json").read_text())["language"] == "zh"


# --- several languages ------------------------------------------------------------------------

def _runs(langs=("en", "ko", "zh", "hi"), **kw) -> list[tuple[str, object]]:
    return [(f"runs/{g}", _report(_scores(g, **kw))) for g in langs]


def test_the_language_by_length_table():
    tb, = language_tables(_runs())
    # Avg.: en (675 + 500) / 14 = 83.93; zh (675 + 325) / 14 = 71.43 (32000: six at 50,
    # cwe 25); ko (500 + 325) / 14 = 58.93; hi (325 + 0) / 14 = 23.21: highest first
    assert tb.languages == ["en", "zh", "ko", "hi"]
    assert tb.avg["en"].score == pytest.approx(1175 / 14)
    assert tb.by_length["hi"][32000].score == 0
    # All languages at 8000: (675 + 500 + 675 + 325) / 7 / 4 = 77.68
    assert tb.all_languages[8000].score == pytest.approx(2175 / 28)
    low, high = tb.all_languages[8000].interval.low, tb.all_languages[8000].interval.high
    assert low < 2175 / 28 < high
    # language x task, all lengths: en or_cwe 3/4 + 2/4 = 5/8; hi or_niah_single 2/4 + 0/4
    assert tb.by_task["en"]["or_cwe"].score == 62.5 and tb.by_task["hi"]["or_niah_single"].rows == 8
    assert tb.by_task["hi"]["or_niah_single"].score == 25.0
    # per-task micro accuracy over the 4 languages: or_niah_single at 8000 4 + 3 + 4 + 2 =
    # 13 of 16; at 32000 3 + 2 + 2 + 0 = 7 of 16; all lengths 20 of 32
    micro = tb.task_micro["or_niah_single"]
    assert (micro[8000].score, micro[32000].score, micro["all"].score) == (81.25, 43.75, 62.5)
    assert micro["all"].rows == 32 and micro["all"].interval.method == "wilson"
    # or_cwe at 8000: 3 + 2 + 3 + 1 = 9 of 16
    assert tb.task_micro["or_cwe"][8000].score == 56.25


def test_the_language_tables_in_markdown_and_csv():
    tables = language_tables(_runs())
    md = languages_markdown(tables)
    assert "## m: 4 languages" in md and "Metric: `oneruler`" in md
    assert "| Language | 8000 | 32000 | Avg. |" in md
    lines = md.splitlines()
    en = next(line for line in lines if line.startswith("| en | 96.4 ["))
    assert en.endswith(" | 83.9 [" + en.split(" | 83.9 [")[1])
    assert next(line for line in lines if line.startswith("| **All** | **77.7 ["))
    # 81.25 is a binary fraction: printed with round-half-even as 81.2
    assert "| or_niah_single (niah_single) | 81.2 [" in md
    rows = languages_csv(tables).splitlines()
    assert rows[0] == "model,metric,table,language,task,max_seq_length,score,ci_low,ci_high,rows"
    assert "m,oneruler,task_micro_accuracy,all,or_niah_single,all,62.5," in "\n".join(rows)


def test_runs_that_do_not_pool_are_refused():
    with pytest.raises(RulerError, match="different metrics"):
        language_tables(_runs(("en",)) + [("runs/ko", _report(
            _scores("ko", metric="oneruler_corrected")))])
    with pytest.raises(RulerError, match="both runs of m in ko"):
        language_tables(_runs(("en", "ko", "ko")))
    v1 = _scores("en")
    v1["config"], v1["benchmark"], v1["language"] = "llama-3.1", "ruler", None
    for c in v1["cells"]:
        c["task"], c["metric"] = "niah_single_1", "string_match_all"
    v1["cells"] = v1["cells"][:1]
    v1["dataset"]["files"] = {"niah_single_1/8000": "sha"}
    with pytest.raises(RulerError, match="not a ONERULER run"):
        language_tables(_runs(("en",)) + [("runs/v1", _report(v1))])


def test_models_and_cross_lingual_runs_get_tables_of_their_own():
    runs = _runs(("en", "ko")) + _runs(("en",), model="other")
    xl = _scores("en", tasks=ONERULER_TASKS[:5])
    xl["config"], xl["language"] = "llama-3.1--oneruler-en-ko", "en-ko"
    runs.append(("runs/en-ko", _report(xl)))
    tables = language_tables(runs)
    assert [(t.model, t.cross_lingual, t.languages) for t in tables] == [
        ("m", False, ["en", "ko"]), ("m", True, ["en-ko"]), ("other", False, ["en"])]
    assert tables[1].tasks == list(ONERULER_TASKS[:5])


def test_ruler_report_of_several_languages_writes_the_tables_and_heatmaps(tmp_path, capsys):
    folders = []
    for g in RIGHT:
        folder = tmp_path / g
        folder.mkdir()
        (folder / "scores.json").write_text(json.dumps(_scores(g)))
        folders.append(str(folder))
    out = tmp_path / "languages"
    assert main(["report", *folders, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "# ONERULER: accuracy by language" in printed
    for name in ("report_languages.md", "report_languages.csv", "report_languages.json"):
        assert (out / name).is_file()
    data = json.loads((out / "report_languages.json").read_text())
    assert data["tables"][0]["languages"] == ["en", "zh", "ko", "hi"]
    for png in ("m_language_length.png", "m_language_task.png"):
        assert (out / "language_heatmaps" / png).read_bytes()[:4] == b"\x89PNG"
    # Table 3 is RULER's: refused for ONERULER runs, in one line
    assert main(["report", *folders, "--table"]) == 2
    assert "ONERULER runs make the language table" in capsys.readouterr().err


def test_a_partial_language_is_noted_and_its_means_withheld():
    scores = _scores("ko")
    scores["cells"][0].update(missing=2, scored=2, row_scores=[[0, 1.0], [1, 1.0]])
    tb, = language_tables([("runs/en", _report(_scores("en"))),
                           ("runs/ko", _report(scores))])
    assert tb.by_length["ko"][8000].score is None and tb.all_languages[8000].score is None
    assert tb.avg["ko"].score is None and tb.languages[-1] == "ko"
    assert any("ko: partial" in n for n in tb.notes)
