"""The manifest is read through its type: no module outside `builder/manifest*.py` indexes
the manifest's dict (`ruler.builder.manifest.Manifest` holds its records and queries)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from helpers.paths import ROOT

SCOPE = ("builder", "cards", "eval", "release.py", "cli.py")
RAW_ACCESS = re.compile(r'manifest\[|\["builds"\]|\["files"\]')
OWNERS = "builder/manifest*.py"
#: Modules whose lines match the pattern while indexing another document than the manifest,
#: and what each such line must index instead.
OTHER_DOCUMENTS = {
    # the tokenizer registry's entries (registry.json): their pinned files and hashes
    "builder/tokenizer_registry.py": 'entry["files"]',
    # run.json and scores.json: the split files a run covers (`recorded_files`, their one reader)
    "eval/results_folder.py": 'record["dataset"]["files"]',
    # the Inspect task's metadata (`inspect_task` writes it into the Inspect log)
    "eval/integrations/inspect_logs.py": 'ruler["files"]',
}


def _sources():
    for name in SCOPE:
        path = ROOT / name
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def test_only_the_manifest_module_indexes_the_manifest_dict():
    found = []
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        if fnmatch.fnmatch(rel, OWNERS):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not RAW_ACCESS.search(line):
                continue
            other = OTHER_DOCUMENTS.get(rel)
            if other and other in line and "manifest[" not in line and '["builds"]' not in line:
                continue
            found.append(f"{rel}:{n}: {line.strip()}")
    assert found == [], "raw manifest access (use ruler.builder.manifest.Manifest):\n" + \
        "\n".join(found)


def test_the_scan_sees_the_modules_it_guards():
    """The test above cannot pass by reading nothing: it reads the readers of the manifest,
    and the manifest module itself would fail it."""
    scanned = {p.relative_to(ROOT).as_posix() for p in _sources()}
    assert {"release.py", "cards/render.py", "eval/data.py", "builder/pipeline/publish.py",
            "builder/verify/folder.py"} <= scanned
    schema = (ROOT / "builder" / "manifest_schema.py").read_text(encoding="utf-8")
    assert RAW_ACCESS.search(schema)


# --- imports only go down ------------------------------------------------------------------------

#: Areas that may never import the evaluator (it sits above them). The card in particular is
#: rendered by build, merge, release and verify. (`release.py` is not among them: a release
#: bundles the lm-eval task folder, which `ruler.eval.integrations.lm_eval_export` writes.)
BELOW_EVAL = ("builder", "cards")


def _imported_modules(path: Path) -> set[str]:
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):  # lazy imports inside functions count too
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def _upward_imports(areas, above: str) -> list[str]:
    found = []
    for name in areas:
        path = ROOT / name
        for module in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            for imported in sorted(_imported_modules(module)):
                if imported == above or imported.startswith(above + "."):
                    found.append(f"{module.relative_to(ROOT).as_posix()}: {imported}")
    return found


def test_nothing_below_the_evaluator_imports_it():
    assert _upward_imports(BELOW_EVAL, "ruler.eval") == []


def test_the_builder_never_imports_the_card():
    """The card is a publish step the builder calls through `builder.publish_steps` (the card
    sits above the builder: it reads the catalog, the manifest and the variants)."""
    assert _upward_imports(("builder",), "ruler.cards") == []


def test_scoring_never_imports_the_integrations():
    """`ruler score` reads other frameworks' predictions through the reader registry
    (`eval.prediction_readers`); the integrations are its plug-ins, not its dependencies."""
    assert _upward_imports(("eval/score.py",), "ruler.eval.integrations") == []


def test_the_import_scan_finds_an_upward_import():
    """The scan sees imports inside functions: the evaluator itself imports ruler.eval."""
    assert any("eval/cli.py" in hit for hit in _upward_imports(("eval",), "ruler.eval"))
