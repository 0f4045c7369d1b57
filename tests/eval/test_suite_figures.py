"""`ruler report` draws the paper's figures for a suite run (issue 42 item 3): one PNG per
panel of the suites the scored config records (Figure 2's and Figure 3's panels, the CWE
copying pair), one line per configuration with the suite's legend label, and the copying
share of CWE outputs by length; report.md links each figure and gives its table. The panels
and labels come from the records (scores.json's `suites`, the manifest's for older scores),
never from the tasks' names: a config without a recorded suite draws none, even with the
same tasks.

The run: a section5 build (gpt-4, 2K and 4K, 4 samples) answered by the fake backend's
purposeful failures, one mode per row index, so that scores and shares are neither 0 nor 100.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib
import pytest

from helpers.builds import build
from helpers.figures import outside_canvas
from ruler.benchmarks.ruler.suites import CWE_COPYING, PANELS
from ruler.catalog.variants import NoContext
from ruler.eval.backends.base import GenRequest
from ruler.eval.backends.fake import FakeBackend, FakeOptions
from ruler.eval.records.dataset import open_dataset
from ruler.eval.records.scores_record import ScoresRecord
from ruler.eval.report.run import write_report
from ruler.eval.scoring.score import score_file, write_scores
from ruler.kernel.markup import md_text

matplotlib.use("Agg")
pytestmark = [pytest.mark.build, pytest.mark.slow]

TOK, LENGTHS, SAMPLES = "gpt-4", (2048, 4096), 4
#: The fake backend's mode answering row `index` (gold, the one-shot copy, half the values,
#: the input's start copied).
MODES = ("gold", "oneshot", "partial", "copy_start")


def _predictions(data: Path, out: Path, config: str = TOK) -> Path:
    backends = {m: FakeBackend(FakeOptions("fake", answers=m, data=str(data))) for m in MODES}
    ds = open_dataset(str(data))
    records = []
    for f in ds.files(config):
        for row in ds.rows(f, ("index", "tokens_to_generate")):
            i = row["index"]
            key = (config, f.task, f.max_seq_length, i)
            r = backends[MODES[i % len(MODES)]].answer(GenRequest(key, [],
                                                                  row["tokens_to_generate"]))
            records.append({"tokenizer": config, "task": f.task, "max_seq_length": f.max_seq_length,
                            "index": i, "prediction": r.text, "finish_reason": r.finish_reason,
                            "model": "fake/model"})
    out.mkdir(parents=True, exist_ok=True)
    path = out / "predictions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _scored(data: Path, out: Path, config: str) -> Path:
    scores = score_file(_predictions(data, out, config), open_dataset(str(data)), config=config)
    write_scores(out / "scores.json", scores)
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, Path]:
    """(the dataset folder, a results folder with its scores.json); the folder also holds the
    no-context config of the QA tasks, scored in `root/nc`."""
    root = tmp_path_factory.mktemp("suite-figures")
    build(root / "data", TOK, (), LENGTHS, SAMPLES, suite="section5")
    build(root / "data", TOK, ("qa_1", "qa_2"), LENGTHS, SAMPLES, variant=NoContext())
    _scored(root / "data", root / "nc", f"{TOK}--nocontext")
    return root / "data", _scored(root / "data", root / "run", TOK)


@pytest.fixture
def saved(monkeypatch):
    """The figures saved while the test runs: (file name, what sticks out, the figure); the
    name is the temporary file's beside the figure's (`kernel.atomic.replacing`)."""
    from matplotlib.figure import Figure

    found = []
    original = Figure.savefig

    def savefig(fig, fname, *args, **kwargs):
        found.append((Path(getattr(fname, "name", str(fname))).name, outside_canvas(fig), fig))
        return original(fig, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return found


def _section(md: str) -> str:
    return md.split("## Suite figures", 1)[1].split("\n## ", 1)[0]


def test_scores_record_the_suite_built(run):
    data, results = run
    scores = json.loads((results / "scores.json").read_text())
    assert scores["suites"] == ["section5"]


def test_a_suite_run_draws_each_panel_with_its_legend_labels(run, saved, tmp_path):
    _, results = run
    out = tmp_path / "report"
    write_report(results, out)
    md = (out / "report.md").read_text()
    section = _section(md)
    for panel in PANELS:
        png = out / f"suite_{panel.name}.png"
        assert png.is_file() and png.stat().st_size > 0, panel.name
        assert f"](suite_{panel.name}.png)" in section
        assert f"(`{panel.name}`)" in section
        # one line per configuration, with the suite's legend label
        fig = next(f for name, _, f in saved if name.startswith(f".{png.name}")
                   or name.startswith(png.name))
        legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert legend == [t.label for t in panel.tasks], panel.name
        assert [tl.get_text() for tl in fig.axes[0].get_xticklabels()] == ["2K", "4K"]
    # texts fit their canvas
    assert not [(name, out) for name, out, _ in saved if out]
    # the copying share: its own figure and table, from the rows' primary labels
    assert (out / "suite_cwe_copying_shares.png").is_file()
    assert "whose primary failure label is `copy_oneshot` or `copy_input_start`" in section


def test_the_tables_give_each_configuration_s_score_and_copying_share(run, tmp_path):
    _, results = run
    out = tmp_path / "report"
    write_report(results, out, plots=False)
    scores = ScoresRecord.from_json(json.loads((results / "scores.json").read_text()))
    cells = {c.key: c for c in scores.cells}
    section = _section((out / "report.md").read_text())
    assert "![" not in section  # no figures drawn: none linked
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| (.+?) \| (\[\w+\]) \| (.+) \|$", line)
        if m:
            rows.setdefault(m.group(1), []).append([v.strip() for v in m.group(3).split("|")])
    # each score as the cell's, per length (a label shown in several panels: the same values)
    for panel in PANELS:
        for t in panel.tasks:
            want = [f"{cells[(t.name, L)].score:.1f}" for L in LENGTHS]
            assert want in rows[md_text(t.label)], (panel.name, t.label)
    # non-trivial: the purposeful failures make scores other than 0 and 100
    values = {float(v) for r in rows.values() for vs in r for v in vs if v != "—"}
    assert values - {0.0, 100.0}
    # the copying share: with the example, rows 1 (its copy) and 3 (the input's start, which
    # is the example) of 4 copy it; without it, row 3 copies the input's start (the one-shot
    # mode has no example to copy there and answers gold)
    share_rows = section.split("whose primary failure label is", 1)[1]
    want = {"cwe": "| 50.0 | 50.0 |", "cwe_no_oneshot": "| 25.0 | 25.0 |"}
    for t in CWE_COPYING.tasks:
        line = next(x for x in share_rows.splitlines()
                    if x.startswith(f"| {md_text(t.label)} |"))
        assert line.endswith(want[t.name]), line


def test_a_config_without_a_recorded_suite_draws_no_panel(run, tmp_path):
    """The same tasks, scored without a suite recorded: no panel, however the tasks are
    named."""
    _, results = run
    scores = json.loads((results / "scores.json").read_text())
    del scores["suites"]
    other = tmp_path / "run"
    other.mkdir()
    (other / "scores.json").write_text(json.dumps(scores))
    write_report(other, tmp_path / "report")
    assert "## Suite figures" not in (tmp_path / "report" / "report.md").read_text()
    assert not list((tmp_path / "report").glob("suite_*.png"))


def test_the_qa_panel_draws_the_no_context_lines_given(run, saved, tmp_path):
    """Figure 3 right: with `--no-context RUN0`, each QA configuration's no-context scores
    beside its own, dashed, in the figure and the table."""
    data, results = run
    out = tmp_path / "report"
    write_report(results, out, no_context=data.parent / "nc")
    section = _section((out / "report.md").read_text())
    part = section.split("(`fig3_qa`)", 1)[1].split("###", 1)[0]
    for label in ("SQuAD", "HotpotQA"):
        assert f"| {label} (w/o context) | [paper] |" in part
    fig = next(f for name, _, f in saved if name.startswith(".suite_fig3_qa.png"))
    lines = {t.get_text(): h for t, h in zip(fig.axes[0].get_legend().get_texts(),
                                             fig.axes[0].get_legend().legend_handles)}
    assert list(lines) == ["SQuAD", "HotpotQA", "SQuAD (w/o context)", "HotpotQA (w/o context)"]
    assert not [(name, o) for name, o, _ in saved if o]


def test_older_scores_read_the_suite_from_the_manifest_they_were_scored_on(run, tmp_path):
    """Scores of a ruler that recorded neither benchmark nor suites: the suites are the
    manifest's of the dataset folder they name, when it still holds the files scored."""
    _, results = run
    scores = json.loads((results / "scores.json").read_text())
    for key in ("suites", "benchmark", "benchmark_package", "axes"):
        scores.pop(key, None)
    older = tmp_path / "run"
    older.mkdir()
    (older / "scores.json").write_text(json.dumps(scores))
    write_report(older, tmp_path / "report", plots=False)
    section = _section((tmp_path / "report" / "report.md").read_text())
    assert all(f"(`{p.name}`)" in section for p in PANELS)


def test_appendix_c_s_eighteen_configurations_fit_one_panel(tmp_path, saved):
    """The widest panel: 18 lines, their legend beside the axes, every text on the canvas."""
    from ruler.benchmarks.ruler.suites import APPENDIX_C

    build(tmp_path / "data", TOK, (), (2048,), 2, suite="appendix_c")
    results = _scored(tmp_path / "data", tmp_path / "run", TOK)
    write_report(results, tmp_path / "report")
    fig = next(f for name, _, f in saved if name.startswith(".suite_appendix_c.png"))
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == [t.label for t in APPENDIX_C.tasks]
    assert not [(name, o) for name, o, _ in saved if o]
