"""perf.oneruler_reference puts a real ONERULER build beside upstream's own output (the
reference rows in ../shared): every cell template-identical, both haystacks the book's first
sentences, the statistics side by side; a reference row whose fixed text differs is named."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from helpers.builds import build
from helpers.paths import REFERENCE
from perf.oneruler_reference import main
from ruler.benchmarks.oneruler.languages import OnerulerLanguage
from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS

pytestmark = [pytest.mark.build, pytest.mark.subprocess]  # a build with spawned workers

UPSTREAM = REFERENCE / "oneruler" / "llama-3.1"


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    """llama-3.1, zh (sentences and needles joined without spaces, the question's parts too)
    x 7 tasks at 8192, 1 row each."""
    out = tmp_path_factory.mktemp("oneruler_ref") / "ruler"
    build(out, "llama-3.1", ONERULER_TASKS, (8192,), samples=1, benchmark="oneruler",
          axes={"language": OnerulerLanguage.mono("zh")})
    return out


def test_every_cell_is_template_identical_and_the_haystack_the_books_start(ours, tmp_path,
                                                                           capsys):
    out = tmp_path / "cmp.json"
    assert main(["--ours", str(ours), "--reference", str(UPSTREAM), "--languages", "zh",
                 "--samples", "1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "7 of 7 cells template-identical" in printed
    assert "upstream rows over L as the model reads them: 7 of 7; ours: 0" in printed
    figures = json.loads(out.read_text())
    for cell in figures["cells"]:
        ours_row, theirs = cell["ours"][0], cell["upstream"][0]
        assert ours_row["answers"] == theirs["answers"] and ours_row["template"]
        assert ours_row["fill_raw"] <= 1 < theirs["fill_raw"] + 0.01
        if cell["task"].startswith("or_niah"):
            assert ours_row["needles"] == theirs["needles"]
            # the book's first n sentences on both sides; upstream's n is larger
            assert 0 < ours_row["haystack"] < theirs["haystack"]


def test_a_fixed_string_that_differs_is_found(ours, tmp_path, capsys):
    reference = tmp_path / "reference"
    cell = reference / "zh" / "8192" / "niah_single"
    shutil.copytree(UPSTREAM / "zh" / "8192" / "niah_single", cell)
    path = cell / "validation.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    rows[0]["input"] = rows[0]["input"].replace("请列举所有适用项。", "请列举所有适用项：", 1)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    assert main(["--ours", str(ours), "--reference", str(reference), "--samples", "1"]) == 1
    printed = capsys.readouterr().out
    assert "| zh | niah_single | NO (1 \\| 1 rows)" in printed
    assert "0 of 1 cells template-identical" in printed and "6 cell(s) on one side only" in printed
