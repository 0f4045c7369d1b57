"""In CI a skip must be expected: a test skipped for a reason `tests/expected_skips.toml` does
not declare fails the session (exit 1, each one named with its reason). Elsewhere skips are
only skips. A pytest plugin (conftest loads it).

Without this, a CI stage passed while its engine tests skipped for a missing dependency (an
import of vLLM that failed, a framework not installed) and tested nothing. CI is the `CI`
environment variable set to a true value (`.ci/run` sets it; so do hosted CI services).

Each declared skip names the test (a node id, `fnmatch` patterns allowed: a module skipped
whole is its path), a regular expression its reason must match, why the skip is expected, and
optionally `deselected`: a marker such that the skip is expected only in a run whose `-m`
expression leaves that marker's tests out (stage 1 runs `not vllm and not engines`: a module
of engine tests that cannot be imported there is skipped whole before its tests are
deselected, and stage 2, which selects them, must run it). With pytest-xdist the controller
checks the reports the workers send (a module's skip, sent by each worker, counts once).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

#: Where the declared skips are, relative to the rootdir (the ini option `expected_skips`).
DEFAULT_FILE = "tests/expected_skips.toml"


@dataclass(frozen=True)
class ExpectedSkip:
    test: str  # node id or fnmatch pattern
    reason: str  # regular expression searched in the skip's reason
    why: str  # why it may skip (for the reader; required)
    deselected: str | None = None  # expected only where `-m` leaves this marker's tests out

    def matches(self, nodeid: str, reason: str, markexpr: str) -> bool:
        return (fnmatchcase(nodeid, self.test) and re.search(self.reason, reason) is not None
                and (self.deselected is None or _leaves_out(markexpr, self.deselected)))


@dataclass(frozen=True)
class Skip:
    nodeid: str
    reason: str


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes", "on")


def read_expected(path: Path) -> tuple[ExpectedSkip, ...]:
    """The declared skips of `path` (TOML, `[[skip]]` tables)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    entries = data.get("skip", [])
    try:
        return tuple(ExpectedSkip(**entry) for entry in entries)
    except TypeError as e:
        raise pytest.UsageError(f"{path}: each [[skip]] has test, reason, why and optionally "
                                f"deselected: {e}") from None


def unexpected(skips: list[Skip], expected: tuple[ExpectedSkip, ...],
               markexpr: str) -> list[Skip]:
    """The skips no declared one matches."""
    return [s for s in skips if not any(e.matches(s.nodeid, s.reason, markexpr)
                                        for e in expected)]


def _leaves_out(markexpr: str, marker: str) -> bool:
    """Whether a `-m` expression deselects a test marked `marker` (and nothing else that
    matters: other markers absent)."""
    if not markexpr:
        return False
    from _pytest.mark.expression import Expression

    return not Expression.compile(markexpr).evaluate(lambda name, **kwargs: name == marker)


def _reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


class SkipCheck:
    """The plugin: records skips, and in CI fails the session over unexpected ones."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.skips: dict[str, Skip] = {}  # by node id: a module's skip from each worker once
        self.found: list[Skip] = []

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped:
            self.skips.setdefault(report.nodeid, Skip(report.nodeid, _reason(report)))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skips.setdefault(report.nodeid, Skip(report.nodeid, _reason(report)))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not in_ci() or hasattr(self.config, "workerinput"):  # an xdist worker: the
            return  # controller has every report
        path = self.config.rootpath / self.config.getini("expected_skips")
        expected = read_expected(path) if path.is_file() else ()
        self.found = unexpected(list(self.skips.values()), expected,
                                self.config.getoption("markexpr", "") or "")
        if self.found and session.exitstatus in (pytest.ExitCode.OK,
                                                 pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.found:
            return
        where = self.config.getini("expected_skips")
        terminalreporter.section("unexpected skips (CI)", red=True)
        for skip in self.found:
            terminalreporter.line(f"{skip.nodeid}: {skip.reason}")
        terminalreporter.line(f"{len(self.found)} test(s) skipped in CI for a reason {where} "
                              f"does not declare: make them run, or declare the skip there "
                              f"with why it is expected")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("expected_skips", default=DEFAULT_FILE,
                  help="TOML file of the skips expected in CI (tests/helpers/expected_skips.py)")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SkipCheck(config), "expected-skips")
