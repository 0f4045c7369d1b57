"""In CI an unexpected skip fails the session (helpers/expected_skips.py; issue 40.28: a CI
stage passed while its engine tests skipped for a missing dependency). Checked in pytest
sessions of their own on a tiny test folder, with and without CI=true and pytest-xdist, and on
the suite's own declarations."""

from __future__ import annotations

import os

import pytest

from helpers.expected_skips import ExpectedSkip, Skip, read_expected, unexpected
from helpers.paths import ROOT

TESTS = {
    "test_engine": '''
import pytest
pytest.importorskip("ruler_no_such_engine")
pytestmark = pytest.mark.engines

def test_needs_it():
    pass
''',
    "test_plain": '''
import pytest

def test_runs():
    pass

def test_skips_as_declared():
    pytest.skip("declared: nothing to do here")

def test_skips_for_a_missing_dependency():
    pytest.importorskip("ruler_no_such_framework")

@pytest.mark.xfail(reason="known")
def test_expected_to_fail():
    assert False
''',
}

DECLARED = '''
[[skip]]
test = "test_plain.py::test_skips_as_declared"
reason = "^declared: "
why = "a declared skip"

[[skip]]
test = "test_engine.py"
reason = "could not import 'ruler_no_such_engine'"
deselected = "engines"
why = "the engine is another stage's"
'''


@pytest.fixture
def folder(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT / "tests"), str(ROOT)]))
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(**TESTS)
    pytester.makefile(".toml", skips=DECLARED)
    pytester.makeini("[pytest]\nexpected_skips = skips.toml\nmarkers =\n    engines: e\n")
    return pytester


def _run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "helpers.expected_skips", "-p",
                                         "no:cacheprovider", *args)


@pytest.mark.subprocess
def test_outside_ci_a_skip_is_a_skip(folder):
    run = _run(folder, "-m", "not engines")
    assert run.ret == 0
    run.assert_outcomes(passed=1, skipped=3, xfailed=1)
    assert "unexpected skips" not in run.stdout.str()


@pytest.mark.subprocess
def test_in_ci_an_undeclared_skip_fails_the_session_naming_it(folder, monkeypatch):
    monkeypatch.setenv("CI", "true")
    run = _run(folder, "-m", "not engines")
    assert run.ret == 1
    out = run.stdout.str()
    assert "unexpected skips (CI)" in out
    assert ("test_plain.py::test_skips_for_a_missing_dependency: could not import "
            "'ruler_no_such_framework'") in out
    assert "1 test(s) skipped in CI for a reason skips.toml does not declare" in out
    # the declared ones are not named: the skip itself, and the engine module in a run
    # that leaves engine tests out
    assert "test_skips_as_declared:" not in out and "test_engine.py:" not in out


@pytest.mark.subprocess
def test_in_ci_a_declared_module_skip_is_unexpected_where_its_tests_are_selected(folder,
                                                                                monkeypatch):
    """The stage that selects the engine tests must run them: the module's skip fails it."""
    monkeypatch.setenv("CI", "true")
    folder.makepyfile(test_plain="def test_runs():\n    pass\n")
    run = _run(folder, "-m", "engines")
    assert run.ret == 1
    assert "test_engine.py: could not import 'ruler_no_such_engine'" in run.stdout.str()
    assert _run(folder, "-m", "not engines").ret == 0  # where they are left out: expected


@pytest.mark.subprocess
def test_in_ci_with_xdist_the_controller_checks_every_workers_skips(folder, monkeypatch):
    monkeypatch.setenv("CI", "true")
    run = _run(folder, "-n", "2", "-m", "not engines")
    assert run.ret == 1
    out = run.stdout.str()
    assert out.count("test_skips_for_a_missing_dependency: could not import") == 1
    assert "1 test(s) skipped in CI" in out


@pytest.mark.subprocess
def test_in_ci_a_failure_keeps_its_exit_status(folder, monkeypatch):
    monkeypatch.setenv("CI", "1")
    folder.makepyfile(test_fails="def test_fails():\n    assert False\n")
    assert _run(folder, "-m", "not engines").ret == 1


# --- the suite's own declarations --------------------------------------------------------------

def test_the_suites_declarations_are_well_formed_and_say_why():
    expected = read_expected(ROOT / "tests" / "expected_skips.toml")
    assert expected and all(e.why.strip() and e.reason for e in expected)
    for e in expected:
        path = ROOT / e.test.split("::")[0]
        assert path.is_file(), f"{e.test}: no such test file"


def test_a_stage_one_module_skip_is_expected_there_only():
    expected = read_expected(ROOT / "tests" / "expected_skips.toml")
    ray = Skip("tests/builder/pipeline/test_build_ray.py",
               "could not import 'ray': No module named 'ray'")
    assert unexpected([ray], expected, "not vllm and not engines") == []
    assert unexpected([ray], expected, "vllm or engines") == [ray]
    assert unexpected([ray], expected, "") == [ray]
    vllm = Skip("tests/eval/backends/test_eval_vllm.py::test_x",
                "import vllm failed: ImportError: libcuda.so")
    assert unexpected([vllm], expected, "vllm or engines") == [vllm]


def test_a_declaration_matches_its_test_and_reason_only():
    e = ExpectedSkip("tests/a.py::test_b*", "^no template", why="w")
    assert e.matches("tests/a.py::test_b[llama-2]", "no template here", "")
    assert not e.matches("tests/a.py::test_c", "no template here", "")
    assert not e.matches("tests/a.py::test_b[x]", "other reason", "")
