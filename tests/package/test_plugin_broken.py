"""A broken or clashing installed plug-in is one warning line naming it and its package; every
command that does not need it works, `ruler --help` first; a command that needs it fails in one
line (issue 40.14: one such package broke every command with two tracebacks).

The package, written here, offers in each of ruler's entry point groups an entry whose module
fails to import, plus the other ways a plug-in goes wrong: a name a built-in has (backend
`fake`, exporter `lm-eval`), `sys.exit` at import, an object of the wrong kind, options that
make no command line, a variant flag the build has already (`--out`). It is pip-installed for
real into a folder of its own put on PYTHONPATH for the commands below only (as
`test_plugin_package.py` does), so no other test's environment sees it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

DIST = "ruler-broken-plugin"

#: group -> entry point name -> target
ENTRY_POINTS = {
    "ruler.backends": {"broken-backend": "broken_plugin.missing:SPEC",
                       "fake": "broken_plugin.parts:FAKE",
                       "no-options": "broken_plugin.parts:NO_OPTIONS"},
    "ruler.benchmarks": {"broken_bench": "broken_plugin.missing:BENCHMARK",
                         "number": "broken_plugin.parts:NUMBER"},
    "ruler.exporters": {"broken-export": "broken_plugin.missing:EXPORTER",
                        "lm-eval": "broken_plugin.parts:LM_EVAL",
                        "no-options": "broken_plugin.parts:NO_OPTIONS_EXPORTER"},
    "ruler.metrics": {"exits": "broken_plugin.exits:SPEC",
                      "broken_metric": "broken_plugin.missing:SPEC"},
    "ruler.variants": {"broken_variant": "broken_plugin.missing:Variant",
                       "takes_out": "broken_plugin.parts:TakesOut"},
    "ruler.task_families": {"broken_family": "broken_plugin.missing:register"},
    "ruler.prediction_readers": {"broken-reader": "broken_plugin.missing:READER"},
    "ruler.publish_steps": {"broken-step": "broken_plugin.missing:STEP"},
}

MODULES = {
    "__init__.py": "",
    "missing.py": "import ruler_broken_plugin_engine  # not installed anywhere\n",
    "exits.py": "import sys\n\nsys.exit(3)\n",
    "parts.py": '''
from dataclasses import dataclass

from ruler.kernel.flags import option
from ruler.catalog.variants import Variant
from ruler.eval.backends import BackendSpec
from ruler.eval.integrations.exporters import Exporter

NUMBER = 42


def _never(*args):
    raise AssertionError("a clashing plug-in's entry was used")


FAKE = BackendSpec(name="fake", factory=_never, summary="the plug-in's own fake")
LM_EVAL = Exporter(name="lm-eval", help="the plug-in's own lm-eval", options=object, run=_never)


class NotOptions:
    pass


NO_OPTIONS = BackendSpec(name="no-options", factory=_never, options_type=NotOptions)
NO_OPTIONS_EXPORTER = Exporter(name="no-options", help="h", options=NotOptions, run=_never)


@dataclass(frozen=True)
class TakesOut(Variant):
    where: str = option("--out", default="x", help="the build's --out, taken")
    field = "takes_out"
''',
}

TOK, L = "gpt-4", 1024


def _pyproject() -> str:
    groups = "".join(f'\n[project.entry-points."{group}"]\n'
                     + "".join(f'"{name}" = "{target}"\n' for name, target in eps.items())
                     for group, eps in ENTRY_POINTS.items())
    return ('[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
            f'\n[project]\nname = "{DIST}"\nversion = "1.0"\n\n[tool.setuptools]\n'
            f'packages = ["broken_plugin"]\n{groups}')


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The package pip-installed into a folder of its own (never this environment)."""
    root = tmp_path_factory.mktemp("broken_plugin")
    src, site = root / "src", root / "site"
    (src / "broken_plugin").mkdir(parents=True)
    (src / "pyproject.toml").write_text(_pyproject())
    for name, text in MODULES.items():
        (src / "broken_plugin" / name).write_text(text.lstrip())
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                           "--no-build-isolation", "--quiet", "--target", str(site), str(src)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return site


def _ruler(site: Path, *argv: str, status: int = 0) -> subprocess.CompletedProcess:
    script = Path(sysconfig.get_path("scripts")) / "ruler"
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
           "PYTHONPATH": str(site)}
    done = subprocess.run([str(script), *argv], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == status, f"{argv}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _warnings(stderr: str) -> list[str]:
    """The warning lines; every other stderr line is not one of them (progress, errors)."""
    return [line for line in stderr.splitlines() if line.startswith("ruler: warning:")]


@pytest.mark.slow
@pytest.mark.subprocess
def test_help_works_and_says_each_broken_entry_once(site):
    for argv in (["--help"], ["build", "--help"], ["eval", "--help"], ["export", "--help"],
                 ["score", "--help"]):
        done = _ruler(site, *argv)
        assert done.stdout.startswith("usage: ruler")
        warned = _warnings(done.stderr)
        assert warned and len(warned) == len(set(warned))  # once each
        assert all(DIST in line for line in warned)  # naming the package
        assert len(done.stderr.splitlines()) == len(warned)  # and nothing else
    every = _warnings(_ruler(site, "eval", "--help").stderr)
    said = "\n".join(every)
    for fragment in ("backend 'broken-backend'", "offers backend 'fake', which is registered "
                     "already (by ruler)", "backend 'no-options'", "benchmark 'broken_bench'",
                     "benchmark 'number'", "is int 42, not a benchmark",
                     "exporter 'broken-export'", "offers exporter 'lm-eval'",
                     "exporter 'no-options'", "variant 'broken_variant'",
                     "variant 'takes_out'", "its flag --out is taken already",
                     "No module named 'ruler_broken_plugin_engine'"):
        assert fragment in said, fragment
    text = " ".join(_ruler(site, "eval", "--help").stdout.split())
    assert "--backend {vllm,openai,hf,fake}" in text
    frameworks = _ruler(site, "export", "--help").stdout.split("FRAMEWORK\n")[1]
    assert [line.split()[0] for line in frameworks.splitlines()
            if line.startswith("    ") and not line.startswith("     ")] == ["lm-eval", "kvpress"]


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.build
def test_commands_that_do_not_need_it_work(site, tmp_path):
    data, run = tmp_path / "data", tmp_path / "run"
    _ruler(site, "build", "--tokenizer", TOK, "--tasks", "niah_single_1", "--lengths", str(L),
           "--samples", "2", "--workers", "1", "--no-progress", "--out", str(data))
    assert "\nOK: 1 files, 2 rows" in _ruler(site, "verify", str(data)).stdout
    # the built-in fake, not the plug-in's clashing one (whose factory raises)
    _ruler(site, "eval", "--backend", "fake", "--model", "m", "--model-tokenizer", TOK,
           "--data", str(data), "--out", str(run), "--no-progress", "--no-plots",
           "--render-workers", "0")
    scored = _ruler(site, "score", "--predictions", str(run / "predictions.jsonl"), "--data",
                    str(data), "--strict", "--no-plots")
    assert "complete" in scored.stdout
    _ruler(site, "export", "lm-eval", str(data), "--out", str(tmp_path / "lm"))
    assert (tmp_path / "lm" / "utils.py").is_file()


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_command_that_needs_it_fails_in_one_line(site, tmp_path):
    def refused(*argv: str) -> str:
        done = _ruler(site, *argv, status=2)
        others = [x for x in done.stderr.splitlines() if not x.startswith("ruler: warning:")]
        errors = [x for x in others if "error:" in x]
        assert len(errors) == 1, done.stderr
        return errors[0]

    assert "invalid choice: 'broken-backend'" in refused(
        "eval", "--backend", "broken-backend", "--model", "m", "--data", str(tmp_path))
    assert "invalid choice: 'broken-export'" in refused("export", "broken-export", "x")
    assert "invalid choice: 'broken_bench'" in refused(
        "build", "--benchmark", "broken_bench", "--tokenizer", TOK)
    assert refused("build", "--tokenizer", TOK, "--tasks", "broken_family", "--out",
                   str(tmp_path / "b")).startswith("ruler: error: unknown task(s) broken_family")
    # asked for by name through the registry (the API's way): why it is missing, in one line
    code = ("from ruler.eval.metrics.specs import METRIC_SPECS\n"
            "try:\n    METRIC_SPECS['exits']\n"
            "except Exception as e:\n    print(type(e).__name__, e)\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr  # sys.exit(3) at import was not obeyed
    assert done.stdout.startswith("RulerError metric 'exits' (broken_plugin.exits:SPEC, plug-in "
                                  f"{DIST} (entry point exits in group ruler.metrics)) failed "
                                  "to load: it called sys.exit(3)")
