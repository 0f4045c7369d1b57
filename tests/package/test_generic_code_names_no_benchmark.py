"""Generic machinery names no benchmark (issue 41): outside the benchmark folders (`benchmarks/`,
whose `__init__.py` is the built-ins' registration), no module of the package names a built-in
benchmark's id or title, one of its tasks, or its task-name prefixes, not even in a comment.
Whatever is specific to a benchmark lives in its folder, declared on its `Benchmark`, and
machinery asks the record."""

from __future__ import annotations

import re

from helpers.paths import ROOT
from ruler.catalog.benchmarks import BENCHMARK_SPECS

#: Names no generic module may hold, besides every built-in benchmark's task names: the ids
#: and titles that are not the package's own name, and the task-name prefixes.
NAMES = ("ruler2", "rulerv2", "oneruler", "or_", "mk_niah", "mv_niah")


def _generic_modules() -> list:
    return sorted(p for p in ROOT.rglob("*.py")
                  if p.relative_to(ROOT).parts[0] not in ("benchmarks", "tests", "perf", "docs")
                  and not any(part.startswith(".") for part in p.relative_to(ROOT).parts)
                  and "build" != p.relative_to(ROOT).parts[0])


def _pattern() -> re.Pattern:
    tasks = {t for name in BENCHMARK_SPECS.builtin_names()
             for t in BENCHMARK_SPECS[name].tasks}
    words = [rf"\b{re.escape(n)}" if n.endswith("_") else re.escape(n) for n in NAMES] + [
        rf"\b{re.escape(t)}\b" for t in sorted(tasks)]
    return re.compile("|".join(words), re.IGNORECASE)


def test_no_generic_module_names_a_benchmark():
    pattern = _pattern()
    hits = [f"{p.relative_to(ROOT)}:{n}: {m.group(0)!r}"
            for p in _generic_modules()
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            for m in pattern.finditer(line)]
    assert hits == [], f"{len(hits)} benchmark names in generic modules:\n" + "\n".join(hits)


def test_the_scan_sees_a_benchmark_name():
    assert _pattern().search("a ONERULER row") and _pattern().search("task `qa_1`")
    assert not _pattern().search("a ruler row of a benchmark's task")
