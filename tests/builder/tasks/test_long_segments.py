"""`long_segments.bounded`: an over-long segment cut where its sentences end, then at its
clauses, commas or spaces, never inside a word, and nothing else touched."""

from __future__ import annotations

import random

import pytest

from ruler.benchmarks.oneruler.long_segments import bounded


def test_a_segment_within_the_limit_is_returned_as_it_is():
    text = "«Hola. ¿Qué tal?» dijo. Y se fue."
    assert bounded(text, len(text)) == (text,)


def test_an_unclosed_quote_is_cut_at_its_sentence_ends():
    """Don Quixote's continuation guillemet opens a quote sentencex never sees closed."""
    text = ("»En lo de citar en las márgenes los libros, no hay más. Y luego, en el margen, "
            "citar a Horacio. ¿Quién lo dijo? -Adelante -dijo el cura. «Bien», dijo él.")
    assert bounded(text, 60) == (
        "»En lo de citar en las márgenes los libros, no hay más.",
        "Y luego, en el margen, citar a Horacio.", "¿Quién lo dijo?",
        "-Adelante -dijo el cura.", "«Bien», dijo él.")


def test_closing_marks_stay_with_their_sentence():
    text = "»Ende.« Er ging. ‘Nee,’ zei ze. ‘Dag.’ Toen niets! „Ja“ sagte er."
    assert bounded(text, 15) == ("»Ende.«", "Er ging.", "‘Nee,’ zei ze.", "‘Dag.’",
                                 "Toen niets!", "„Ja“ sagte er.")


def test_no_cut_before_a_lower_case_word():
    """An abbreviation or an ellipsis inside a sentence: `etc. and`, `… und`."""
    text = "He bought apples, pears etc. and went home. Then … und so weiter. Done."
    assert bounded(text, 45) == ("He bought apples, pears etc. and went home.",
                                 "Then … und so weiter.", "Done.")


def test_full_width_marks_end_sentences_without_spaces():
    text = ("「私はそれからこの手紙を書き出しました。"
            "平生筆を持ちつけない私には、重い苦痛でした。」 "
            "私は一時間経たないうちにまた書きたくなりました！本当？")
    pieces = bounded(text, 25)
    assert pieces == ("「私はそれからこの手紙を書き出しました。",
                      "平生筆を持ちつけない私には、重い苦痛でした。」",
                      "私は一時間経たないうちにまた書きたくなりました！", "本当？")
    assert "".join(pieces) == text.replace("」 ", "」")  # joined by "", as zh and ja are


@pytest.mark.parametrize("stop", ["।", "۔", "؟"])
def test_other_scripts_full_stops(stop):
    text = f"पहला वाक्य{stop} दूसरा वाक्य{stop} तीसरा"
    assert bounded(text, 12) == (f"पहला वाक्य{stop}", f"दूसरा वाक्य{stop}", "तीसरा")


def test_a_run_on_sentence_is_halved_at_its_clauses_then_commas_then_spaces():
    clauses = "one two three; four five six: seven eight nine"
    assert bounded(clauses, 20) == ("one two three;", "four five six:", "seven eight nine")
    commas = "alpha beta gamma, delta epsilon zeta, eta theta iota, kappa lambda mu"
    assert bounded(commas, 40) == ("alpha beta gamma, delta epsilon zeta,",
                                   "eta theta iota, kappa lambda mu")
    words = " ".join(["word"] * 30)
    pieces = bounded(words, 40)
    assert all(len(p) <= 40 for p in pieces) and " ".join(pieces) == words
    assert set(" ".join(pieces).split()) == {"word"}  # no word was cut


def test_a_segment_without_any_boundary_stays_whole():
    text = "字" * 50
    assert bounded(text, 10) == (text,)


def test_random_texts_give_their_words_back_in_order_within_the_limit():
    """Fuzzed: the pieces joined with spaces are the text; each is within the limit unless it
    is one word; no piece is empty or has outer whitespace."""
    rng = random.Random(7)
    marks = [".", "!", "?", ";", ":", ",", "", "", "", "", "»", "«", "…"]
    for _ in range(300):
        words = ["".join(rng.choice("abcdeXYZàé") for _ in range(rng.randint(1, 12)))
                 + rng.choice(marks) for _ in range(rng.randint(1, 80))]
        text = " ".join(words)
        limit = rng.randint(5, 120)
        pieces = bounded(text, limit)
        assert " ".join(pieces) == text
        assert all(p and p == p.strip() for p in pieces)
        assert all(len(p) <= limit or " " not in p for p in pieces)
