"""The code keeps the habits pyproject's `[tool.ruff]` names (line length, pyflakes, pycodestyle,
import order, bugbear): `ruff check` finds nothing in the repository's tracked files.

Tracked files only (`git ls-files`): the README's commands build and export into folders the
user may keep inside the checkout (`ruler export lm-eval ruler-data` writes a generated
`utils.py` there), and those are not the repository's code. Outside a git checkout (an sdist)
the folder is checked as ruff finds it."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import ROOT

pytestmark = [pytest.mark.subprocess]  # ruff and git run as the user runs them

needs_ruff = pytest.mark.skipif(
    importlib.util.find_spec("ruff") is None,
    reason="ruff is not installed: pip install -e '.[test]' -c constraints.txt")


def lint_targets(root: Path) -> list[str]:
    """What ruff checks in `root`: the tracked Python files of a git checkout that exist (a
    file deleted in the working tree is not there to check), else the whole folder."""
    try:
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--", "*.py"],
                                capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):  # no git here
        return ["."]
    if listed.returncode != 0:  # not a git checkout
        return ["."]
    return [p for p in listed.stdout.split("\0") if p and (root / p).is_file()]


def ruff_check(root: Path) -> subprocess.CompletedProcess:
    # --no-cache: nothing written into the checkout (other tests copy it)
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache",
                           "--output-format", "concise", *lint_targets(root)],
                          cwd=root, capture_output=True, text=True, timeout=300)


@needs_ruff
def test_ruff_check_finds_nothing():
    proc = ruff_check(ROOT)
    assert proc.returncode == 0, f"ruff check:\n{proc.stdout}{proc.stderr}"


@needs_ruff
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_only_tracked_files_are_linted(tmp_path):
    """A user's export inside the checkout (untracked: a generated module that is no part of
    the repository) does not fail the lint; the same file tracked, or outside git, does."""
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "clean.py").write_text('"""Clean."""\n')
    (repo / "ruler-data" / "lm_eval").mkdir(parents=True)
    (repo / "ruler-data" / "lm_eval" / "utils.py").write_text("import os\n")  # F401
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "pkg/clean.py"], check=True)
    assert lint_targets(repo) == ["pkg/clean.py"]
    assert ruff_check(repo).returncode == 0
    subprocess.run([*git, "add", "ruler-data"], check=True)  # tracked: it is linted
    assert "F401" in ruff_check(repo).stdout
    shutil.rmtree(repo / ".git")  # not a checkout: the whole folder
    assert lint_targets(repo) == ["."]
    assert "F401" in ruff_check(repo).stdout
