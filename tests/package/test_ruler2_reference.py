"""perf.ruler2_reference puts a real v2 build beside NeMo-Skills' own output (the
reference rows in ../shared): 12/12 templates identical, statistics printed side by side; a
reference row whose fixed text differs is named."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from helpers.paths import REFERENCE
from perf.ruler2_reference import main

pytestmark = [pytest.mark.build]

UPSTREAM = REFERENCE / "nemo-skills-ruler2" / "llama-3.1"


def test_every_template_is_upstreams_and_the_statistics_are_side_by_side(built_llama_v2,
                                                                         tmp_path, capsys):
    out = tmp_path / "cmp.json"
    assert main(["--ours", str(built_llama_v2), "--reference", str(UPSTREAM), "--lengths",
                 "4096", "--samples", "2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "template identical: 12/12 tasks (12/12 cells)" in printed
    assert printed.count("| identical |") == 12 and "| mv_niah_medium | 4096 | 2 \\| 2 |" in printed
    figures = json.loads(out.read_text())
    assert figures["tasks_identical"] == 12 and len(figures["cells"]) == 12
    for cell in figures["cells"]:
        assert 0.5 < cell["fill raw"]["upstream"] <= 1 and 0.5 < cell["fill raw"]["ours"] <= 1
        assert cell["fill raw"]["ours"] < cell["fill_read_ours"] <= 1  # the template's tokens
        assert cell["id clash"]["ours"] == 0 and cell["gold twice"]["ours"] == 0


def test_a_fixed_string_that_differs_is_found(built_llama_v2, tmp_path, capsys):
    reference = tmp_path / "reference"
    shutil.copytree(UPSTREAM / "4096" / "qa_hard", reference / "4096" / "qa_hard")
    path = reference / "4096" / "qa_hard" / "test.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    rows[1]["question"] = rows[1]["question"].replace("based on the documents.\n\nQuestion:",
                                                      "based on the documents:\n\nQuestion:")
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    assert main(["--ours", str(built_llama_v2), "--reference", str(reference), "--lengths",
                 "4096", "--samples", "2"]) == 1
    printed = capsys.readouterr().out
    assert "template identical: 0/1 tasks" in printed and "qa_hard @ 4096: ours" in printed
    assert "documents:" in printed.split("qa_hard @ 4096: ours")[1]
