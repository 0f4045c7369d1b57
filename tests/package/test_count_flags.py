"""Count flags refuse impossible sizes in one line, before any work (issue 30.7): each of these
used to start it (a pool of that many processes, a table of that many bins, that many
configs) and fail minutes or gigabytes later, or never."""

from __future__ import annotations

import pytest

from ruler.builder.pipeline.config import MAX_LOCAL_WORKERS
from ruler.commands.main import main
from ruler.eval.metrics.depth import MAX_REPORT_DEPTH_BINS


def _refused(capsys, argv: list[str], says: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and err.startswith("ruler: error: ") and err.count("\n") == 1, err


@pytest.mark.build
def test_verify_workers(built_gpt4_niah_single, capsys):
    _refused(capsys, ["verify", str(built_gpt4_niah_single), "--no-load", "--workers",
                      str(MAX_LOCAL_WORKERS + 1)], f"--workers: at most {MAX_LOCAL_WORKERS}")


def test_eval_render_workers(tmp_path, capsys):
    # refused before the dataset is opened: no folder is needed, nothing is made
    _refused(capsys, ["eval", "--backend", "fake", "--model", "fake", "--data",
                      str(tmp_path / "no-build"), "--out", str(tmp_path / "results"),
                      "--render-workers", "1000000"],
             f"--render-workers: at most {MAX_LOCAL_WORKERS} processes")
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def results(built_gpt4_niah_single, tmp_path_factory):
    """A results folder with depth items (the fake backend's gold answers)."""
    out = tmp_path_factory.mktemp("count_flags") / "results"
    assert main(["eval", "--backend", "fake", "--model", "fake", "--model-tokenizer", "gpt-4",
                 "--data", str(built_gpt4_niah_single), "--out", str(out), "--no-report",
                 "--no-progress"]) == 0
    return out


@pytest.mark.build
@pytest.mark.subprocess
@pytest.mark.parametrize("bins", [0, MAX_REPORT_DEPTH_BINS + 1, 10**12])
def test_report_depth_bins(results, tmp_path, capsys, bins):
    capsys.readouterr()
    _refused(capsys, ["report", str(results), "--depth-bins", str(bins), "--out",
                      str(tmp_path / "report")],
             f"--depth-bins must be from 1 to {MAX_REPORT_DEPTH_BINS}")
    assert not (tmp_path / "report").exists()
    assert main(["report", str(results), "--depth-bins", str(MAX_REPORT_DEPTH_BINS),
                 "--no-plots", "--out", str(tmp_path / "report")]) == 0
