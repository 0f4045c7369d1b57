"""Imports only go down: the layers of docs/architecture.md (kernel < catalog and benchmark
API < build and eval machinery < benchmarks < commands), counting imports and registry
addresses; folders in no import cycle; nothing below the evaluator imports it.

(The manifest, run.json and scores.json are read through their typed records; that no module
indexes their JSON is mypy's check now, with the scan of the record paths for untyped JSON
objects: tests/package/test_types.py.)"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from helpers.paths import ROOT

# --- the layers ----------------------------------------------------------------------------------

ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: The package's folders that are not installed (pyproject: tests/ and perf/ are not).
NOT_PACKAGE = ("tests", "perf", "docs", "build")
#: A string that is a module's address: "ruler.x.y" or "ruler.x.y:ATTR".
ADDRESS = re.compile(r"ruler(?:\.\w+)+(?::[\w.]+)?")
#: The start of an f-string that builds one: f"ruler.x.{name}:SPEC", f"ruler.x.y:{attr}".
ADDRESS_START = re.compile(r"ruler(?:\.\w+)*(?:\.|(?<=\w):)")


def package_modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package (the repository root is `ruler`): name -> file."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in NOT_PACKAGE or rel.parts[0].startswith("."):
            continue
        parts = rel.with_suffix("").parts
        found[".".join(("ruler",) + (parts[:-1] if parts[-1] == "__init__" else parts))] = path
    return found


@dataclass(frozen=True)
class Link:
    source: str  # the module that names another
    target: str  # the module named
    line: int
    kind: str  # "import" (at the top, in a function, for types) or "address"


def links(module: str, source: str, modules: dict[str, Path]) -> list[Link]:
    """The package's modules `source` names: every import statement, and every string that
    is a module's address (registries, the built-ins' table, `FamilySpec.module`, a
    benchmark's hooks), f-strings that build one included. A name is the longest module it
    starts with; an entry point group (`"ruler.metrics"`) names no module."""

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    found = []
    for node in ast.walk(ast.parse(source)):
        named: list[tuple[str, str]] = []
        if isinstance(node, ast.Import):
            named = [(a.name, "import") for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            named = [(f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                      else node.module, "import") for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and ADDRESS.fullmatch(node.value):
            named = [(node.value.split(":")[0], "address")]
        elif isinstance(node, ast.JoinedStr) and node.values \
                and isinstance(node.values[0], ast.Constant) \
                and ADDRESS_START.fullmatch(str(node.values[0].value)):
            named = [(str(node.values[0].value).split(":")[0].rstrip("."), "address")]
        for name, kind in named:
            target = resolve(name) if name.split(".")[0] == "ruler" else None
            if target is None or (kind == "address" and target == "ruler"):
                continue
            found.append(Link(module, target, node.lineno, kind))
    return sorted(found, key=lambda link: (link.line, link.target))


def _names(cell: str) -> list[str]:
    return re.findall(r"`(ruler[\w.]*)`", cell)


def _table(heading_text: str, first: str, required: bool = True) -> list[list[str]]:
    """The rows of the table whose header starts with `| first |` in the Layers section (none:
    an error, unless the table is optional)."""
    text = ARCHITECTURE.read_text(encoding="utf-8").split("\n## Layers\n", 1)[1]
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith(f"| {first} |"):
            inside = True
        elif inside and line.startswith("|") and not line.startswith("|---"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
        elif inside and not line.startswith("|"):
            break
    assert rows or not required, \
        f"no table headed `| {first} |` in {ARCHITECTURE.name}'s {heading_text}"
    return rows


def layers() -> dict[str, int]:
    """Listed name -> its layer's number, from docs/architecture.md's layer table."""
    return {name: int(row[0].split(".")[0]) for row in _table("Layers", "layer")
            for name in _names(row[2])}


def allowed_upward() -> set[tuple[str, str]]:
    return {(_names(row[0])[0], _names(row[1])[0]) for row in _table("Layers", "from")}


def allowed_cycles() -> list[frozenset[str]]:
    """The folder cycles the docs list as kept, each with its reason (none today)."""
    return [frozenset(_names(row[0])) for row in _table("Layers", "folders", required=False)]


def listed(name: str, table) -> str:
    """The longest name of `table` that `name` is in (`x.__init__`: the module x only)."""
    best = ""
    for key in table:
        if key.endswith(".__init__"):
            if name == key[: -len(".__init__")]:
                return key
        elif (name == key or name.startswith(key + ".")) and len(key) > len(best):
            best = key
    assert best, f"{name} is in no layer of {ARCHITECTURE.name}"
    return best


def upward_links(modules: dict[str, Path], table: dict[str, int],
                 allowed: set[tuple[str, str]]) -> list[str]:
    found = []
    for module, path in modules.items():
        mine = listed(module, table)
        for link in links(module, path.read_text(encoding="utf-8"), modules):
            theirs = listed(link.target, table)
            if table[theirs] > table[mine] and (mine, theirs) not in allowed:
                found.append(f"{module} (layer {table[mine]}) -> {link.target} "
                             f"(layer {table[theirs]}): {link.kind}, line {link.line}")
    return found


def test_no_module_names_one_of_a_higher_layer():
    table, modules = layers(), package_modules()
    assert len(set(table.values())) == 5 and all(
        name.removesuffix(".__init__") in modules for name in table), "a layer names no module"
    assert upward_links(modules, table, allowed_upward()) == []
    for source, target in allowed_upward():  # each exception still needed
        assert upward_links(modules, table, allowed_upward() - {(source, target)}), \
            f"{source} -> {target} is listed but no longer needed"


def test_the_layer_scan_sees_every_way_of_naming_a_module(tmp_path):
    """A kernel module that imports the evaluator at the top, in a function, for types, or
    names a module by address (a registry entry, a family's module, an f-string address) is
    reported once per link, naming both modules; an entry point group is no address."""
    (tmp_path / "kernel").mkdir()
    (tmp_path / "eval").mkdir()
    for name in ("kernel/__init__.py", "eval/__init__.py", "eval/runner.py", "eval/score.py",
                 "eval/report.py", "eval/metrics.py", "eval/backends.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "kernel" / "low.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import ruler.eval.runner\n"
        "from ruler.eval import score\n"
        "if TYPE_CHECKING:\n"
        "    from ruler.eval.report import Report\n"
        "def later(name):\n"
        "    from ruler.eval.metrics import METRIC_SPECS\n"
        "    REG.register_lazy('x', 'ruler.eval.metrics:SPEC')\n"
        "    spec = FamilySpec(module='ruler.eval.runner:FAMILY')\n"
        "    return f'ruler.eval.backends.{name}:SPEC', 'ruler.metrics', 'ruler.eval is slow'\n")
    modules = package_modules(tmp_path)
    table = {"ruler.kernel": 0, "ruler.eval": 2, "ruler": 4}
    found = upward_links(modules, table, set())
    assert [f.split(": ", 1)[1] for f in found] == [
        "import, line 2", "import, line 3", "import, line 5", "import, line 7",
        "address, line 8", "address, line 9", "address, line 10"], found
    assert found[0] == "ruler.kernel.low (layer 0) -> ruler.eval.runner (layer 2): import, line 2"
    assert upward_links(modules, table, {("ruler.kernel", "ruler.eval")}) == []
    assert listed("ruler.benchmarks", {"ruler.benchmarks.__init__": 1, "ruler": 4}) == \
        "ruler.benchmarks.__init__"
    assert listed("ruler.benchmarks.x", {"ruler.benchmarks.__init__": 1, "ruler": 4}) == "ruler"


def folder_cycles(modules: dict[str, Path]) -> list[frozenset[str]]:
    """The groups of folders (packages) that import each other in a cycle (strongly connected
    components of the folder import graph)."""
    def folder(module: str) -> str:
        return module if modules[module].name == "__init__.py" else module.rpartition(".")[0]

    graph: dict[str, set[str]] = {folder(m): set() for m in modules}
    for module, path in modules.items():
        for link in links(module, path.read_text(encoding="utf-8"), modules):
            if link.kind == "import" and folder(link.target) != folder(module):
                graph[folder(module)].add(folder(link.target))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(frozenset(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_folders_import_each_other_in_no_cycle_but_the_listed():
    """A cycle not listed fails; a listed one that is gone or smaller must leave the list."""
    assert sorted(map(sorted, folder_cycles(package_modules()))) == \
        sorted(map(sorted, allowed_cycles()))

# --- imports only go down ------------------------------------------------------------------------

#: Areas that may never import the evaluator (it sits above them). The card in particular is
#: rendered by build, merge, release and verify. (`release.py` is not among them: a release
#: bundles the lm-eval task folder, which `ruler.eval.integrations.lm_eval_export` writes.)
BELOW_EVAL = ("builder", "catalog", "cards")


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
    assert _upward_imports(("builder", "catalog"), "ruler.cards") == []


def test_scoring_never_imports_the_integrations():
    """`ruler score` reads other frameworks' predictions through the reader registry
    (`eval.scoring.prediction_readers`); the integrations are its plug-ins, not its dependencies."""
    assert _upward_imports(("eval/scoring/score.py",), "ruler.eval.integrations") == []


def test_the_import_scan_finds_an_upward_import():
    """The scan sees imports inside functions: the evaluator's commands import ruler.eval."""
    assert any("commands/eval.py" in hit for hit in _upward_imports(("commands",), "ruler.eval"))
