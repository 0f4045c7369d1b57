"""The same predictions give the same scores and reports (issue 41): stored predictions of RULER
(two configs), RULERv2 and ONERULER (two languages, and the corrected metric) are scored
against the session's builds of those configs and reported; the cells of scores.json,
report.md and report.json equal what ruler made of them at 5775704, before the benchmark became
the unit (`tests/eval/golden_scores/<case>/`, written by `helpers.golden_scores`).

`RULER_GOLDEN_SCORES_WRITE=1` rewrites the stored outputs (accepting a deliberate change)."""

from __future__ import annotations

import json
import os

import pytest

from helpers.golden_scores import CASES, FOLDER, score_and_report, stored_predictions

pytestmark = [pytest.mark.build]

WRITE = os.environ.get("RULER_GOLDEN_SCORES_WRITE") == "1"


@pytest.mark.parametrize("case", sorted(CASES))
def test_stored_predictions_score_and_report_as_before(case, request, tmp_path):
    fixture, config, _ = CASES[case]
    data = request.getfixturevalue(fixture)
    folder = FOLDER / case
    if WRITE:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "predictions.jsonl").write_text(
            "".join(json.dumps(p) + "\n" for p in stored_predictions(data, config)))
    made = score_and_report(data, case, tmp_path / "scores")
    for name, text in made.items():
        if WRITE:
            (folder / name).write_text(text)
        assert text == (folder / name).read_text(), f"{case}/{name} differs"
