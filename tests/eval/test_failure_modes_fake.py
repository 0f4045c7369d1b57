"""The failure-mode labels on real builds (llama-3.1, RULER's 13 tasks at 2K and 4K, and the
config's --no-context variant), against the fake backend's purposeful failures
(`--fake-answers MODE`, `ruler.benchmarks.ruler.failure_modes.fake_answers`): every row the
fake answers wrong on purpose is labelled as it means it, with the flags it means, and every
right row carries no failure label: precision and recall 100 % per label. The QA coincidence
comes from two runs, on the config and on its --no-context variant (`ruler report RUN
--no-context RUN0`)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from helpers.builds import build
from ruler.benchmarks.ruler.failure_modes.cell import family_of
from ruler.benchmarks.ruler.failure_modes.fake_answers import COLUMNS, FAILURES
from ruler.benchmarks.ruler.failure_modes.fake_answers import answer as purposeful
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.catalog.variants import NoContext
from ruler.commands.main import main
from ruler.eval.backends.base import GenRequest
from ruler.eval.backends.fake import FakeBackend, FakeOptions
from ruler.eval.records.dataset import open_dataset
from ruler.eval.records.results_schema import read_scores
from ruler.eval.report.run import write_report
from ruler.eval.scoring.score import score_file, write_scores
from ruler.kernel.errors import RulerError

pytestmark = [pytest.mark.build]

TOK, LENGTHS, SAMPLES = "llama-3.1", (2048, 4096), 4
NC = f"{TOK}--nocontext"


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("failure-modes") / "data"
    build(out, TOK, STANDARD_TASKS, LENGTHS, SAMPLES)
    build(out, TOK, STANDARD_TASKS, LENGTHS, SAMPLES, variant=NoContext())
    return out


def _answered(data: Path, config: str, mode: str, out: Path) -> Path:
    """The fake backend's answers (`--fake-answers mode`) to every row of `config`, as a
    predictions file `ruler score` reads (the records any framework writes)."""
    backend = FakeBackend(FakeOptions("fake", answers=mode, data=str(data)))
    ds = open_dataset(str(data))
    records = []
    for f in ds.files(config):
        for row in ds.rows(f, ("index", "tokens_to_generate")):
            key = (config, f.task, f.max_seq_length, row["index"])
            r = backend.answer(GenRequest(key, [], row["tokens_to_generate"]))
            records.append({"tokenizer": config, "task": f.task,
                            "max_seq_length": f.max_seq_length, "index": row["index"],
                            "prediction": r.text, "finish_reason": r.finish_reason})
    out.mkdir(parents=True, exist_ok=True)
    path = out / "predictions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _scored(data: Path, config: str, mode: str, out: Path):
    path = _answered(data, config, mode, out)
    scores = score_file(path, open_dataset(str(data)), config=config)
    write_scores(out / "scores.json", scores)
    return scores


def test_purposeful_failures_are_labelled_exactly(data, tmp_path):
    ds = open_dataset(str(data))
    rows = {(f.task, f.max_seq_length): ds.rows(f, ("index", *COLUMNS)) for f in ds.files(TOK)}
    pairs: list[tuple[str, str]] = []  # (meant, labelled) per row and mode
    missed_flags = []
    for mode in ("gold", "empty", *FAILURES):
        scores = _scored(data, TOK, mode, tmp_path / mode)
        for cell in scores.cells:
            assert cell.failures is not None and cell.failures.labelled == SAMPLES
            got = {r.index: r for r in cell.failures.rows}
            for row in rows[cell.key]:
                meant = purposeful(mode, family_of(cell.task), row) if mode in FAILURES \
                    else None
                label = "empty" if mode == "empty" else (meant.label if meant else None)
                label = label or "correct"
                r = got.get(row["index"])
                pairs.append((label, r.label if r else "correct"))
                if meant and not meant.flags <= set(r.flags if r else ()):
                    missed_flags.append((mode, cell.task, row["index"], meant.flags))
    assert not missed_flags
    meant, labelled = Counter(m for m, _ in pairs), Counter(g for _, g in pairs)
    hits = Counter(m for m, g in pairs if m == g)
    report = {k: (hits[k] / labelled[k] if labelled[k] else None, hits[k] / meant[k])
              for k in meant}
    assert all(p == r == 1.0 for p, r in report.values()), report  # (precision, recall)
    assert set(labelled) == set(meant)
    # every mode the standard tasks can show was shown (UUID keys and several chains:
    # test_failure_modes.py's hand-made rows)
    assert set(meant) >= {"correct", "empty", "copy_oneshot", "copy_input_start", "parametric",
                          "distractor_value", "incomplete_value", "partial_number",
                          "incomplete_set", "incomplete_chain", "inaccurate_aggregation",
                          "not_in_context"}


def test_the_no_context_coincidence_from_two_runs(data, tmp_path):
    """A model that answers from the question alone: its QA rows are `not_in_context`, and
    beside its run on the --no-context variant `no_context_coincidence`; a baseline whose
    rows ask other questions is refused."""
    run, blind = tmp_path / "run", tmp_path / "blind"
    _scored(data, TOK, "closed_book", run)
    _scored(data, NC, "closed_book", blind)
    alone = write_report(run, plots=False)
    beside = write_report(run, tmp_path / "beside", plots=False, no_context=blind)
    for r, label in ((alone, "not_in_context"), (beside, "no_context_coincidence")):
        qa = [c for c in r.failures.cells if c.family == "qa"]
        assert qa and all(c.labels[label] == SAMPLES for c in qa)
        others = [c for c in r.failures.cells if c.family != "qa"]
        assert all(c.labels["empty"] + c.labels["parametric"] == SAMPLES for c in others)
    assert all(c.coincidence.to_json() == {"paired": SAMPLES, "equal": SAMPLES, "near": 0}
               for c in beside.failures.cells if c.family == "qa")
    md = (tmp_path / "beside" / "report.md").read_text()
    assert "## Failure modes" in md
    assert f"no-context coincidence {SAMPLES} of {SAMPLES} wrong rows" in md
    saved = json.loads((tmp_path / "beside" / "report.json").read_text())["failure_modes"]
    assert saved["no_context"] == str(blind) and saved["definitions"]

    # the no-context rows of another build: questions differ
    other = tmp_path / "other"
    shutil.copytree(blind, other)
    scores = json.loads((other / "scores.json").read_text())
    cell = next(c for c in scores["cells"] if c["task"] == "qa_1")
    cell["failures"]["answers"][0]["question"] = "0" * 16
    (other / "scores.json").write_text(json.dumps(scores))
    with pytest.raises(RulerError, match="asks another question"):
        write_report(run, tmp_path / "refused", plots=False, no_context=other)


def test_ruler_eval_records_the_labels(data, tmp_path):
    """`ruler eval --backend fake --fake-answers distractor` scores as it ends: scores.json
    holds each cell's labels (a damaged one is refused in one line) and report.md shows the
    section."""
    out = tmp_path / "run"
    assert main(["eval", "--backend", "fake", "--fake-answers", "distractor", "--model", "fake",
                 "--data", str(data), "--tokenizer-config", TOK,
                 "--tasks", "niah_multikey_2,fwe,qa_1", "--lengths", "2048",
                 "--out", str(out), "--no-progress", "--render-workers", "0",
                 "--no-plots"]) == 0
    cells = {c.task: c.failures for c in read_scores(out / "scores.json").cells}
    assert Counter(r.label for r in cells["niah_multikey_2"].rows) == {
        "distractor_value": SAMPLES}
    assert all("vicinity" in r.flags and r.distance == 1 for r in cells["niah_multikey_2"].rows)
    assert all(r.rank is not None for r in cells["fwe"].rows)
    assert not cells["qa_1"].rows and len(cells["qa_1"].answers) == SAMPLES
    md = (out / "report.md").read_text()
    assert "**niah_multikey_2**" in md and "Every answered row right (`correct`): qa_1." in md
    saved = json.loads((out / "scores.json").read_text())
    saved["cells"][0]["failures"]["rows"] = [{"index": "one"}]
    (out / "scores.json").write_text(json.dumps(saved))
    with pytest.raises(RulerError, match="cell 1 has missing or malformed failures"):
        read_scores(out / "scores.json")
