"""The same predictions give the same scores and reports (issue 41): stored predictions of RULER
(two configs), RULERv2 and ONERULER (two languages, and the corrected metric) are scored
against the session's builds of those configs and reported; the cells of scores.json,
report.md and report.json equal what ruler made of them at 5775704, before the benchmark became
the unit (`tests/eval/golden_scores/<case>/`, written by `helpers.golden_scores`).

Fields a later ruler adds to scores.json and report.json (a cell's `length_rule`) are not in
the stored files: every stored field must be as it was, and nothing stored may go missing.

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
        stored = (folder / name).read_text()
        if name.endswith(".json"):
            assert _kept(json.loads(stored), json.loads(text)) == json.loads(stored), \
                f"{case}/{name} differs"
        else:
            assert text == stored, f"{case}/{name} differs"


def _kept(stored, made):
    """`made` cut to the fields `stored` has (lists element by element), to compare them."""
    if isinstance(stored, dict) and isinstance(made, dict):
        return {k: _kept(v, made[k]) if k in made else "<missing>" for k, v in stored.items()}
    if isinstance(stored, list) and isinstance(made, list) and len(stored) == len(made):
        return [_kept(a, b) for a, b in zip(stored, made)]
    return made
