"""docs/complexity.md against the code (issue 42 item 5): it names every suite RULER offers
with each configuration (task, legend label, source), and its argument table lists every
argument each family's declaration takes, so that a new suite, configuration or argument
cannot be left out of the page."""

from __future__ import annotations

import re
from pathlib import Path

from ruler.benchmarks.ruler import task_args
from ruler.benchmarks.ruler.suites import SUITES
from ruler.kernel.markup import md_text

PAGE = Path(__file__).resolve().parents[2] / "docs" / "complexity.md"
FAMILIES = {"niah": task_args.NIAH_ARGS, "variable_tracking": task_args.VT_ARGS,
            "common_words_extraction": task_args.CWE_ARGS,
            "freq_words_extraction": task_args.FWE_ARGS, "qa": task_args.QA_ARGS}


def _section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]


def test_every_suite_and_configuration_is_on_the_page():
    text = PAGE.read_text()
    for suite in SUITES.values():
        assert f"### `{suite.name}`" in text, suite.name
        if suite.panels:  # a suite of panels: each panel has its own section
            assert all(f"### `{p.name}`" in text for p in suite.panels)
            continue
        part = _section(text, f"### `{suite.name}`")
        for t in suite.tasks:
            assert re.search(rf"^\| {re.escape(md_text(t.label))} \| `{re.escape(t.name)}` \|"
                             rf".*\| {re.escape(t.source)} \|$", part, re.M), (suite.name, t)


def test_every_argument_of_every_family_is_in_the_table():
    rows = {(m.group(1), m.group(2)) for m in re.finditer(r"^\| `(\w+)` \| `(\w+)` \|",
                                                          PAGE.read_text(), re.M)}
    want = {(family, a.name) for family, args in FAMILIES.items() for a in args}
    assert want <= rows, sorted(want - rows)
    assert {f for f, _ in rows} == set(FAMILIES)
