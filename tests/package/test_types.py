"""Types: mypy with pyproject's config (`[tool.mypy]`: its default error codes, and the bodies
of unannotated functions) finds nothing in the package beyond the per-module allowances of
`mypy_allowances.toml`, which only shrink; and no record path takes or gives an untyped JSON
object.

mypy checks every module of the installed package (third-party imports are `Any`: the check
depends on this code alone). It is strict in the modules `[[tool.mypy.overrides]]` lists, where
the manifest, run.json and scores.json records cross modules: there every function is
annotated and a record used as anything else (indexed as a dict, given where another type is
expected, None where it may be absent) is an error. The scan below makes sure those
annotations name records: no public function, method or record field there takes or returns a
`dict[str, Any]` (or `Mapping[str, Any]`) but the JSON edges listed in `JSON_EDGES`, each with
its reason.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import pytest

from helpers.paths import ROOT

needs_mypy = pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy is not installed: pip install -e '.[test]' -c constraints.txt")

PACKAGE = "ruler"
#: The modules allowed mypy errors while they last: how many, and why (see `allowances`).
ALLOWANCES = Path(__file__).with_name("mypy_allowances.toml")


def strict_modules() -> list[str]:
    """The modules pyproject's strict mypy section lists (the record paths)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (strict,) = [o for o in config["tool"]["mypy"]["overrides"] if o.get("disallow_untyped_defs")]
    return list(strict["module"])


def module_path(name: str) -> Path:
    """The source file of `ruler.a.b` in this checkout (the repository root is `ruler`)."""
    parts = name.split(".")[1:]
    path = ROOT.joinpath(*parts)
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


#: What builds the package's tree for mypy: setuptools' strict editable install (PEP 660's
#: `build_editable` hook with `editable_mode=strict`), which lays the package out as a wheel
#: installs it, `ruler/` and the sub-packages pyproject lists, as links to the checkout's files,
#: in `build/__editable__.<dist>-<tag>/` (setuptools' documented auxiliary folder).
BUILD_TREE = ("import sys\n"
              "from setuptools import build_meta\n"
              "build_meta.build_editable(sys.argv[1], {'editable_mode': 'strict'})\n")


def package_tree(tmp_path: Path) -> Path:
    """The folder that holds the package `ruler` as installed, for mypy to find it: the
    default editable install maps `ruler` to the checkout with an import hook, which mypy does
    not run, so the strict install's tree is made again (today's files) on every run."""
    wheels = tmp_path / "editable-wheel"
    wheels.mkdir(exist_ok=True)
    made = subprocess.run([sys.executable, "-c", BUILD_TREE, str(wheels)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    trees = sorted((ROOT / "build").glob("__editable__.ruler_bench-*"),
                   key=lambda p: p.stat().st_mtime)
    assert trees and (trees[-1] / PACKAGE / "__init__.py").is_file(), made.stdout[-2000:]
    return trees[-1]


def run_mypy(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """mypy with pyproject's config over the package as installed (`package_tree`), its cache
    in `tmp_path`. One run at a time per checkout: the tree's folder is the checkout's."""
    from filelock import FileLock

    (ROOT / "build").mkdir(exist_ok=True)
    with FileLock(str(ROOT / "build" / ".mypy-tree.lock")):
        tree = package_tree(tmp_path)
        env = {**os.environ, "MYPYPATH": str(tree)}
        return subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                               str(ROOT / "pyproject.toml"), "--cache-dir",
                               str(tmp_path / "cache"), *args], cwd=tree, env=env,
                              capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def mypy_dir(request, tmp_path_factory) -> Path:
    """One folder (editable wheel and cache) for this module's mypy runs, so the second reuses the
    first's analysis of the package: in pytest's own cache (.pytest_cache, ignored by git),
    kept between sessions as mypy keeps its cache between runs (mypy checks again what
    changed), else (`-p no:cacheprovider`) a temporary folder."""
    cache = getattr(request.config, "cache", None)
    return cache.mkdir("mypy") if cache is not None else tmp_path_factory.mktemp("mypy")


@dataclass(frozen=True)
class Allowance:
    errors: int  # the errors mypy finds in the module today
    reason: str  # why they stay for now


def allowances(path: Path = ALLOWANCES) -> dict[str, Allowance]:
    """The modules allowed mypy errors: `[allow."ruler.x.y"]` tables of `errors` and
    `reason`."""
    tables = tomllib.loads(path.read_text(encoding="utf-8")).get("allow", {})
    return {module: Allowance(int(t["errors"]), str(t.get("reason", "")))
            for module, t in tables.items()}


#: One mypy error line: `ruler/eval/x.py:12: error: message  [code]`.
ERROR = re.compile(r"^(?P<path>[^:\n]+\.py):(?P<line>\d+): error: (?P<message>.*)$")


def errors_by_module(output: str) -> dict[str, list[str]]:
    """mypy's error lines by module (`ruler.eval.x`; a package's `__init__.py` is the
    package): every line that says `error:` must be one."""
    found: dict[str, list[str]] = {}
    for line in output.splitlines():
        m = ERROR.match(line)
        if m is None:
            assert ": error:" not in line, f"an error line not understood: {line}"
            continue
        parts = Path(m["path"]).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found.setdefault(module, []).append(f"{m['line']}: {m['message']}")
    return found


def allowance_problems(found: Mapping[str, list[str]],
                       allowed: Mapping[str, Allowance]) -> list[str]:
    """What is wrong between the errors mypy found and the allowances: an error in a module
    not listed, more errors than a module is allowed, fewer (its count must come down, or the
    module leave the list once clean), an allowance without its reason."""
    problems = []
    for module, errors in sorted(found.items()):
        allowance = allowed.get(module)
        if allowance is None or len(errors) > allowance.errors:
            limit = "none" if allowance is None else allowance.errors
            problems.append(f"{module}: {len(errors)} error(s), {limit} allowed:\n    "
                            + "\n    ".join(errors))
    for module, allowance in sorted(allowed.items()):
        n = len(found.get(module, ()))
        if n < allowance.errors:
            problems.append(f"{module}: {n} error(s), {allowance.errors} allowed: "
                            + (f"lower its allowance to {n}" if n else
                               "it is clean, remove it from the list"))
        if not allowance.reason.strip():
            problems.append(f"{module}: its allowance gives no reason")
    return problems


@needs_mypy
@pytest.mark.subprocess
def test_mypy_finds_nothing_beyond_the_allowances(mypy_dir):
    proc = run_mypy(mypy_dir, "-p", PACKAGE)
    assert proc.returncode in (0, 1) and not proc.stderr, f"mypy:\n{proc.stdout}{proc.stderr}"
    found = errors_by_module(proc.stdout)
    counted = sum(map(len, found.values()))
    assert ("Success: no issues found" in proc.stdout) == (counted == 0), proc.stdout
    assert f"Found {counted} error" in proc.stdout or counted == 0, proc.stdout
    problems = allowance_problems(found, allowances())
    assert problems == [], (f"mypy against {ALLOWANCES.name} (the list only shrinks):\n"
                            + "\n".join(problems))


def test_the_allowances_only_shrink(tmp_path):
    """The comparison above fails on an error in a module not listed, on an error more than
    allowed, on an allowance no longer used (fewer errors, or none) and on one without a
    reason; it passes when each listed module has exactly its count."""
    out = ("ruler/eval/a.py:3: error: x  [arg-type]\n"
           "ruler/eval/a.py:9: error: y  [index]\n"
           "ruler/cards/__init__.py:1: error: z  [misc]\n"
           "Found 3 errors in 2 files (checked 9 source files)\n")
    found = errors_by_module(out)
    assert found == {"ruler.eval.a": ["3: x  [arg-type]", "9: y  [index]"],
                     "ruler.cards": ["1: z  [misc]"]}
    exact = {"ruler.eval.a": Allowance(2, "why"), "ruler.cards": Allowance(1, "why")}
    assert allowance_problems(found, exact) == []
    (unlisted,) = allowance_problems(found, {"ruler.eval.a": Allowance(2, "why")})
    assert unlisted.startswith("ruler.cards: 1 error(s), none allowed")
    (grown,) = allowance_problems(found, {**exact, "ruler.eval.a": Allowance(1, "why")})
    assert grown.startswith("ruler.eval.a: 2 error(s), 1 allowed") and "9: y" in grown
    (fewer,) = allowance_problems(found, {**exact, "ruler.eval.a": Allowance(3, "why")})
    assert fewer == "ruler.eval.a: 2 error(s), 3 allowed: lower its allowance to 2"
    (clean,) = allowance_problems(found, {**exact, "ruler.eval.b": Allowance(1, "why")})
    assert clean == "ruler.eval.b: 0 error(s), 1 allowed: it is clean, remove it from the list"
    (silent,) = allowance_problems(found, {**exact, "ruler.cards": Allowance(1, " ")})
    assert silent == "ruler.cards: its allowance gives no reason"
    listed = tmp_path / "allow.toml"
    listed.write_text('[allow."ruler.eval.a"]\nerrors = 2\nreason = "why"\n')
    assert allowances(listed) == {"ruler.eval.a": Allowance(2, "why")}
    assert all(module_path(m).is_file() for m in allowances()), "an allowance names no module"


@needs_mypy
@pytest.mark.subprocess
def test_mypy_sees_a_record_used_as_a_dict(mypy_dir):
    """The check above cannot pass by seeing no types: a scores cell indexed as the dict it
    used to be, a manifest build's tokenizer read with `.get`, a config field whose default is
    not of its type (`option` is typed as `field` is), the body of an unannotated function,
    a source's kind taken for another's and a tokenizer registry entry read as a dict: each is
    an error."""
    probe = ("from dataclasses import dataclass\n"
             "from ruler.kernel.flags import option\n"
             "from ruler.builder.manifest import BuildEntry\n"
             "from ruler.catalog.sources import SOURCES\n"
             "from ruler.builder.tokenizer_registry import registry\n"
             "from ruler.eval.records.scores_record import CellScore\n"
             "def rows(c: CellScore) -> int:\n"
             "    return c['rows']\n"
             "def name(b: BuildEntry) -> str:\n"
             "    return b.tokenizer.get('name')\n"
             "@dataclass(frozen=True)\n"
             "class Config:\n"
             "    port: int = option('--port', default='80')\n"
             "def unannotated():\n"
             "    seed: int = 'x'\n"
             "    return SOURCES['mmlu'].hub, registry()['gpt-4']['url']\n")
    proc = run_mypy(mypy_dir, "-c", probe)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert 'Value of type "CellScore" is not indexable' in proc.stdout
    assert '"TokenizerRecord" has no attribute "get"' in proc.stdout
    assert ('<string>:13: error: Incompatible types in assignment (expression has type "str", '
            'variable has type "int")') in proc.stdout
    assert '<string>:15: error: Incompatible types in assignment' in proc.stdout
    assert 'Item "FileSource" of' in proc.stdout and 'has no attribute "hub"' in proc.stdout
    assert 'Value of type "RegistryEntry" is not indexable' in proc.stdout


# --- no untyped JSON object crosses a record path ---------------------------------------------

UNTYPED = re.compile(r"\b(?:dict|Dict|Mapping|MutableMapping)\[str, Any\]")
#: Names that are JSON by definition wherever they are: a record's own conversion (`from_json`
#: takes the file's JSON, `to_json` / `derived_json` / `fields_json` give it, `extra` holds the
#: keys this version does not know) and the shape checks that run on a file's JSON before a
#: record is made of it.
JSON_NAMES = re.compile(r"(^|\.)(from_json|to_json|derived_json|fields_json|extra|"
                        r"check_\w+)($|\.)")
#: Other public names of the record paths that take or give a JSON object, and why.
JSON_EDGES = {
    # a benchmark's axis values as the manifest records them: JSON each axis reads (`BuildAxis.
    # from_record`), under the axis's name (the build entry's and the identity's keys)
    "ruler.builder.manifest:BuildEntry.axis_records": "the axes' JSON, read by each axis",
    "ruler.builder.identity:make_identity": "the axes' JSON, as the manifest records them",
    # report.json's fields a benchmark's report hooks add (its own, for people and tools)
    "ruler.eval.report.run:ReportHooks.json": "report.json's fields of a benchmark",
    "ruler.benchmarks.ruler.failure_modes.report_hooks:RulerFamilyReport.json":
        "report.json's fields of a benchmark",
    "ruler.benchmarks.ruler2.report:Ruler2Report.json": "report.json's fields of a benchmark",
    # run.json: the user's chat template variables (given to the template as they are) and the
    # last run's outcome, for people (no code reads it)
    "ruler.eval.records.run_record:RunRecord.chat_template_kwargs": "the user's template variables",
    "ruler.eval.records.run_record:RunRecord.last_run": "for people: no code reads it",
    "ruler.eval.config:EvalConfig.chat_template_kwargs": "the user's template variables",
    # a split file's rows (Parquet rows, hashed as canonical JSON), not the manifest's records
    "ruler.builder.manifest:canonical_row": "a split file's row",
    "ruler.builder.manifest:canonical_row_bytes": "a split file's row",
    "ruler.builder.manifest:content_sha256_rows": "a split file's rows",
    # the manifest's JSON for tools and tests that look at the format itself
    "ruler.builder.manifest:read_manifest": "the format's JSON, for tools and tests",
    # prediction records (the predictions path: any framework's rows, `eval.records.predictions`)
    "ruler.eval.records.run_record:PromptCheck.add": "a prediction record",
    "ruler.eval.records.skip_reasons:skip_kind": "a prediction record",
    "ruler.eval.records.serving:prompt_check": "prediction records",
    "ruler.eval.scoring.score:score_predictions": "prediction records",
    "ruler.eval.scoring.score:score_source": "prediction records",
    "ruler.eval.scoring.score:tied": "prediction records",
    "ruler.eval.scoring.score:answer_as_generated": "a prediction record",
    "ruler.eval.metrics.health:health_facts": "prediction records, a framework's settings",
    # a framework's generation settings as its reader finds them (lm-eval, Inspect, run.json)
    "ruler.eval.metrics.health:run_settings": "a prediction source's settings",
    # report.json (a file of its own, written as it is made)
    "ruler.benchmarks.ruler2.report:grid": "report.json's family_difficulty",
    "ruler.eval.records.scores_record:ScoresRecord.coverage": "scores.json's coverage (derived)",
}


def untyped_json(path: Path, module: str) -> list[str]:
    """The public functions, methods and class fields of a module whose annotation names an
    untyped JSON object: "module:Qual.name (where)"."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []

    def hit(qual: str, node: ast.expr | None, where: str) -> None:
        if node is not None and UNTYPED.search(ast.unparse(node)):
            found.append(f"{module}:{qual} ({where}: {ast.unparse(node)})")

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            name = getattr(node, "name", None)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if name.startswith("_") and not name.startswith("__"):
                    continue
                qual = prefix + name
                args = node.args
                for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg,
                          args.kwarg):
                    if a is not None:
                        hit(qual, a.annotation, f"parameter {a.arg}")
                hit(qual, node.returns, "returns")
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and prefix and not node.target.id.startswith("_"):
                hit(prefix + node.target.id, node.annotation, "field")

    visit(tree.body, "")
    return found


def test_no_record_path_takes_or_gives_an_untyped_json_object():
    found, allowed = [], set()
    for module in strict_modules():
        for hit in untyped_json(module_path(module), module):
            key = hit.split(" ")[0]
            if JSON_NAMES.search(key.split(":")[1]):
                continue
            if key in JSON_EDGES:
                allowed.add(key)
                continue
            found.append(hit)
    assert found == [], "untyped JSON objects in the record paths (use a record):\n" + \
        "\n".join(found)
    assert sorted(set(JSON_EDGES) - allowed) == [], "JSON_EDGES lists names that are gone"


def test_the_scan_finds_an_untyped_json_object(tmp_path):
    """The scan above cannot pass by seeing nothing: a parameter, a return and a field that
    are `dict[str, Any]` are each found, a private helper's is not."""
    source = tmp_path / "mod.py"
    source.write_text("from typing import Any, Mapping\n"
                      "def read(x: Mapping[str, Any]) -> int: ...\n"
                      "def give() -> dict[str, Any]: ...\n"
                      "def _own(x: dict[str, Any]) -> None: ...\n"
                      "class Rec:\n"
                      "    cells: list[dict[str, Any]]\n"
                      "    def to_json(self) -> dict[str, Any]: ...\n")
    hits = [h.split(" ")[0] for h in untyped_json(source, "m")]
    assert hits == ["m:read", "m:give", "m:Rec.cells", "m:Rec.to_json"]
    assert strict_modules() and all(module_path(m).is_file() for m in strict_modules())
