"""The old paths of moved modules a plug-in imports stay importable, and only those: docs/
extending.md's "Moved modules" table is the one list; each old path is a module of one
`from NEW import *` line (and its docstring) whose public names are the new module's own
objects; no other module of the package is such a re-export; the docs show the new paths."""

from __future__ import annotations

import ast
import importlib
import re

from helpers.paths import ROOT

EXTENDING = ROOT / "docs" / "extending.md"
ROW = re.compile(r"^\| `(ruler[\w.]*)` \| `(ruler[\w.]*)` \|$")


def moved() -> dict[str, str]:
    """Old path -> new path, from the docs' "Moved modules" table."""
    text = EXTENDING.read_text(encoding="utf-8").split("\n## Moved modules\n", 1)[1]
    return {m[1]: m[2] for m in map(ROW.match, text.splitlines()) if m}


def star_import(path) -> str | None:
    """The module a file re-exports with `from X import *`, if it has such an import."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return node.module
    return None


def source_of(module: str):
    path = ROOT.joinpath(*module.split(".")[1:])
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def test_each_old_path_gives_the_new_modules_objects():
    table = moved()
    assert "ruler.builder.errors" in table and "ruler.cli" in table
    for old, new in table.items():
        old_module, new_module = importlib.import_module(old), importlib.import_module(new)
        public = [n for n in vars(new_module) if not n.startswith("_")]
        assert public, new
        assert all(getattr(old_module, n) is getattr(new_module, n) for n in public), old


def test_an_old_path_is_one_import_line_and_only_the_listed_ones_are():
    table = moved()
    for old, new in table.items():
        tree = ast.parse(source_of(old).read_text(encoding="utf-8"))
        docstring, *rest = tree.body
        assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
        assert new in docstring.value.value, f"{old}'s docstring does not say where it moved"
        (line,) = rest
        assert isinstance(line, ast.ImportFrom) and line.module == new, old
        assert [a.name for a in line.names] == ["*"], old
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("tests", "perf", "docs", "build") or rel.parts[0].startswith("."):
            continue
        target = star_import(path)
        if target is not None:
            parts = rel.with_suffix("").parts
            found[".".join(("ruler",) + (parts[:-1] if parts[-1] == "__init__" else parts))] \
                = target
    assert found == table


def test_the_docs_show_the_new_paths():
    """Outside the table, docs/extending.md names no old path (an old path followed by a
    module of the new package, as `ruler.eval.metrics.specs`, is the new path)."""
    text = EXTENDING.read_text(encoding="utf-8").split("\n## Moved modules\n", 1)[0]
    for old, new in moved().items():
        rest = re.escape(new[len(old):]) if new.startswith(old + ".") else "$^"
        assert not re.search(rf"`{re.escape(old)}(?![\w]|{rest})", text), old
