"""The installed shape: one import name, `ruler`; no import cycles; a wheel that works alone.

The repository keeps the design card's top-level folders (builder/, cards/, eval/, ...); the
package-dir mapping in pyproject.toml installs them as sub-packages of `ruler`. These tests
hold that shape: every module imports its siblings as `ruler.…`, the import graph has no cycle,
and a wheel holds nothing but `ruler` and runs `ruler` and `python -m ruler` from a fresh venv.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

#: The repository's top-level folders and modules: never importable names of their own.
REPO_NAMES = ("builder", "cards", "commands", "eval", "kernel", "release", "tokenizers_cache",
              "cli")
#: Modules that import an optional extra at import time (the Inspect task is Inspect's plugin).
NEEDS = {"ruler.eval.inspect": ("inspect_ai",),
         "ruler.eval.integrations.inspect_task": ("inspect_ai",)}


def _package_root() -> Path:
    spec = importlib.util.find_spec("ruler.builder")
    return Path(spec.origin).resolve().parents[1]


def _modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> file (tests/ and perf/ are not in
    the package; the setuptools `packages` list decides, so read it from pyproject)."""
    import tomllib

    root = _package_root()
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    out = {}
    for package in config["packages"]:
        folder = root.joinpath(*package.split(".")[1:])
        for file in sorted(folder.glob("*.py")):
            name = package if file.stem == "__init__" else f"{package}.{file.stem}"
            out[name] = file
    return out


def _imports(module: str, file: Path) -> list[tuple[str, int]]:
    """Every module an `import` statement in `file` names (module-level and inside
    functions: a function-level import closes a cycle all the same), with its line."""
    tree = ast.parse(file.read_text(encoding="utf-8"))
    package = module if file.stem == "__init__" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            found.append((base, node.lineno))
            found += [(f"{base}.{a.name}", node.lineno) for a in node.names]
    return found


def test_every_module_imports_the_project_as_ruler_only():
    modules = _modules()
    assert "ruler.builder.pipeline.run" in modules and "ruler.release" in modules
    bad = [f"{file.name}:{line} imports {name}" for module, file in modules.items()
           for name, line in _imports(module, file) if name.split(".")[0] in REPO_NAMES]
    assert bad == []


def test_the_import_graph_has_no_cycle():
    modules = _modules()
    graph = {m: sorted({n for n, _ in _imports(m, f) if n in modules and n != m})
             for m, f in modules.items()}
    # Depth-first search; a grey node met again is a cycle, reported as its path.
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []


@pytest.mark.subprocess
def test_a_fresh_interpreter_imports_every_module_and_no_repository_name(tmp_path):
    """Imported from a folder that is not the checkout, every module loads, and none of the
    repository's folder names becomes a module of its own."""
    names = sorted(m for m in _modules() if not m.endswith(".__main__")  # that one runs
                   and all(importlib.util.find_spec(dep) for dep in NEEDS.get(m, ())))
    code = (f"import importlib, json, sys\n"
            f"for name in {names!r}:\n"
            f"    importlib.import_module(name)\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            f"{REPO_NAMES!r})))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


@pytest.mark.slow  # end to end: a build and commands in their own processes
@pytest.mark.subprocess
def test_python_m_ruler_works_beside_a_build_folder_named_ruler(tmp_path):
    """A user may still name the output ./ruler (the default is ./ruler-data): in an editable
    install a folder of that name in the working directory shadows the package's __init__ as
    a namespace package, so nothing may depend on it. Build twice into it; the second run
    finds the first's files."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    args = [sys.executable, "-m", "ruler", "build", "--tokenizer", "gpt-4", "--tasks",
            "niah_single_1", "--lengths", "1024", "--samples", "2", "--no-progress",
            "--out", "ruler"]
    first = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    assert (tmp_path / "ruler" / "manifest.json").is_file()
    second = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "0 file(s) built, 1 up to date" in second.stdout


def _copy_tracked_files(root: Path, dest: Path) -> None:
    import shutil

    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=root, capture_output=True, timeout=60)
    if listed.returncode != 0:  # not a git checkout: the working tree minus local folders
        shutil.copytree(root, dest, ignore=shutil.ignore_patterns(
            ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", "ruler", "results"))
        return
    for rel in filter(None, listed.stdout.decode().split("\0")):
        if (root / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, dest / rel)


@pytest.mark.slow
def test_the_wheel_holds_only_ruler_and_runs_from_a_fresh_venv(tmp_path):
    """Build the wheel, list its top-level names, install it (and nothing else) into a new
    venv, then run `ruler --help`, `python -m ruler --help` and a small build there. The
    dependencies come from this environment's site-packages through a .pth line, which adds
    them to sys.path without running this environment's own .pth files (so its editable
    install of the checkout is not seen)."""
    # setuptools builds in the source tree's build/, where modules removed since an earlier
    # build would linger and end up in the wheel: build from a copy of the files git knows
    # (tracked, or new and not ignored).
    src = tmp_path / "src"
    _copy_tracked_files(_package_root(), src)
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-q", "-w", str(wheels), str(src)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = wheels.glob("ruler_bench-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"ruler"}
    assert "ruler/tokenizers_cache/registry.json" in names
    assert "ruler/cards/template.md" in names
    assert "ruler/cards/real_model.json" in names  # the card's real-model section
    assert not [n for n in names if n.startswith(("ruler/tests/", "ruler/perf/"))]

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    Path(site.stdout.strip(), "deps-from-test-env.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n")
    installed = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps",
                                "--no-index", str(wheel)],
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-3000:]

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    run = dict(cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    where = subprocess.run([str(py), "-c", "import ruler, ruler.eval.runner, ruler.release; "
                                           "print(ruler.__file__, ruler.__version__)"], **run)
    assert where.returncode == 0, where.stderr[-2000:]
    assert where.stdout.startswith(site.stdout.strip())  # the wheel's copy, not the checkout
    for args in ([str(venv / "bin" / "ruler"), "--help"], [str(py), "-m", "ruler", "--help"]):
        shown = subprocess.run(args, **run)
        assert shown.returncode == 0 and "build" in shown.stdout, shown.stderr[-2000:]
    out = tmp_path / "out"
    build = subprocess.run([str(venv / "bin" / "ruler"), "build", "--tokenizer", "llama-3.1",
                            "--tasks", "niah_single_2,vt", "--lengths", "2048", "--samples", "2",
                            "--out", str(out), "--no-progress"], **run)
    assert build.returncode == 0, build.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest["files"]) == ["data/llama-3.1/niah_single_2/2048.parquet",
                                         "data/llama-3.1/vt/2048.parquet"]
