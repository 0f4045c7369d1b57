"""Issue 30.1: every scored row is tied to the build it was made from, or said to be unverified.

Two builds of one config name (seed 42, the conftest's, and a rebuild with seed 7) have rows with
the same keys and other contents. Predictions made from the first and scored against the second
are refused, naming the rows, wherever they carry anything of their rows (data_sha256, the
prompt or its digest as lm-eval samples and Inspect logs log it, the row's length); where they
carry nothing, the scores say so (console, report, scores.json) and `--strict` fails, and no
claim about the server's prompt counts is made for such rows.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from helpers.builds import build, rows
from ruler.commands.main import main
from ruler.eval.integrations import lm_eval_export as ex
from ruler.eval.records.dataset import open_dataset
from ruler.eval.scoring.score import score_file

pytestmark = [pytest.mark.build]

CONFIG = "qwen2.5"
TASKS = ("niah_single_1", "vt")
L = 1024
SAMPLES = 4
LM_EVAL_DATE = "2026-01-02T03-04-05.678901"
CLAIM = "Server prompt counts:"


@pytest.fixture(scope="module")
def data(built_qwen_niah_vt) -> Path:
    return built_qwen_niah_vt  # CONFIG: TASKS x L x 4 samples, seed 42 (conftest; read only)


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory) -> Path:
    """The same config name, tasks, length and samples, another seed: other rows, same keys."""
    out = tmp_path_factory.mktemp("rebuilt") / "ruler"
    build(out, CONFIG, TASKS, (L,), samples=SAMPLES, workers=1, seed=7)
    return out


def _gold(data: Path, **carry) -> list[dict]:
    """Gold answers of `data`'s rows as another framework writes them, with the row's columns
    named in `carry` (column -> how to take it from the row)."""
    return [{"tokenizer": CONFIG, "task": t, "max_seq_length": L, "index": r["index"],
             "prediction": " ".join(r["outputs"]), **{k: f(r) for k, f in carry.items()}}
            for t in TASKS for r in rows(data, CONFIG, t, L)]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _score(predictions: Path, data: Path, out: Path, *flags: str) -> int:
    return main(["score", "--predictions", str(predictions), "--data", str(data), "--out",
                 str(out), "--no-plots", *flags])


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("ruler: error: ") and len(err.strip().splitlines()) == 1, err
    return err


def test_the_issue_case_another_frameworks_jsonl_is_unverified_and_said(data, rebuilt,
                                                                          tmp_path, capsys):
    """No data_sha256, no prompt, no length: nothing can tell the builds apart. Scored against
    the rebuild the gold answers of the first build score as wrong; that is said everywhere."""
    path = _write(tmp_path / "p.jsonl", _gold(data))
    out = tmp_path / "scores"
    assert _score(path, rebuilt, out) == 0
    printed = capsys.readouterr().out
    n = len(TASKS) * SAMPLES
    said = (f"{n} of {n} scored rows carry nothing that ties them to this build (no "
            f"data_sha256 or prompt in the predictions)")
    status = printed.strip().splitlines()[-1]
    assert status.startswith(f"complete: {n} of {n} rows asked for") and \
        f"UNVERIFIED: {said}" in status, status
    md = (out / "report.md").read_text()
    assert f"**Unverified rows**: {said}" in md
    assert f"Cells: niah_single_1 @ 1K ({SAMPLES}), vt @ 1K ({SAMPLES})." in md
    scores = json.loads((out / "scores.json").read_text())
    assert scores["tied_to_build"] == {"scored": n, "tied": 0, "by": {}, "unverified": n,
                                       "length_only": 0}
    assert [(c["unverified"], c["tied_by"]) for c in scores["cells"]] == [(SAMPLES, {})] * 2
    assert json.loads((out / "report.json").read_text())["tied_to_build"] == \
        scores["tied_to_build"]
    assert _score(path, rebuilt, out, "--strict") == 1


@pytest.mark.parametrize("carry,kind", [
    ({"data_sha256": None}, "data_sha256"),
    ({"input": lambda r: r["input"]}, "prompt"),
    ({"input_sha256": lambda r: hashlib.sha256(r["input"].encode()).hexdigest()}, "prompt"),
    ({"length": lambda r: r["length"]}, "length"),
], ids=["data_sha256", "input", "input_sha256", "length"])
def test_predictions_carrying_their_rows_are_refused_on_another_build(data, rebuilt, tmp_path,
                                                                      capsys, carry, kind):
    if kind == "data_sha256":
        shas = {f.task: f.content_sha256 for f in open_dataset(str(data)).files(CONFIG)}
        carry = {"data_sha256": lambda r: shas[r["task"]]}
    path = _write(tmp_path / "p.jsonl", _gold(data, **carry))
    assert _score(path, rebuilt, tmp_path / "wrong") == 2
    err = _one_line_error(capsys)
    assert "made from a different revision of the dataset" in err and \
        f"{CONFIG}/niah_single_1/{L}#" in err, err
    assert not (tmp_path / "wrong").exists()  # nothing written
    # Against the build they were made from: every row scores 100, tied by what it carries.
    out = tmp_path / "right"
    assert _score(path, data, out, *(() if kind == "length" else ("--strict",))) == 0
    scores = json.loads((out / "scores.json").read_text())
    assert [c["score"] for c in scores["cells"]] == [100.0, 100.0]
    n = len(TASKS) * SAMPLES
    if kind == "length":  # an equal length proves little: still unverified, and said why
        assert scores["tied_to_build"] == {"scored": n, "tied": 0, "by": {}, "unverified": n,
                                           "length_only": n}
        assert f"{n} carry only a length equal to the row's" in \
            (out / "report.md").read_text()
    else:
        assert scores["tied_to_build"] == {"scored": n, "tied": n, "by": {kind: n},
                                           "unverified": 0, "length_only": 0}
        assert "Unverified" not in (out / "report.md").read_text()


def test_an_equal_length_is_no_tie_between_two_seeds(data, rebuilt):
    """Why a length alone leaves a row unverified: rows of the two builds share lengths."""
    same = [(t, a["index"]) for t in TASKS for a, b in zip(rows(data, CONFIG, t, L),
                                                           rows(rebuilt, CONFIG, t, L))
            if a["length"] == b["length"]]
    assert same, "no row of the two seeds has the same length: this test needs another pair"


def _server_counted(data: Path, tmp_path: Path) -> list[dict]:
    """A `ruler eval` run's records as an OpenAI-compatible server's run writes them: each
    answered row with the server's own prompt count (here: equal to the rendered one)."""
    out = tmp_path / "run"
    assert main(["eval", "--backend", "fake", "--model", "m", "--model-tokenizer", CONFIG,
                 "--data", str(data), "--out", str(out), "--no-progress", "--no-report",
                 "--render-workers", "0"]) == 0
    records = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    return [dict(r, server_prompt_tokens=r["prompt_tokens"] or 1000) for r in records]


def test_no_claim_about_server_prompt_counts_for_rows_not_tied_to_the_build(
        data, rebuilt, tmp_path, capsys):
    records = _server_counted(data, tmp_path)
    n = len(records)
    tied = _write(tmp_path / "tied.jsonl", records)
    assert _score(tied, data, tmp_path / "s-tied", "--strict") == 0
    claim = f"{CLAIM} {n} of {n} answered row(s) checked, all equal to the build's."
    assert claim in (tmp_path / "s-tied" / "report.md").read_text()
    # The same rows without their data_sha256, scored against the rebuild of the config: the
    # server counted the first build's prompts, so nothing may be claimed of this one's.
    untied = _write(tmp_path / "untied.jsonl",
                    [{k: v for k, v in r.items() if k != "data_sha256"} for r in records])
    capsys.readouterr()
    assert _score(untied, rebuilt, tmp_path / "s-untied") == 0
    printed = capsys.readouterr().out
    md = (tmp_path / "s-untied" / "report.md").read_text()
    assert CLAIM not in md and CLAIM not in printed
    assert "UNVERIFIED" in printed and "**Unverified rows**" in md
    assert json.loads((tmp_path / "s-untied" / "scores.json").read_text())[
        "prompt_check"] is None


def _lm_eval_samples(folder: Path, data: Path) -> Path:
    """lm-eval's --log_samples output of the exported tasks (gold answers) without the run's
    results file (which holds each task's content_sha256): the logged doc is the row lm-eval
    read."""
    run = folder / "my__model"
    run.mkdir(parents=True)
    for task in TASKS:
        lines = [{"doc_id": i, "doc": r, "target": str(r["outputs"]),
                  "filtered_resps": [" " + " ".join(r["outputs"])], "filter": "none"}
                 for i, r in enumerate(rows(data, CONFIG, task, L))]
        _write(run / f"samples_{ex.task_name(CONFIG, task, L)}_{LM_EVAL_DATE}.jsonl", lines)
    return folder


def test_lm_eval_samples_without_their_results_file_are_tied_by_the_logged_prompt(
        data, rebuilt, tmp_path, capsys):
    samples = _lm_eval_samples(tmp_path / "lm", data)
    assert _score(samples, rebuilt, tmp_path / "wrong") == 2
    err = _one_line_error(capsys)
    assert "made from a different revision of the dataset" in err and \
        "its prompt differs from the row's" in err, err
    report = score_file(samples, open_dataset(str(data)))
    assert [c.score for c in report.cells] == [100.0, 100.0]
    assert report.tied_to_build.by == {"prompt": len(TASKS) * SAMPLES}
    assert report.unverified == 0


def test_scores_of_an_older_ruler_record_no_ties_and_report_none(data, tmp_path, capsys):
    """A scores.json written before ties were recorded: "not recorded", never "unverified"."""
    path = _write(tmp_path / "p.jsonl", _gold(data))
    out = tmp_path / "scores"
    assert _score(path, data, out) == 0
    scores = json.loads((out / "scores.json").read_text())
    del scores["tied_to_build"]
    for c in scores["cells"]:
        del c["tied_by"], c["unverified"]
    (out / "scores.json").write_text(json.dumps(scores))
    capsys.readouterr()
    assert main(["report", str(out), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "UNVERIFIED" not in printed and "Unverified" not in printed
    assert json.loads((out / "report.json").read_text())["tied_to_build"] is None


# --- the forms a prompt is sent in (issue 40 item 20) --------------------------------------------

@pytest.mark.parametrize("form", [
    lambda r: r["input"] + r["answer_prefix"],  # RULER's base prompt, as upstream sends it
    lambda r: r["input"].replace("\n", "\r\n"),  # a tool that rewrote the line ends
    lambda r: (r["input"] + r["answer_prefix"]).replace("\n", "\r\n"),
], ids=["input+answer_prefix", "crlf", "input+answer_prefix,crlf"])
@pytest.mark.parametrize("field", ["input", "input_sha256"])
def test_a_prompt_as_it_was_sent_ties_its_prediction(data, tmp_path, form, field):
    carry = form if field == "input" else \
        (lambda r: hashlib.sha256(form(r).encode()).hexdigest())
    path = _write(tmp_path / "p.jsonl", _gold(data, **{field: carry}))
    scores = score_file(path, open_dataset(str(data)))
    assert [c.score for c in scores.cells] == [100.0, 100.0]
    assert scores.tied_to_build.by == {"prompt": len(TASKS) * SAMPLES}


def test_a_prompt_that_differs_is_named_with_where_it_departs(data, tmp_path, capsys):
    def changed(r):
        return r["input"][:40] + "X" + r["input"][41:]

    path = _write(tmp_path / "p.jsonl", _gold(data, input=changed))
    assert _score(path, data, tmp_path / "s") == 2
    err = _one_line_error(capsys)
    row = rows(data, CONFIG, "niah_single_1", L)[0]
    assert "its prompt differs from the row's: input departs from the row's input at " \
           "character 40: " in err
    assert repr(row["input"][25:55]) in err, err
    cut = _write(tmp_path / "cut.jsonl", _gold(data, input=lambda r: r["input"][:100]))
    assert _score(cut, data, tmp_path / "c") == 2
    assert "input stops at character 100 of the row's input" in _one_line_error(capsys)
