"""The unit tier's check (helpers/unit_tier.py) in a pytest session of its own: a test with
no marker that opens a socket or starts a process fails, naming the marker it lacks, and so
does a later test that only uses a fixture which did; the same tests marked pass and are left
out of `-m unit`."""

from __future__ import annotations

import os

import pytest

from helpers.paths import ROOT

INNER = '''
import socket, subprocess, sys
import pytest

def _listen():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()

@pytest.fixture(scope="module")
def spawned():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_plain():
    assert 1 + 1 == 2

def test_listens_unmarked():
    _listen()

@pytest.mark.network
def test_listens_marked():
    _listen()

@pytest.mark.subprocess
def test_spawns_marked(spawned):
    pass

def test_uses_a_fixture_that_spawned(spawned):
    pass
'''


@pytest.mark.subprocess
def test_a_unit_test_that_connects_or_spawns_fails_naming_its_marker(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT / "tests"), str(ROOT)]))
    pytester.makepyfile(test_inner=INNER)
    run = pytester.runpytest_subprocess("-p", "helpers.unit_tier", "-p", "no:cacheprovider",
                                        "-rf")
    run.assert_outcomes(passed=3, failed=1, errors=1)  # the fixture's: at set-up
    out = run.stdout.str()
    assert "test_listens_unmarked is in the unit tier but needs network" in out
    assert "test_uses_a_fixture_that_spawned is in the unit tier but needs subprocess" in out
    assert "mark it @pytest.mark.network" in out and "mark it @pytest.mark.subprocess" in out

    unit = pytester.runpytest_subprocess("-p", "helpers.unit_tier", "-p", "no:cacheprovider",
                                         "-m", "unit", "-q")
    unit.assert_outcomes(passed=1, failed=1, errors=1, deselected=2)
