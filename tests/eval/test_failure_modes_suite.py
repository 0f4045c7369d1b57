"""The failure-mode labels on the paper's Section 5 configurations (`ruler build --suite
section5`: more keys, values, queries, hops and chains, UUID keys, α, CWE without its example),
against the fake backend's purposeful failures: every row the fake answers wrong on purpose is
labelled as it means it, and every right row carries no failure label (precision and recall
100 % per label), as on the 13 tasks (test_failure_modes_fake.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from helpers.builds import build
from ruler.benchmarks.ruler.failure_modes.cell import family_of
from ruler.benchmarks.ruler.failure_modes.fake_answers import COLUMNS, FAILURES
from ruler.benchmarks.ruler.failure_modes.fake_answers import answer as purposeful
from ruler.eval.backends.base import GenRequest
from ruler.eval.backends.fake import FakeBackend, FakeOptions
from ruler.eval.records.dataset import open_dataset
from ruler.eval.scoring.score import score_file

pytestmark = [pytest.mark.build, pytest.mark.slow]

TOK, L, SAMPLES = "llama-3.1", 4096, 3


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("suite-failure-modes") / "data"
    build(out, TOK, (), [L], SAMPLES, suite="section5")
    return out


def _scores(data: Path, mode: str, out: Path):
    backend = FakeBackend(FakeOptions("fake", answers=mode, data=str(data)))
    ds = open_dataset(str(data))
    records = []
    for f in ds.files(TOK):
        for row in ds.rows(f, ("index", "tokens_to_generate")):
            key = (TOK, f.task, f.max_seq_length, row["index"])
            r = backend.answer(GenRequest(key, [], row["tokens_to_generate"]))
            records.append({"tokenizer": TOK, "task": f.task, "max_seq_length": L,
                            "index": row["index"], "prediction": r.text,
                            "finish_reason": r.finish_reason})
    out.mkdir(parents=True, exist_ok=True)
    path = out / "predictions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return score_file(path, open_dataset(str(data)), config=TOK)


def test_purposeful_failures_on_the_section5_configurations_are_labelled_exactly(data,
                                                                                 tmp_path):
    ds = open_dataset(str(data))
    rows = {(f.task, f.max_seq_length): ds.rows(f, ("index", *COLUMNS)) for f in ds.files(TOK)}
    assert len(rows) == 30
    pairs, missed, shown = [], [], Counter()
    for mode in ("gold", "empty", *FAILURES):
        for cell in _scores(data, mode, tmp_path / mode).cells:
            got = {r.index: r for r in cell.failures.rows}
            for row in rows[cell.key]:
                meant = purposeful(mode, family_of(cell.task), row) if mode in FAILURES \
                    else None
                label = ("empty" if mode == "empty" else meant.label if meant else None) \
                    or "correct"
                r = got.get(row["index"])
                pairs.append((cell.task, mode, label, r.label if r else "correct"))
                shown[label] += 1
                if meant and not meant.flags <= set(r.flags if r else ()):
                    missed.append((mode, cell.task, row["index"], meant.flags))
    wrong = [p for p in pairs if p[2] != p[3]]
    assert not wrong, wrong[:10]
    assert not missed, missed[:10]
    # the modes the new configurations add: another chain's variable (several chains), a
    # truncated UUID key's value, the input's start copied (CWE without its example)
    assert {"other_chain", "incomplete_value", "copy_input_start", "copy_oneshot",
            "distractor_value", "incomplete_set"} <= set(shown)
