"""The side-by-side speed scripts (perf.build --upstream, perf.ruler2_speed,
perf.oneruler_speed): upstream runs under the interpreter the user names, its imports are
checked first in one line, and both sides' wall and CPU seconds (whole process trees), the load
and the ratios are printed (issue 43). Upstream's code is never part of this repository: fake
upstream trees here take its command lines, burn some CPU in a child process as upstream's
generators do, and write what upstream writes."""

from __future__ import annotations

import re
import stat
import sys
import textwrap
from pathlib import Path

import pytest

import perf.build as build_bench
import perf.oneruler_speed as oneruler_speed
import perf.ruler2_speed as ruler2_speed
import perf.ruler_upstream as ruler_upstream
from perf.side_by_side import check_imports

#: A generator's body: spend CPU (so the side's CPU seconds count a grandchild process), record
#: which interpreter ran it.
_BURN = """
import os, sys
sum(i * i for i in range(3_000_000))
with open(os.environ["FAKE_UPSTREAM_LOG"], "a") as log:
    log.write(os.environ.get("FAKE_UPSTREAM_MARK", "unmarked") + "\\n")
"""


def _interpreter(tmp_path: Path) -> str:
    """An interpreter of another name (as upstream's own environment's is) that marks what it
    runs."""
    wrapper = tmp_path / "upstream-env" / "bin" / "python3-upstream"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(f"#!/bin/sh\nFAKE_UPSTREAM_MARK=upstream exec {sys.executable} \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return str(wrapper)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


@pytest.mark.subprocess
def test_a_module_upstream_cannot_import_is_one_line():
    with pytest.raises(SystemExit) as stop:
        check_imports(sys.executable, ["json", "no_such_module_tenacity_stand_in", "yaml"])
    message = str(stop.value)
    assert "\n" not in message
    assert "cannot import no_such_module_tenacity_stand_in" in message
    assert "pip install no_such_module_tenacity_stand_in there" in message
    check_imports(sys.executable, ["json", "yaml"])  # all there: nothing said


@pytest.mark.subprocess
def test_the_scripts_check_upstreams_imports_before_timing_anything(tmp_path, monkeypatch):
    """A module upstream's generators import and its interpreter lacks (tenacity, at the last
    fair run): each script says so in one line before it builds anything (at e344ff3,
    ruler2_speed and oneruler_speed built ours first, then failed with upstream's traceback)."""
    missing = ("json", "no_such_module_tenacity_stand_in")
    for module in (ruler2_speed, oneruler_speed, ruler_upstream):
        monkeypatch.setattr(module, "MODULES", missing)
    upstream = tmp_path / "upstream"
    (upstream / "OneRuler").mkdir(parents=True)
    (upstream / "scripts" / "data").mkdir(parents=True)
    (upstream / "scripts" / "data" / "prepare.py").write_text("")
    for main, argv in ((ruler2_speed.main, []), (oneruler_speed.main, ["--languages", "sw"]),
                       (build_bench.main, ["--tasks", "vt"])):
        with pytest.raises(SystemExit) as stop:
            main(["--upstream", str(upstream), "--lengths", "4096", "--samples", "1",
                  "--workers", "1", "--out" if main is build_bench.main else "--keep",
                  str(tmp_path / "work"), *argv])
        assert "cannot import no_such_module_tenacity_stand_in" in str(stop.value)
        assert not (tmp_path / "work" / "ours").exists()  # nothing was built


def _ratios(printed: str) -> None:
    """Both sides' wall and CPU seconds with the load, and the two ratios."""
    for side in ("ours", "upstream"):
        m = re.search(rf"^{side} \(.*\): ([0-9.]+) s wall, ([0-9.]+) CPU s .*load [0-9.]+ -> "
                      rf"[0-9.]+$", printed, re.M)
        assert m, (side, printed)
        assert float(m.group(2)) > 0.05, (side, "no CPU seconds counted")
    assert re.search(r"^ratio \(upstream / ours\): wall [0-9.]+x, CPU [0-9.]+x$", printed, re.M)


@pytest.fixture
def fake_env(tmp_path, monkeypatch):
    log = tmp_path / "upstream.log"
    monkeypatch.setenv("FAKE_UPSTREAM_LOG", str(log))
    return log


@pytest.mark.slow
@pytest.mark.build
@pytest.mark.subprocess
def test_ruler_side_by_side_runs_upstream_under_the_named_interpreter(tmp_path, fake_env,
                                                                      monkeypatch, capsys):
    monkeypatch.setattr(ruler_upstream, "MODULES", ("json",))
    upstream = tmp_path / "RULER"
    # prepare.py starts `python synthetic/<task>.py` through the shell, as upstream's does
    _write(upstream / "scripts" / "data" / "prepare.py", """
        import argparse, pathlib, subprocess
        p = argparse.ArgumentParser()
        for a in ("--save_dir", "--benchmark", "--task", "--tokenizer_path", "--tokenizer_type",
                  "--max_seq_length", "--model_template_type", "--num_samples"):
            p.add_argument(a)
        args = p.parse_args()
        here = pathlib.Path(__file__).parent
        subprocess.run(f"python {here / 'synthetic' / 'gen.py'}", shell=True, check=True)
        out = pathlib.Path(args.save_dir) / args.task / "validation.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("{}\\n" * int(args.num_samples))
    """)
    _write(upstream / "scripts" / "data" / "synthetic" / "gen.py", _BURN)
    assert build_bench.main(["--upstream", str(upstream), "--upstream-python",
                             _interpreter(tmp_path), "--tasks", "vt,niah_single_1",
                             "--lengths", "1024", "--samples", "2", "--workers", "2"]) == 0
    printed = capsys.readouterr().out
    _ratios(printed)
    assert "| vt | 1024 |" in printed and "| niah_single_1 | 1024 |" in printed
    assert fake_env.read_text().split() == ["upstream"] * 2  # each generator, in upstream's
    assert (upstream / "scripts" / "data" / "synthetic" / "json" / "squad.json").is_symlink()


@pytest.mark.slow
@pytest.mark.build
@pytest.mark.subprocess
def test_ruler2_side_by_side_runs_upstream_under_the_named_interpreter(tmp_path, fake_env,
                                                                       monkeypatch, capsys):
    monkeypatch.setattr(ruler2_speed, "MODULES", ("json",))
    upstream = tmp_path / "NeMo-Skills"
    for generator in ("prepare_niah", "prepare_qa", "prepare_mmlu"):
        _write(upstream / "nemo_skills" / "dataset" / "ruler2" / f"{generator}.py", _BURN)
    for init in ("nemo_skills", "nemo_skills/dataset", "nemo_skills/dataset/ruler2"):
        (upstream / init / "__init__.py").write_text("")
    assert ruler2_speed.main(["--upstream", str(upstream), "--upstream-python",
                              _interpreter(tmp_path), "--tasks", "mk_niah_basic,qa_basic",
                              "--lengths", "4096", "--samples", "1", "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    _ratios(printed)
    assert "| mk_niah_basic | 4096 |" in printed
    assert fake_env.read_text().split() == ["upstream"] * 2


@pytest.mark.slow
@pytest.mark.build
@pytest.mark.subprocess
def test_oneruler_side_by_side_runs_upstream_under_the_named_interpreter(tmp_path, fake_env,
                                                                         monkeypatch, capsys):
    monkeypatch.setattr(oneruler_speed, "MODULES", ("json",))
    upstream = tmp_path / "OneRuler-checkout"
    _write(upstream / "OneRuler" / "prepare.py", """
        import argparse, pathlib, subprocess
        p = argparse.ArgumentParser()
        for a in ("--save_dir", "--benchmark", "--task", "--tokenizer_path", "--tokenizer_type",
                  "--max_seq_length", "--model_template_type", "--num_samples", "--lang"):
            p.add_argument(a)
        args = p.parse_args()
        here = pathlib.Path(__file__).parent
        subprocess.run(f"python {here / 'synthetic' / 'gen.py'}", shell=True, check=True)
        out = pathlib.Path(args.save_dir) / args.task / "validation.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("{}\\n" * int(args.num_samples))
    """)
    _write(upstream / "OneRuler" / "synthetic" / "gen.py", _BURN)
    assert oneruler_speed.main(["--upstream", str(upstream), "--upstream-python",
                                _interpreter(tmp_path), "--languages", "sw", "--tasks",
                                "or_niah_single", "--lengths", "3000", "--samples", "1",
                                "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    _ratios(printed)
    assert "| sw | niah_single | 3000 |" in printed
    assert fake_env.read_text().split() == ["upstream"]
