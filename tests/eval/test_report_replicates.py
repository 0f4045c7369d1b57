"""`ruler report RUN RUN ...` pools runs of one model on replicate configs of one tokenizer
(eval.report.replicates), on a real tiny build: default config + `--replicates 3`, fake-backend
runs, and hand-damaged prediction sets whose per-cell scores are known, so the mean and the
between-replicate spread are checked against numbers computed by hand. Mixed runs (another
tokenizer, prompt mode, variant, row count, a replicate twice) are refused in one line; runs of
another model are no replicates and make the paper's Table 3 instead.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest

from helpers.builds import build
from ruler.catalog.variants import DepthSweep, Replicate
from ruler.commands.main import main

pytestmark = [pytest.mark.build, pytest.mark.subprocess]

TOK, L, SAMPLES = "gpt-4", 1024, 3
TASKS = ("niah_single_1", "qa_1")
# Answers blanked (scored 0) among the 3 rows of each cell, per replicate: the cell scores are
# 100 * (3 - blanked) / 3.
BLANKED = {1: {"niah_single_1": 0, "qa_1": 1},   # 100.00, 66.67 -> mean per length 83.33
           2: {"niah_single_1": 1, "qa_1": 0},   # 66.67, 100.00 -> 83.33
           3: {"niah_single_1": 3, "qa_1": 2}}   # 0.00, 33.33   -> 16.67


def _eval(data: Path, out: Path, config: str, *extra: str) -> Path:
    assert main(["eval", "--backend", "fake", "--model", TOK, "--data", str(data),
                 "--tokenizer-config", config, "--out", str(out), "--no-progress",
                 "--no-report", *extra]) == 0
    return out


def _damaged(data: Path, gold: Path, out: Path, blanked: dict[str, int],
             model: str | None = None) -> Path:
    """A copy of a gold run's predictions with the first `blanked[task]` answers of each task
    blanked (and the model renamed), scored by `ruler score` into `out`."""
    records = [json.loads(x) for x in (gold / "predictions.jsonl").read_text().splitlines()]
    for r in records:
        if r["index"] < blanked.get(r["task"], 0):
            r["prediction"] = ""
        if model:
            r["model"] = model
    out.mkdir()
    (out / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["score", "--predictions", str(out / "p.jsonl"), "--data", str(data),
                 "--out", str(out), "--no-plots"]) == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("replicate-report")
    data = root / "data"
    build(data, TOK, TASKS, (L,), SAMPLES, workers=1)
    assert main(["build", "--tokenizer", TOK, "--tasks", ",".join(TASKS), "--lengths", str(L),
                 "--samples", str(SAMPLES), "--out", str(data), "--no-progress", "--workers",
                 "1", "--replicates", "3"]) == 0
    build(data, TOK, TASKS[:1], (L,), 4, workers=1, variant=DepthSweep(2))
    # qwen2.5 has a chat template, so its runs can be in chat or base mode (gpt-4's: base only)
    build(data, "qwen2.5", TASKS[:1], (L,), SAMPLES, workers=1)
    build(data, "qwen2.5", TASKS[:1], (L,), SAMPLES, workers=1, variant=Replicate(1))
    r: dict[str, Path] = {"data": data}
    r["default"] = _eval(data, root / "default", TOK)
    for i in (1, 2, 3):
        r[f"gold{i}"] = _eval(data, root / f"gold{i}", f"{TOK}--rep{i}")
        r[f"rep{i}"] = _damaged(data, r[f"gold{i}"], root / f"rep{i}", BLANKED[i])
    r["again1"] = _eval(data, root / "again1", f"{TOK}--rep1")
    r["limit2"] = _eval(data, root / "limit2", f"{TOK}--rep2", "--limit", "2")
    r["other_model2"] = _damaged(data, r["gold2"], root / "other_model2", {}, model="other")
    r["depth"] = _eval(data, root / "depth", f"{TOK}--depth2")
    # One model name for these too (rendered by qwen2.5's tokenizer): runs of two models are
    # no replicates, they make Table 3; the refusals below are of one model's runs.
    r["qwen"] = _eval(data, root / "qwen", "qwen2.5", "--model-tokenizer", "qwen2.5")
    r["qwen_base1"] = _eval(data, root / "qwen_base1", "qwen2.5--rep1", "--model-tokenizer",
                            "qwen2.5", "--mode", "base", "--allow-length-mismatch")
    return r


def _sd(values: list[float]) -> float:
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def test_three_replicates_pool_to_hand_computed_mean_and_spread(runs, tmp_path, capsys):
    # Given out of order: the report orders runs by replicate.
    assert main(["report", str(runs["rep3"]), str(runs["rep1"]), str(runs["rep2"]),
                 "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    saved = json.loads((tmp_path / "report_replicates.json").read_text())
    assert saved["config"] == TOK and saved["model"] == TOK
    assert [r["config"] for r in saved["replicates"]] == [f"{TOK}--rep{i}" for i in (1, 2, 3)]
    # The pooled numbers are over what each run's report shows: scores.json records a cell's
    # score to 2 decimals (66.67 for 2 of 3 rows).
    single = saved["scores"]["niah_single_1"][str(L)]
    # By hand: 100, 66.67, 0 -> mean 166.67 / 3 = 55.5567, SD sqrt((44.4433² + 11.1133² +
    # 55.5567²) / 2) = sqrt(5185.2593 / 2) = 50.9179
    assert single["values"] == [100.0, 66.67, 0.0]
    assert single["mean"] == pytest.approx(55.5567, abs=1e-4)
    assert single["sd"] == pytest.approx(50.9179, abs=1e-4)
    assert (single["min"], single["max"]) == (0.0, 100.0)
    qa = saved["scores"]["qa_1"][str(L)]  # 66.67, 100, 33.33 -> 66.6667 ± sqrt(2 * 33.335² / 2)
    assert qa["values"] == [66.67, 100.0, 33.33]
    assert (qa["mean"], qa["sd"]) == pytest.approx((66.6667, 33.3350), abs=1e-4)
    # The mean per length per replicate: 83.335, 83.335, 16.665 -> 61.1117 ± 38.4919 (deviations
    # 22.2233, 22.2233, -44.4467); Avg. and wAvg. the same (one length).
    for pooled in (saved["mean_by_length"][str(L)], saved["avg"], saved["wavg_inc"]):
        assert pooled["values"] == [83.335, 83.335, 16.665]
        assert pooled["mean"] == pytest.approx(61.1117, abs=1e-4)
        assert pooled["sd"] == pytest.approx(38.4919, abs=1e-4)
        assert pooled["sd"] == pytest.approx(_sd([83.335, 83.335, 16.665]), abs=1e-4)
    md = (tmp_path / "report_replicates.md").read_text()
    assert md in printed
    assert "| niah_single_1 | 55.56 ± 50.92 [0.00..100.00] |" in md
    assert "| qa_1 | 66.67 ± 33.34 [33.33..100.00] |" in md
    assert "| **Mean (2 tasks)** | 61.11 ± 38.49 [16.66..83.34] | 61.11 ± 38.49" in md
    assert "| rep3 | `gpt-4--rep3` | 16.66 | 16.66 |" in md
    rows = {(r["task"], r["max_seq_length"]): r
            for r in csv.DictReader(io.StringIO((tmp_path / "report_replicates.csv").read_text()))}
    row = rows[("niah_single_1", str(L))]
    assert (row["replicates"], row["mean"], row["sd"], row["min"], row["max"]) == (
        "3", "55.5567", "50.9179", "0.0", "100.0")
    assert (row["score_rep1"], row["score_rep2"], row["score_rep3"]) == ("100.0", "66.67", "0.0")
    assert rows[("Mean (2 tasks)", str(L))]["mean"] == "61.1117"
    assert rows[("Avg.", "")]["sd"] == "38.4919"


def test_the_default_config_pools_with_its_replicates(runs, capsys):
    assert main(["report", str(runs["gold2"]), str(runs["default"]), str(runs["gold1"])]) == 0
    printed = capsys.readouterr().out
    assert "runs: default = `gpt-4`" in printed and "rep2 = `gpt-4--rep2`" in printed
    assert "| niah_single_1 | 100.00 ± 0.00 [100.00..100.00] |" in printed
    assert not list(Path(runs["default"]).glob("report_replicates*"))  # no --out: printed only


def test_one_folder_is_reported_as_before(runs, capsys):
    assert main(["report", str(runs["rep3"]), "--no-plots"]) == 0
    assert "| niah_single_1 | 0.00 [" in capsys.readouterr().out
    assert (runs["rep3"] / "report.md").is_file()


def test_runs_of_two_models_are_not_pooled_but_make_table_3(runs, capsys):
    """Another model's run is no replicate: the runs make the paper's Table 3 instead
    (eval.report.table3; tested in test_report_reference.py)."""
    assert main(["report", str(runs["rep1"]), str(runs["other_model2"])]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("# RULER: Table 3") and "| other |" in printed
    assert "over 2 replicates" not in printed


@pytest.mark.parametrize("names, says", [
    (("gold1", "qwen"), "differ in tokenizer config ('gpt-4' vs 'qwen2.5')"),
    (("qwen", "qwen_base1"), "differ in prompt mode ('chat' vs 'base')"),
    (("gold1", "depth"), "a depth_bins variant: only a tokenizer's default config and its "
                         "replicates"),
    (("gold1", "default", "again1"), "are both runs on config 'gpt-4--rep1': give each "
                                     "replicate once"),
    (("gold1", "limit2"), "replicates pool runs of the same sample count and --limit"),
])
def test_mixed_runs_are_refused_in_one_line(runs, capsys, names, says):
    assert main(["report", *(str(runs[n]) for n in names)]) == 2
    err = capsys.readouterr().err
    assert says in err and err.startswith("ruler: error: ") and err.count("\n") == 1, err


def test_scores_without_a_recorded_variant_must_be_rescored(runs, tmp_path, capsys):
    old = json.loads((runs["gold1"] / "scores.json").read_text())
    del old["variant"]
    (tmp_path / "scores.json").write_text(json.dumps(old))
    assert main(["report", str(tmp_path / "scores.json"), str(runs["gold2"])]) == 2
    assert "records no build variant (scored by an older ruler): re-score it" in \
        capsys.readouterr().err
