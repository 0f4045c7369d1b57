"""Imports only go down: nothing below the evaluator imports it.

(The manifest, run.json and scores.json are read through their typed records; that no module
indexes their JSON is mypy's check now, with the scan of the record paths for untyped JSON
objects: tests/package/test_types.py.)"""

from __future__ import annotations

from pathlib import Path

from helpers.paths import ROOT

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
    (`eval.scoring.prediction_readers`); the integrations are its plug-ins, not its dependencies."""
    assert _upward_imports(("eval/scoring/score.py",), "ruler.eval.integrations") == []


def test_the_import_scan_finds_an_upward_import():
    """The scan sees imports inside functions: the evaluator's commands import ruler.eval."""
    assert any("commands/eval.py" in hit for hit in _upward_imports(("commands",), "ruler.eval"))
