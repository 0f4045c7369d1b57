"""The documentation: the command-line reference is what the parser generates."""

from __future__ import annotations

import subprocess
import sys

from helpers.paths import ROOT

DOCS = ROOT / "docs"


def test_the_cli_reference_is_generated_from_the_parser():
    """docs/cli.md is what docs/cli_reference.py writes now (in a fresh process: a backend a
    test registered here would be on the page)."""
    done = subprocess.run([sys.executable, str(DOCS / "cli_reference.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
