"""The unit tier, `python -m pytest -m unit`: tests that build nothing, start no process and
open no socket, for the inner loop. A pytest plugin (conftest loads it).

A test declares what it needs with a marker: `build` (rows made by the builder, in the test or
in a fixture it uses), `subprocess` (a process started: the `ruler` command, spawned build or
eval workers) or `network` (a socket: a loopback server, a connection attempt). Every test
with none of these, nor `slow`, `vllm` or `engines`, is given the `unit` marker, and while it
runs (its fixtures too) the three are watched: a unit test that builds, starts a process or
opens a socket fails, naming the marker it lacks. A fixture seen doing one of them makes every
later unit test that uses it fail the same way, so a shared build cannot hide behind the test
that first set it up. Watching costs nothing measurable.
"""

from __future__ import annotations

import multiprocessing.process
import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

#: The markers that take a test out of the unit tier: what it needs, and the larger tiers.
NEEDS = {
    "build": "rows made by the builder, in the test or a fixture it uses",
    "subprocess": "a process started: the ruler command, spawned build or eval workers",
    "network": "a socket opened: a loopback server, a connection attempt",
}
OUTSIDE = (*NEEDS, "slow", "vllm", "engines")

_seen: list[str] = []  # what the watched code did in this phase, as the marker it needs
_fixtures_seen: dict[str, set[str]] = {}  # fixture (baseid::name) -> markers its setup needed


def pytest_configure(config: pytest.Config) -> None:
    for name, what in NEEDS.items():
        config.addinivalue_line("markers", f"{name}: needs {what}; not in the unit tier")
    config.addinivalue_line("markers", "unit: needs no build, no process and no socket "
                                       "(given to every test not marked "
                                       f"{', '.join(OUTSIDE)}); checked while it runs")
    _install()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not any(item.get_closest_marker(m) for m in OUTSIDE):
            item.add_marker(pytest.mark.unit)


def _note(marker: str) -> None:
    _seen.append(marker)


def _wrap(owner: object, name: str, marker: str,
          applies: Callable[..., bool] = lambda *a, **k: True) -> None:
    real = getattr(owner, name)

    def watched(*args, **kwargs):
        if applies(*args, **kwargs):
            _note(marker)
        return real(*args, **kwargs)

    watched.__wrapped__ = real  # type: ignore[attr-defined]
    setattr(owner, name, watched)


def _inet(sock: socket.socket, *args, **kwargs) -> bool:
    return sock.family in (socket.AF_INET, socket.AF_INET6)


def _install() -> None:
    """Watch the three, once per process (each call noted, then the real function)."""
    if getattr(subprocess.Popen._execute_child, "__wrapped__", None):
        return
    _wrap(subprocess.Popen, "_execute_child", "subprocess")
    _wrap(multiprocessing.process.BaseProcess, "start", "subprocess")
    _wrap(os, "fork", "subprocess")
    # listen, not bind: urllib3 binds a socket to ::1 on import, to learn whether IPv6 works
    for name in ("listen", "connect", "connect_ex"):
        _wrap(socket.socket, name, "network", _inet)
    # Every built row is made by a Worker (in this process or a spawned one), every built file
    # published by the building process.
    from ruler.builder.pipeline.publish import Publisher
    from ruler.builder.pipeline.worker import Worker

    _wrap(Worker, "make_row", "build")
    _wrap(Publisher, "publish", "build")


@contextmanager
def _watch(item: pytest.Item, phase: str) -> Iterator[None]:
    _seen.clear()
    yield
    needed = set(_seen)
    _seen.clear()
    if item.get_closest_marker("unit") is None:
        return
    if phase == "setup":  # fixtures an earlier test set up (cached) count as well
        for name in item.fixturenames:
            for fixturedef in item._fixtureinfo.name2fixturedefs.get(name, ()):
                needed |= _fixtures_seen.get(f"{fixturedef.baseid}::{name}", set())
    if needed and os.environ.get("UNIT_TIER_REPORT"):
        with open(os.environ["UNIT_TIER_REPORT"], "a") as f:
            f.write(f"{item.nodeid}\t{','.join(sorted(needed))}\n")
        return
    if needed:
        pytest.fail(f"{item.nodeid} is in the unit tier but needs "
                    f"{' and '.join(f'{m} ({NEEDS[m]})' for m in sorted(needed))}: mark it "
                    f"{' and '.join(f'@pytest.mark.{m}' for m in sorted(needed))} (or its "
                    f"module: pytestmark)", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest):
    start = len(_seen)
    try:
        return (yield)
    finally:
        if len(_seen) > start:
            key = f"{fixturedef.baseid}::{fixturedef.argname}"
            _fixtures_seen.setdefault(key, set()).update(_seen[start:])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    with _watch(item, "setup"):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    with _watch(item, "call"):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    with _watch(item, "teardown"):
        return (yield)
