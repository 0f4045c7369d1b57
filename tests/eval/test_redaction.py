"""A model's answer that holds the API key: the key never reaches a file, the answer is scored
as generated (the key put back where the process holds it), the rows are counted, and a
stored answer nobody can restore is never scored as if it were the answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.builds import rows
from ruler.commands.main import main
from ruler.eval.records import redaction
from ruler.kernel.scrub import REDACTED

CONFIG, TASK, L = "llama-3.1--oneruler-en", "or_cwe", 1024


# --- where the secret was, and putting it back ----------------------------------------------------

def test_redact_records_where_and_restore_gives_the_answer_back(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "accommodation")
    answer = f"1. accommodation 2. {REDACTED} 3. accommodations, accommodation"
    stored = redaction.redact(answer)
    assert "accommodation" not in stored.text
    # the model's own literal <redacted> is not one of the marks
    assert stored.text == (f"1. {REDACTED} 2. {REDACTED} 3. {REDACTED}s, {REDACTED}")
    spans = redaction.record(stored.spans, redaction.new_salt())
    assert [len(e["at"]) for e in spans] == [3] and "accommodation" not in json.dumps(spans)
    assert redaction.shape_problem(spans, stored.text) == ""
    assert redaction.restore(stored.text, spans) == answer
    # another key (or none) cannot restore it
    monkeypatch.setenv("OPENAI_API_KEY", "another-key-entirely")
    assert redaction.restore(stored.text, spans) is None
    monkeypatch.delenv("OPENAI_API_KEY")
    assert redaction.restore(stored.text, spans) is None


def test_a_damaged_redacted_field_is_named():
    assert "no <redacted>" in redaction.shape_problem([{"key": "k", "at": [3]}], "abc")
    assert "list of" in redaction.shape_problem({"key": "k"}, "abc")
    assert "no <redacted>" in redaction.shape_problem([{"key": "k", "at": [-1]}],
                                                      f"x{REDACTED}")


# --- end to end -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def data(built_llama_oneruler) -> Path:
    return built_llama_oneruler  # conftest: read only


def _key_word(data: Path) -> str:
    """A gold word of a CWE row at least 8 characters long (a key that short is a secret)."""
    return next(w for r in rows(data, CONFIG, TASK, L) for w in r["outputs"] if len(w) >= 8)


@pytest.mark.build
def test_a_key_that_is_a_word_of_the_answer_is_cut_from_the_file_not_from_the_score(
        data, tmp_path, monkeypatch, capsys):
    key = _key_word(data)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    out = tmp_path / "run"
    assert main(["eval", "--backend", "fake", "--model", "m", "--data", str(data),
                 "--tokenizer-config", CONFIG, "--tasks", TASK, "--out", str(out),
                 "--no-progress", "--render-workers", "0", "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "held the API key" in printed
    records = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    marked = [r for r in records if "redacted" in r]
    assert marked and all(REDACTED in r["prediction"] for r in marked)
    for path in out.rglob("*"):
        if path.is_file():
            assert key not in path.read_bytes().decode("utf-8", "replace"), path
    cell, = json.loads((out / "scores.json").read_text())["cells"]
    # the fake backend's gold answers, scored as generated: 100, not a wrong word
    assert (cell["score"], cell["redacted"], cell["errors"]) == (100.0, len(marked), 0)
    assert f"{len(marked)} of 3 answered rows held the API key" in (out / "report.md").read_text()

    # `ruler score` with the key set: the same; without it, or with another key: those rows
    # are failed rows (with the reason), never scored on the redacted text
    again = tmp_path / "again"
    assert main(["score", "--predictions", str(out / "predictions.jsonl"), "--data", str(data),
                 "--out", str(again), "--no-plots"]) == 0
    cell, = json.loads((again / "scores.json").read_text())["cells"]
    assert (cell["score"], cell["redacted"]) == (100.0, len(marked))
    for env in (None, "another-key-entirely"):
        if env is None:
            monkeypatch.delenv("OPENAI_API_KEY")
        else:
            monkeypatch.setenv("OPENAI_API_KEY", env)
        blind = tmp_path / f"blind-{env}"
        main(["score", "--predictions", str(out / "predictions.jsonl"), "--data", str(data),
              "--out", str(blind), "--no-plots"])
        cell, = json.loads((blind / "scores.json").read_text())["cells"]
        assert (cell["scored"], cell["errors"], cell["redacted"]) == (
            3 - len(marked), len(marked), 0)
        assert cell["skip_reasons"] == [f"{len(marked)}x {redaction.UNRESTORED}"]
        assert cell["score"] in (None, 100.0)  # the rest, as generated
        assert "PARTIAL" in capsys.readouterr().out


@pytest.mark.build
def test_a_qa_answer_kept_for_the_no_context_pairing_holds_no_secret(built_qwen_three,
                                                                     monkeypatch):
    """scores.json keeps each QA row's normalised answer (the failure modes' no-context
    coincidence): an answer scored with the key put back is kept with the key cut out."""
    from ruler.benchmarks.ruler.failure_modes.cell import label_cell
    from ruler.eval.records.dataset import open_dataset

    key = "Placeholder-Key-0001"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    ds = open_dataset(str(built_qwen_three))
    f, = ds.files("qwen2.5", tasks=["qa_1"])
    got = rows(built_qwen_three, "qwen2.5", "qa_1", 1024)
    indices = [int(r["index"]) for r in got]
    answers = [f"{r['outputs'][0]} {key}" for r in got]
    cell = label_cell(ds, f, "string_match_part", indices, answers, [1.0] * len(got), {},
                      {int(r["index"]): r["outputs"] for r in got})
    assert cell is not None and cell.answers and len(cell.answers) == len(got)
    kept = json.dumps([a.answer for a in cell.answers])
    assert key.lower() not in kept.lower() and "redacted" in kept
