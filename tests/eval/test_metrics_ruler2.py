"""RULERv2's metrics score hand-made generations as NeMo-Skills does.

Every expected value is worked out by hand from upstream's code as notes/ruler2.md §6
describes it (`eval_ruler2` in nemo_skills/evaluation/evaluator/ruler.py; `eval_mcq` in
evaluator/mcq.py with math_grader.extract_answer): the reasoning is in the comments.
"""

from __future__ import annotations

import math
import random

import editdistance
import pytest

from ruler.benchmarks.ruler2.metric import (
    reference_score,
    ruler2_2steps,
    ruler2_all,
    ruler2_part,
    word_edit_distance,
    word_error_rate,
)
from ruler.benchmarks.ruler2.multichoice import answer_letter, last_boxed, multichoice
from ruler.eval.metrics.specs import METRICS, percent_of_rows, row_score, task_score

# --- ruler2: one reference ------------------------------------------------------------------


def test_a_reference_inside_the_prediction_scores_one_case_insensitively():
    assert reference_score("The special magic number is 1234567890.", "1234567890") == 1.0
    assert reference_score("PARIS is the capital", "paris") == 1.0
    # No word boundaries, as in v1: a reference inside a longer number is found.
    assert reference_score("12345678901", "1234567890") == 1.0


def test_one_minus_word_error_rate_when_not_a_substring():
    # hyp [the, quick, brown, fox] vs ref [the, quick, red, fox, jumps]: substitute brown->red
    # and insert jumps = 2 edits over 5 reference words: WER 0.4, s = max(0, 0.6) = 0.6.
    assert word_error_rate("the quick brown fox", "the quick red fox jumps") == 0.4
    assert reference_score("the quick brown fox", "the quick red fox jumps") == \
        pytest.approx(0.6)
    # Words are str.split() words: "magic number" is not a substring of "magic\tnumber", but
    # the words are the same: WER 0, s = 1.
    assert reference_score("magic\tnumber", "magic number") == 1.0


def test_negative_one_minus_wer_is_cut_to_zero_by_the_substring_term():
    # hyp [p, q, r, s, t] vs ref [a, b, c]: 3 substitutions + 2 deletions = 5 edits: WER 5/3,
    # 1 - WER = -2/3; the max with the substring term (0) gives 0. (5 < 2 * 3 words: the edit
    # distance itself is computed here, not the shortcut for long predictions.)
    assert word_error_rate("p q r s t", "a b c") == 5 / 3
    assert reference_score("p q r s t", "a b c") == 0.0
    # A long prediction: 7 words against 3 (>= twice): WER 7/3, s = 0.
    assert word_error_rate("a b c d e f g", "x y z") == 7 / 3
    assert reference_score("a b c d e f g", "x y z") == 0.0


def test_a_reference_without_words():
    # The empty reference is a substring of every prediction: s = 1.
    assert reference_score("anything", "") == 1.0
    # Only whitespace: no words, WER = inf, 1 - inf = -inf; substring "   " absent -> 0 ...
    assert word_error_rate("anything", "   ") == math.inf
    assert reference_score("anything", "   ") == 0.0
    # ... present -> 1.
    assert reference_score("a   b", "   ") == 1.0


# --- ruler2: the three match types ----------------------------------------------------------


def test_all_is_the_mean_over_references():
    # "111": not in "alpha beta gamma"; 3 words against 1 -> WER >= 1 -> 0.
    # "alpha beta gamma delta": one insertion over 4 words -> 0.75. Mean (0 + 0.75) / 2.
    assert ruler2_all("alpha beta gamma", ["111", "alpha beta gamma delta"]) == 0.375
    # Four values, three found: 0.75 (the fourth, 1 word, against 7 prediction words: 0).
    assert ruler2_all("values: 111, 222 and 333 here", ["111", "222", "333", "444"]) == 0.75


def test_2steps_scores_only_the_text_after_the_last_blank_line():
    copied = "Question 1: what is X?\n\nQuestion 1: what is Y?"
    # Last part "Question 1: what is Y?" holds "what is y?": 1.
    assert ruler2_2steps(copied, ["what is Y?"]) == 1.0
    # "what is x?" is only in the first part. Last part's words [question, 1:, what, is, y?]
    # against [what, is, x?]: delete 2, substitute 1 = 3 edits / 3 words = WER 1 -> 0.
    assert ruler2_2steps(copied, ["what is X?"]) == 0.0
    assert ruler2_all(copied, ["what is X?"]) == 1.0  # `all` sees the whole generation
    # Without a blank line the whole generation is the last part.
    assert ruler2_2steps("Question 1: what is X?", ["what is X?"]) == 1.0
    # A trailing blank line leaves an empty last part (upstream does not strip): "x" is not
    # in "", 0 words against 1 -> 1 insertion / 1 = WER 1 -> 0.
    assert ruler2_2steps("the answer is X\n\n", ["X"]) == 0.0


def test_part_removes_copied_documents_then_takes_the_best_reference():
    # The block "Document 3:\nTitle\nsome text 1975\n\n" is removed; "The answer is 1976" has
    # no "1975" and 4 words against 1 -> 0. Without the removal it would be 1.
    text = "Document 3:\nTitle\nsome text 1975\n\nThe answer is 1976"
    assert ruler2_part(text, ["1975"]) == 0.0
    assert ruler2_all(text, ["1975"]) == 1.0
    # Max over references: "Lyon" absent (0), "Paris" present (1).
    assert ruler2_part("It is Paris", ["Lyon", "Paris"]) == 1.0
    # "paris, france" is not in "paris france"; [paris, france] vs [paris,, france]: one
    # substitution / 2 words -> 0.5; "xyz" -> 0 (2 words >= 2 x 1). Max 0.5.
    assert ruler2_part("Paris France", ["xyz", "Paris, France"]) == 0.5


def test_part_removes_a_block_only_when_a_blank_line_follows():
    # At the very end without a blank line the copied document stays, and its text counts.
    assert ruler2_part("I cannot tell.\nDocument 3:\nParis is in France", ["Paris"]) == 1.0
    # With the blank line it is removed: "I cannot tell.\n" has 3 words against 1 -> 0.
    assert ruler2_part("I cannot tell.\nDocument 3:\nParis is in France\n\n", ["Paris"]) == 0.0
    # Several blocks go, each only up to its first blank line (lazy): "bar" is kept.
    text = "Document 1:\nA Paris\n\nDocument 22:\nB\nC Paris\n\nbar Paris\n\n"
    assert ruler2_part(text, ["Paris"]) == 1.0
    assert ruler2_part(text.replace("bar Paris", "bar"), ["Paris"]) == 0.0


def test_rows_need_references():
    with pytest.raises(ValueError):
        ruler2_all("x", [])
    with pytest.raises(ValueError):
        ruler2_part("x", [])


def test_word_edit_distance_is_editdistance_and_the_score_its_formula():
    """Against upstream's own library on random word lists, and reference_score (with its
    shortcut for long predictions) against the formula written out with that library."""
    rng = random.Random(31)
    vocab = ["a", "b", "c", "Paris", "1234567", "x y"]
    for _ in range(400):
        h = [rng.choice(vocab) for _ in range(rng.randint(0, 12))]
        r = [rng.choice(vocab) for _ in range(rng.randint(0, 6))]
        assert word_edit_distance(h, r) == editdistance.eval(h, r)
        pred, ref = " ".join(h), " ".join(r)
        words = ref.lower().split()
        wer = editdistance.eval(pred.lower().split(), words) / len(words) if words \
            else float("inf")
        expected = max(1.0 if ref.lower() in pred.lower() else 0.0, 1 - wer)
        assert reference_score(pred, ref) == expected


# --- multichoice ----------------------------------------------------------------------------


@pytest.mark.parametrize("generation, letter", [
    # The box's content is one character: that letter.
    ("So the answer is \\boxed{C}.", "C"),
    # Several boxes: the LAST one counts.
    ("First \\boxed{A}, on reflection \\boxed{B}.", "B"),
    # Nested braces are matched: content "\\text{C}", longer than one character -> the last
    # standalone capital in it, C; "\\textbf{(D)}" -> D.
    ("\\boxed{\\text{C}}", "C"),
    ("\\boxed{\\textbf{(D)}}", "D"),
    # Two standalone capitals in the box: the last, D.
    ("\\boxed{C and D}", "D"),
    # One lower-case character is upper-cased (mcq.py@511d678).
    ("\\boxed{c}", "C"),
    # A full-width letter is mapped to " C", then stripped.
    ("\\boxed{Ｃ}", "C"),
    # No box: the last "Answer: X", any case and markdown around it.
    ("Reasoning...\nAnswer: C", "C"),
    ("Answer: A\nNo wait.\n**Answer:** c", "C"),
    # The box wins over an Answer: line.
    ("Answer: A, i.e. \\boxed{B}", "B"),
    # An empty box is no answer: the regexes decide.
    ("\\boxed{} Answer: B", "B"),
    # "The final answer is ..." on the last line (relaxed: after the box): "(B)" -> B.
    ("Thinking.\nThe final answer is (B)", "B"),
])
def test_answer_letter(generation, letter):
    assert answer_letter(generation) == letter
    assert multichoice(generation, [letter]) == 1.0
    assert multichoice(generation, ["A" if letter != "A" else "D"]) == 0.0


@pytest.mark.parametrize("generation", [
    # `\fbox` alone: upstream's search_boxed returns None as soon as the text has no "\boxed"
    # (its \fbox branch is unreachable), and nothing else names a letter -> no answer.
    "\\fbox{C}",
    # An unclosed box, and a box without braces.
    "\\boxed{C",
    "\\boxed C",
    # A word, no standalone capital: nothing from the box; no Answer: line.
    "\\boxed{Paris}",
    # "Answer: B" followed by a letter is a word ("Because"), not an answer.
    "Answer: Because it is.",
    # "The final answer is" must be on the last line ($ without MULTILINE; . stops at \n).
    "The final answer is B.\nThanks",
    "",
])
def test_no_answer_letter(generation):
    assert answer_letter(generation) is None
    assert multichoice(generation, ["C"]) == 0.0


def test_fbox_with_an_answer_line_uses_the_answer_line():
    assert answer_letter("\\fbox{C} Answer: D") == "D"


def test_last_boxed_content():
    assert last_boxed("a \\boxed{x{y}z} b \\boxed{{C}}") == "{C}"
    assert last_boxed("no box") is None


def test_multichoice_needs_one_reference():
    with pytest.raises(ValueError):
        multichoice("\\boxed{A}", ["A", "B"])


# --- registered metrics ---------------------------------------------------------------------


def test_v2_metrics_score_the_raw_generation():
    # v1 strips and maps control characters; NeMo-Skills' ruler2 does not. A trailing blank
    # line empties 2steps' last part (0); stripped first it would score 1.
    assert row_score("ruler2_2steps", "copy\n\nX 1\n\n", ["X 1"]) == 0.0
    assert row_score("ruler2_2steps", "copy\n\nX 1", ["X 1"]) == 1.0
    # Carriage returns are kept: after "\r\n" the next line starts with "\r", never empty,
    # so the copied document is not removed and its "1975" counts.
    assert row_score("ruler2_part", "Document 1:\r\n1975\r\n\r\nno", ["1975"]) == 1.0


def test_v2_task_scores_are_unrounded_percentages_of_the_rows():
    # NeMo-Skills' accuracy: 100 * mean(is_correct), not rounded: 1 of 3 -> 33.33...
    assert percent_of_rows([1.0, 0.0, 0.0]) == 100 / 3
    assert task_score("multichoice", ["\\boxed{A}", "B", "Answer: C"], [["A"], ["A"], ["C"]]) \
        == 100.0 * 2 / 3
    assert METRICS["ruler2_all"](["alpha beta gamma", "111"],
                                 [["111", "alpha beta gamma delta"], ["111"]]) == \
        100.0 * (0.375 + 1.0) / 2
