"""The suite keeps Python's bytecode cache whatever the environment says (tests/conftest.py):
with PYTHONDONTWRITEBYTECODE set, every xdist worker compiled and assertion-rewrote every test
module and the package again at each run, and every `ruler` process a test starts compiled
the package again."""

from __future__ import annotations

import os
import sys


def test_bytecode_is_written_here_and_by_the_processes_tests_start():
    assert sys.dont_write_bytecode is False
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ  # inherited by workers and commands
