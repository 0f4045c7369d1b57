"""The code keeps the habits pyproject's `[tool.ruff]` names (line length, pyflakes, pycodestyle,
import order, bugbear): `ruff check` finds nothing in the repository."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from helpers.paths import ROOT


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None,
                    reason="ruff is not installed: pip install -e '.[test]' -c constraints.txt")
def test_ruff_check_finds_nothing():
    # --no-cache: nothing written into the checkout (other tests copy it)
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache",
                           "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"ruff check:\n{proc.stdout}{proc.stderr}"
