"""RULER's metrics reproduce upstream on hand-made cases, quirks included.

Upstream: NVIDIA/RULER scripts/eval/synthetic/constants.py (metrics) and
scripts/eval/evaluate.py:postprocess_pred (notes/upstream-ruler.md §2.2, §10).
"""

from __future__ import annotations

import pytest

from ruler.benchmarks.ruler.metrics import (
    row_match_all,
    row_match_part,
    string_match_all,
    string_match_part,
)
from ruler.catalog.family import FAMILY_CODE
from ruler.catalog.tasks import FAMILIES, TASKS
from ruler.eval.metrics.specs import METRICS, ROW_METRICS, postprocess_pred, task_score


def test_every_catalog_metric_has_a_function():
    # ruler's own families (an installed plug-in's brings its own metric: issue 40.27)
    own = [FAMILIES[name] for name in FAMILY_CODE.builtin_names()]
    assert own and {f.metric for f in own} <= set(METRICS) == set(ROW_METRICS)
    assert TASKS["qa_1"].metric == "string_match_part"
    assert TASKS["niah_single_1"].metric == "string_match_all"


def test_string_match_all_is_recall_of_all_references():
    # 2 of 4 values found -> 50; the second sample finds both -> 100; mean 75.
    preds = ["The values are 1234567 and 7654321.", "9999999, 1111111"]
    refs = [["1234567", "7654321", "2222222", "3333333"], ["9999999", "1111111"]]
    assert string_match_all(preds, refs) == round((0.5 + 1.0) / 2 * 100, 2) == 75.0


def test_string_match_part_is_any_reference():
    preds = ["Paris, France", "I do not know"]
    refs = [["London", "Paris"], ["Berlin"]]
    assert string_match_part(preds, refs) == 50.0


def test_case_insensitive_substring_without_word_boundaries():
    # Upstream quirk: 'art' is found inside 'party'; 'ART' matches too.
    assert string_match_all(["Let's PARTY"], [["art"]]) == 100.0
    assert string_match_part(["Let's party"], [["ART", "zzz"]]) == 100.0
    # A 7-digit answer inside a longer number counts as found.
    assert string_match_all(["12345678"], [["2345678"]]) == 100.0


def test_duplicate_references_count_each_time():
    # Upstream quirk: recall divides by len(ref), duplicates included.
    assert string_match_all(["apple"], [["apple", "apple", "pear"]]) == round(2 / 3 * 100, 2)
    assert row_match_all("apple", ["apple", "apple", "pear"]) == pytest.approx(2 / 3)


def test_rounding_to_two_decimals_as_upstream():
    assert string_match_all(["a", "b", "c"], [["a"], ["x"], ["x"]]) == 33.33
    assert string_match_part(["a", "a", "c"], [["a"], ["a"], ["x"]]) == 66.67


def test_postprocess_strips_and_maps_control_characters_to_newlines():
    assert postprocess_pred("  answer\t42\x00end \n") == "answer\n42\nend"
    assert postprocess_pred("\x07\x1f") == ""  # only control characters -> empty (a null)
    assert postprocess_pred("keep\x7fDEL") == "keep\x7fDEL"  # \x7f is outside [\x00-\x1f]


def test_postprocess_matters_for_matching():
    # A tab inside the answer becomes a newline, so a reference with a space no longer matches.
    assert task_score("string_match_all", ["magic\tnumber"], [["magic number"]]) == 0.0
    assert task_score("string_match_all", ["  magic number "], [["magic number"]]) == 100.0


def test_row_metrics_average_to_the_upstream_aggregate():
    preds = ["a b c", "b", "zzz", "A"]
    refs = [["a", "b"], ["a", "b"], ["q"], ["a", "a"]]
    for name, agg, row in (("string_match_all", string_match_all, row_match_all),
                           ("string_match_part", string_match_part, row_match_part)):
        rows = [row(p, r) for p, r in zip(preds, refs)]
        assert round(sum(rows) / len(rows) * 100, 2) == agg(preds, refs) == METRICS[name](preds,
                                                                                          refs)


def test_task_score_rejects_unknown_metric_and_empty_input():
    with pytest.raises(KeyError):
        task_score("exact_match", ["a"], [["a"]])
    with pytest.raises(ValueError):
        task_score("string_match_all", [], [])
