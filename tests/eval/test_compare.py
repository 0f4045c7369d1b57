"""`ruler compare`: paired differences of two runs of the fake backend on a real tiny build.

Gold vs gold is zero and not significant; gold vs a damaged copy of the predictions (answers
blanked) or the `empty` policy is significant with the right sign; runs on another build (other
seed: other content hashes) or another config are refused; rows answered in one run only are
named, never compared.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.builds import build
from perf.upstream_equivalence import _row_scores_ours
from ruler.commands.main import main
from ruler.eval.report.compare import compare_runs
from ruler.kernel.errors import RulerError

pytestmark = [pytest.mark.build, pytest.mark.subprocess]

CONFIG = "gpt-4"
TASKS = ("niah_single_1", "niah_multivalue")
L = 4096
SAMPLES = 20
BLANKED = 8  # niah_single_1 answers blanked in the damaged copy


def _eval(data: Path, out: Path, answers: str = "gold") -> Path:
    assert main(["eval", "--backend", "fake", "--fake-answers", answers, "--model", CONFIG,
                 "--data", str(data), "--out", str(out), "--no-progress", "--no-report"]) == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    data = root / "data"
    build(data, CONFIG, TASKS, (L,), samples=SAMPLES, workers=1)
    gold, again = _eval(data, root / "gold"), _eval(data, root / "gold-again")
    empty = _eval(data, root / "empty", "empty")
    # A damaged copy: the first BLANKED niah_single_1 answers blanked, scored by `ruler score`.
    records = [json.loads(x) for x in (gold / "predictions.jsonl").read_text().splitlines()]
    for r in records:
        if r["task"] == "niah_single_1" and r["index"] < BLANKED:
            r["prediction"] = ""
    damaged = root / "damaged"
    damaged.mkdir()
    (damaged / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["score", "--predictions", str(damaged / "p.jsonl"), "--data", str(data),
                 "--out", str(damaged), "--no-plots"]) == 0
    return {"data": data, "gold": gold, "again": again, "empty": empty, "damaged": damaged,
            "root": root, "records": records}


def _row(c, task):
    return next(r for r in c.rows if r.task == task)


def test_two_identical_runs_differ_by_zero_and_not_significantly(runs, tmp_path, capsys):
    c = compare_runs(runs["gold"], runs["again"])
    assert [(r.task, r.length, r.diff.rows) for r in c.rows] == [
        ("niah_single_1", L, SAMPLES), ("niah_multivalue", L, SAMPLES), (None, L, 2 * SAMPLES)]
    for r in c.rows:
        assert r.diff.difference == 0 and r.diff.p_value == 1 and not r.diff.significant
        assert r.diff.interval.to_json() == [0, 0] and r.a == r.b == 100
    assert main(["compare", str(runs["gold"]), str(runs["again"]), "--out",
                 str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert f"| **all tasks** | 4K | {2 * SAMPLES} | 100.00 | 100.00 | +0.00 | [0.0, 0.0] |" \
        in printed
    saved = json.loads((tmp_path / "compare.json").read_text())
    assert saved["by_length"][0]["difference"] == 0 and not saved["by_length"][0]["significant"]
    assert (tmp_path / "compare.md").read_text() in printed
    assert (tmp_path / "compare.png").stat().st_size > 0


def test_a_damaged_prediction_set_is_significantly_worse_with_the_right_sign(runs):
    c = compare_runs(runs["gold"], runs["damaged"])
    single = _row(c, "niah_single_1")
    assert single.diff.test == "mcnemar" and (single.diff.a_only, single.diff.b_only) == \
        (BLANKED, 0)
    assert single.diff.difference == pytest.approx(BLANKED / SAMPLES * 100)
    assert single.diff.p_value == pytest.approx(2 * 0.5 ** BLANKED) and single.diff.significant
    assert single.diff.interval.low > 0
    untouched = _row(c, "niah_multivalue")
    assert untouched.diff.difference == 0 and not untouched.diff.significant
    overall = _row(c, None)
    assert overall.diff.difference == pytest.approx(BLANKED / (2 * SAMPLES) * 100)
    assert overall.diff.significant
    # B - A: the same difference, negated
    back = _row(compare_runs(runs["damaged"], runs["gold"]), None)
    assert back.diff.difference == -overall.diff.difference and back.diff.significant
    assert back.diff.interval.high < 0


def test_the_empty_policy_loses_every_row(runs):
    c = compare_runs(runs["gold"], runs["empty"])
    for r in c.rows:
        assert r.diff.difference == 100 and r.diff.significant and r.b == 0


def test_rows_answered_in_one_run_only_are_named_and_left_out(runs, tmp_path, capsys):
    fewer = tmp_path / "fewer"
    fewer.mkdir()
    kept = [r for r in runs["records"] if not (r["task"] == "niah_multivalue" and
                                               r["index"] >= 17)]
    (fewer / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    assert main(["score", "--predictions", str(fewer / "p.jsonl"), "--data",
                 str(runs["data"]), "--out", str(fewer), "--no-plots"]) == 0
    c = compare_runs(runs["gold"], fewer)
    assert c.not_shared == {"a_only": [f"{CONFIG}/niah_multivalue/{L}/{i}" for i in
                                       (17, 18, 19)], "b_only": []}
    assert _row(c, "niah_multivalue").diff.rows == 17
    capsys.readouterr()
    assert main(["compare", str(runs["gold"]), str(fewer)]) == 0
    assert "Rows answered in A only (not compared): 3: gpt-4/niah_multivalue/4096/17" in \
        capsys.readouterr().out


def test_runs_on_another_build_or_config_are_refused(runs, tmp_path, capsys):
    other = tmp_path / "other"
    build(other, CONFIG, TASKS, (L,), samples=SAMPLES, workers=1, seed=43)
    other_run = _eval(other, tmp_path / "other-run")
    with pytest.raises(RulerError, match="different builds: niah_multivalue/4096, "
                                         "niah_single_1/4096 differ"):
        compare_runs(runs["gold"], other_run)
    assert main(["compare", str(runs["gold"]), str(other_run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ruler: error: ") and "different builds" in err[0]
    renamed = json.loads((runs["gold"] / "scores.json").read_text())
    renamed["config"] = "qwen2.5"
    (tmp_path / "renamed.json").write_text(json.dumps(renamed))
    with pytest.raises(RulerError, match="different dataset configs"):
        compare_runs(runs["gold"], tmp_path / "renamed.json")


def test_the_upstream_equivalence_benchmark_reads_our_rows_from_scores_json(runs):
    cells = _row_scores_ours(runs["damaged"])
    assert cells[("niah_single_1", L)] == {i: 0.0 if i < BLANKED else 1.0
                                           for i in range(SAMPLES)}
    assert set(cells) == {(t, L) for t in TASKS}


def test_two_predictions_files_are_scored_against_data_and_compared(runs, tmp_path, capsys):
    """Issue 30.5: `ruler compare A.jsonl B.jsonl`, the form the command's issue named, was a
    JSONDecodeError traceback. With --data each side is scored as `ruler score` scores it (here,
    in memory) and compared as two runs; without it, one line says what to pass."""
    gold = runs["gold"] / "predictions.jsonl"
    damaged = runs["damaged"] / "p.jsonl"
    assert main(["compare", str(gold), str(damaged)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ruler: error: ") and len(err.strip().splitlines()) == 1, err
    assert f"{gold} holds predictions, not scores" in err and "--data" in err
    assert main(["compare", str(gold), str(damaged), "--data", str(runs["data"]),
                 "--out", str(tmp_path / "c")]) == 0
    printed = capsys.readouterr().out
    as_files = json.loads((tmp_path / "c" / "compare.json").read_text())
    as_runs = compare_runs(runs["gold"], runs["damaged"]).to_json()
    assert {k: v for k, v in as_files.items() if k not in ("a", "b")} == \
        {k: v for k, v in as_runs.items() if k not in ("a", "b")}
    assert as_files["by_length"][0]["difference"] == pytest.approx(BLANKED / (2 * SAMPLES) * 100)
    assert f"A: `{gold}`" in printed and not list(runs["gold"].glob("*.scores"))
    # A results folder and a predictions file mix; --data checks the folder's scores too.
    assert compare_runs(runs["gold"], damaged, data=str(runs["data"])).to_json()["by_length"] \
        == as_runs["by_length"]
    other = tmp_path / "other"
    build(other, CONFIG, ("niah_single_1",), (L,), samples=SAMPLES, workers=1, seed=43)
    assert main(["compare", str(runs["gold"]), str(damaged), "--data", str(other)]) == 2
    assert "scored on a different revision of the dataset" in capsys.readouterr().err
    # Predictions carrying nothing of their rows are compared, and said to be unverified.
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "data_sha256"})
                            + "\n" for r in runs["records"]))
    assert main(["compare", str(gold), str(bare), "--data", str(runs["data"])]) == 0
    assert (f"Unverified rows in B: {2 * SAMPLES} of {2 * SAMPLES} scored rows carry nothing "
            f"that ties them") in capsys.readouterr().out
