"""Our build beside an upstream generator, timed the same way on both sides.

Each side's figures are its whole process tree's: wall seconds, and CPU seconds (user + system
of every process it started, start-up included, read from `RUSAGE_CHILDREN` once they have all
been waited for), with the machine's 1-minute load average when the side started and ended: on
a shared machine the wall time stretches with the load, the CPU seconds much less. Upstream
runs under the interpreter the user names (`--upstream-python`: upstream's own environment,
as its users run it; by default this one), whose imports are checked first, in one line.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

#: pip's name of a module whose import name differs
PIP_NAMES = {"yaml": "pyyaml", "sklearn": "scikit-learn", "bs4": "beautifulsoup4"}


@dataclass
class Side:
    """One side's run: its wall and CPU seconds and the load around it."""

    label: str
    wall: float = 0.0
    cpu: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average at the start and the end
    files: dict = field(default_factory=dict)  # per file: its own seconds

    def line(self) -> str:
        return (f"{self.label}: {self.wall:.1f} s wall, {self.cpu:.1f} CPU s (its processes' "
                f"user + system), load {self.load[0]:.1f} -> {self.load[1]:.1f}")


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


@contextmanager
def timed(side: Side) -> Iterator[Side]:
    """Time the processes started (and waited for) inside the block as `side`."""
    load, cpu, started = os.getloadavg()[0], _children_cpu(), time.perf_counter()
    try:
        yield side
    finally:
        side.wall = time.perf_counter() - started
        side.cpu = _children_cpu() - cpu
        side.load = (load, os.getloadavg()[0])


def add_upstream_python(parser) -> None:
    parser.add_argument("--upstream-python", default=sys.executable, metavar="PYTHON",
                        help="the interpreter upstream runs under: its own environment, as "
                             "upstream's users run it (default: this one)")


def check_imports(python: str, modules: Sequence[str], env: Mapping[str, str] | None = None,
                  cwd: Path | None = None) -> None:
    """Exit with one line when `python` cannot import a module upstream's generators import
    (checked before anything is timed, so a missing package is said as such, not as the
    traceback of a generator that failed halfway)."""
    code = ("import importlib, sys\n"
            "for m in sys.argv[1:]:\n"
            "    try:\n"
            "        importlib.import_module(m)\n"
            "    except Exception as e:\n"
            "        print(m, type(e).__name__)\n")
    try:
        done = subprocess.run([python, "-c", code, *modules], env=None if env is None
                              else dict(env), cwd=cwd, capture_output=True, text=True,
                              timeout=600)
    except OSError as e:
        raise SystemExit(f"--upstream-python {python}: cannot run it ({e.strerror or e})") \
            from None
    if done.returncode != 0:
        raise SystemExit(f"--upstream-python {python}: cannot run it "
                         f"({(done.stderr.strip().splitlines() or ['no output'])[-1]})")
    failed = [line.split() for line in done.stdout.splitlines() if line.strip()]
    if failed:
        names = [m for m, *_ in failed]
        hint = " ".join(PIP_NAMES.get(m, m) for m, *why in failed if why == ["ModuleNotFoundError"])
        raise SystemExit(
            f"upstream's interpreter {python} cannot import {', '.join(names)}, which its "
            f"generators import" + (f": pip install {hint} there" if hint else "") +
            " (or name another with --upstream-python)")


def interpreter_on_path(python: str, work: Path) -> str:
    """A PATH whose `python` is `python`: upstream's scripts start their generators with
    `python ...` through the shell, which must be the interpreter the user named."""
    folder = work / "upstream-bin"
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "python"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(Path(python).absolute())  # not resolved: a venv's python is a link
    return os.pathsep.join([str(folder), os.environ.get("PATH", "")])


def run_ours(argv: Sequence[str], out: Path) -> Side:
    """`ruler build ARGV --out OUT` in a fresh process (start-up included, as upstream's), with
    each file's own seconds read from what it prints."""
    side = Side("ours (ruler build)")
    cmd = [sys.executable, "-m", "ruler", "build", *argv, "--out", str(out), "--no-progress"]
    with timed(side):
        done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ruler build failed:\n{done.stderr[-3000:]}")
    for line in done.stdout.splitlines():  # "  data/<config>/<task>/<L>.parquet: ..., 1.2s, ..."
        if ".parquet:" in line:
            rel, rest = line.strip().split(": ", 1)
            _, config, task, name = rel.split("/")
            secs = next(p for p in rest.split(", ") if p.endswith("s") and p[:-1].replace(
                ".", "").isdigit())
            side.files[(config, task, int(name.split(".")[0]))] = float(secs[:-1])
    return side


def print_ratios(ours: Side, upstream: Side) -> None:
    """Both sides and how many times faster ours is, by wall and by CPU seconds."""
    print(ours.line())
    print(upstream.line())
    print(f"ratio (upstream / ours): wall {upstream.wall / max(ours.wall, 1e-9):.1f}x, "
          f"CPU {upstream.cpu / max(ours.cpu, 1e-9):.1f}x")
