"""ONERULER's metrics score hand-made answers as upstream's evaluate.py does, and as the
corrected variant decides.

Every expected value is worked out by hand from the specification (notes/oneruler.md §6:
`compare_numbers`, `compare_none`, `is_correct_order` of mungg/OneRuler eval/evaluate.py);
the reasoning is in the comments. The metrics are given the language the row's build
records (the manifest's `language`, as a code: `ko`, or `en-ko` for context-instructions),
never a config's name.
"""

from __future__ import annotations

import pytest

from ruler.benchmarks.oneruler.metric import (
    NONE_WORDS,
    check_language,
    has_whole_word,
    instruction_language,
    oneruler,
    oneruler_corrected,
)
from ruler.eval.metrics.specs import (
    KEYED_METRICS,
    METRIC_SPECS,
    METRICS,
    rescoring_metric,
    row_score,
    task_score,
)

SINGLE, MULTIVALUE, NONE, CWE = "or_niah_single", "or_niah_multivalue", "or_niah_none", "or_cwe"


def config(lang: str) -> str:
    """What a keyed metric is given of a row's build: its recorded language's code."""
    return lang


def both(answer: str, refs: list[str], task: str, lang: str) -> tuple[float, float]:
    """(upstream's value, the corrected value) of one answer."""
    return (oneruler(answer, refs, task, config(lang)),
            oneruler_corrected(answer, refs, task, config(lang)))


# --- the language a build records --------------------------------------------------------------

def test_the_metric_reads_upstreams_language_argument_as_the_build_records_it():
    assert check_language("ko") == "ko"
    # cross-lingual: context en, instructions ko; upstream's --language en-ko
    assert check_language("en-ko") == "en-ko"
    assert instruction_language("en-ko") == "ko" and instruction_language("zh") == "zh"


@pytest.mark.parametrize("name", ["llama-3.1--oneruler-ko", "q--oneruler-ko--oneruler-en",
                                  "llama-3.1", "xx", "en-xx", "english", "en-ko-fr", ""])
def test_a_config_name_or_an_unknown_code_is_not_a_language(name):
    with pytest.raises(ValueError, match="not a ONERULER language"):
        check_language(name)
    with pytest.raises(ValueError, match="not a ONERULER language"):
        oneruler("none", ["none"], NONE, name)


def test_every_language_the_builder_records_gives_the_metric_its_language():
    from ruler.benchmarks.oneruler.languages import LANGUAGES, OnerulerLanguage
    from ruler.builder.manifest import BuildEntry
    from ruler.catalog.manifest_records import TokenizerRecord
    from ruler.eval.metrics.specs import build_key

    assert sorted(NONE_WORDS) == list(LANGUAGES)
    pairs = [OnerulerLanguage.mono(code) for code in LANGUAGES] + [
        OnerulerLanguage("en", "ko"), OnerulerLanguage("zh", "en")]
    for language in pairs:
        build = BuildEntry(tokenizer=TokenizerRecord(name="q--oneruler-ko", kind="hf"),
                           benchmark="oneruler", extra={"language": language.record()})
        assert build_key("oneruler", build) == language.code
        assert instruction_language(build_key("oneruler", build)) == language.instructions
    # a build that records no language gives none: the metric cannot score its rows
    with pytest.raises(ValueError, match="records no ONERULER language"):
        build_key("oneruler",
                  BuildEntry(tokenizer=TokenizerRecord(name="x--oneruler-ko", kind="hf")))


def test_the_none_words_are_upstreams_26():
    assert len(NONE_WORDS) == 26
    # two languages have two, as upstream's none_dict
    assert NONE_WORDS["ja"] == ("なし", "数字はありません")
    assert NONE_WORDS["uk"] == ("немає", "Нема")
    assert NONE_WORDS["de"] == ("Keine vorhanden",) and NONE_WORDS["fa"] == ("هیچ کدام",)


# --- numbers: niah_single / multikey / multivalue / multiquery -----------------------------------

def test_the_gold_number_in_the_asked_format_is_right():
    assert both("<Answer> 2867825 </Answer>", ["2867825"], SINGLE, "en") == (1.0, 1.0)


def test_numbers_with_separators():
    # upstream: \d+ runs 2, 867, 825; "2" is a single digit and dropped; [867, 825] are two
    # numbers against one gold value: wrong. Corrected: one number 2867825: right.
    assert both("2,867,825", ["2867825"], SINGLE, "en") == (0.0, 1.0)
    # de writes a dot, fr a (no-break) space: NFKC turns U+00A0 and U+202F into a space
    assert both("2.867.825", ["2867825"], SINGLE, "de") == (0.0, 1.0)
    assert both("2\u202f867\u202f825", ["2867825"], SINGLE, "fr") == (0.0, 1.0)
    # two separators mixed are not one number: upstream and corrected both see 2 | 867 | 825
    assert both("2,867.825", ["2867825"], SINGLE, "en") == (0.0, 0.0)
    # a list "a, b" is two numbers in both
    assert both("2867825, 1234567", ["1234567", "2867825"], MULTIVALUE, "en") == (1.0, 1.0)


def test_count_and_set_no_order_duplicates_dropped_single_digits_ignored():
    gold = ["1111111", "2222222", "3333333", "4444444"]
    # order does not matter (sets); a value repeated is one number; "1." .. "4." numbering
    # are single digits, dropped
    answer = "1. 4444444\n2. 2222222\n3. 1111111\n4. 3333333 (and 2222222 again)"
    assert both(answer, gold, MULTIVALUE, "en") == (1.0, 1.0)
    # three of four: count 3 != 4, no partial credit
    assert both("1111111 2222222 3333333", gold, MULTIVALUE, "en") == (0.0, 0.0)
    # numbering from 10: "10" has two digits and is a fifth number
    assert both("10. 1111111 2222222 3333333 4444444", gold, MULTIVALUE, "en") == (0.0, 0.0)


def test_full_width_and_other_script_digits():
    # NFKC maps full-width digits to ASCII; \d and int() read Devanagari digits as they are
    assert both("２８６７８２５", ["2867825"], SINGLE, "ja") == (1.0, 1.0)
    assert both("२८६७८२५", ["2867825"], SINGLE, "hi") == (1.0, 1.0)


def test_empty_and_blank_answers_score_zero_in_both():
    # upstream: `if not model_answer: return False`; a blank one has no digits: False
    for answer in ("", "   ", "\n"):
        assert both(answer, ["2867825"], SINGLE, "en") == (0.0, 0.0)
        assert both(answer, ["none"], NONE, "en") == (0.0, 0.0)
        assert both(answer, ["apple"], CWE, "en") == (0.0, 0.0)


def test_a_none_word_fails_a_numbers_answer_case_sensitively_upstream():
    # upstream checks "none" (raw) and "none" (cleaned) in the NFKC answer, not lower-cased:
    # "None" passes and the number is read: right. Corrected folds case: "None" is the
    # none-word and fails the answer as "none" does.
    assert both("None of the others. 2867825", ["2867825"], SINGLE, "en") == (1.0, 0.0)
    assert both("none, or 2867825", ["2867825"], SINGLE, "en") == (0.0, 0.0)
    # "none" inside "nonetheless" fails it upstream; a whole word only in the corrected one
    assert both("Nonetheless, it is 2867825.", ["2867825"], SINGLE, "en") == (1.0, 1.0)
    assert both("It is, nonetheless, 2867825.", ["2867825"], SINGLE, "en") == (0.0, 1.0)


def test_a_key_noun_holding_the_none_word_ru():
    # ru's none-word нет is inside the key noun планета (planet): a model that repeats the
    # needle's sentence (the key, then the value) fails upstream; the corrected metric reads
    # the number.
    answer = "Особое волшебное число для ключа «планета» - это 2867825"
    assert both(answer, ["2867825"], SINGLE, "ru") == (0.0, 1.0)
    assert both("нет", ["2867825"], SINGLE, "ru") == (0.0, 0.0)


@pytest.mark.parametrize("lang,answer,expected", [
    # ko 없음: raw in the answer, so upstream fails it; it is a whole word too
    ("ko", "<답변> 없음 2867825 </답변>", (0.0, 0.0)),
    ("ko", "<답변> 2867825 </답변>", (1.0, 1.0)),
    # zh 无 inside 无法 (cannot): a substring upstream, not a word of its own corrected
    ("zh", "无法确定，可能是2867825", (0.0, 1.0)),
    ("zh", "<答案> 2867825 </答案>", (1.0, 1.0)),
    # hi कोई नहीं (two words): raw match upstream; corrected: the phrase
    ("hi", "कोई नहीं 2867825", (0.0, 0.0)),
    ("hi", "<उत्तर> 2867825 </उत्तर>", (1.0, 1.0)),
    # vi "Không có": upstream looks for "Không có" and "khôngcó"; lower-case with its space
    # is neither, so the number is read. Corrected folds the case.
    ("vi", "không có 2867825", (1.0, 0.0)),
    # uk Нема: cleaned "нема" is inside немає; both none-words fail it either way
    ("uk", "немає 2867825", (0.0, 0.0)),
])
def test_the_none_word_in_numbers_answers_per_language(lang, answer, expected):
    assert both(answer, ["2867825"], SINGLE, lang) == expected


# --- niah_none ---------------------------------------------------------------------------------

@pytest.mark.parametrize("lang,answer,expected", [
    # en: the answer is lower-cased and spaces removed before the substring test
    ("en", "none", (1.0, 1.0)),
    ("en", "<Answer> None </Answer>", (1.0, 1.0)),
    ("en", "NONE.", (1.0, 1.0)),
    ("en", "nonetheless the text says 2867825", (1.0, 0.0)),
    # spaces removed: "n o n e" -> "none" upstream; not the word corrected
    ("en", "n o n e", (1.0, 0.0)),
    ("en", "2867825", (0.0, 0.0)),
    # numbers do not matter (upstream's check for them is commented out)
    ("en", "none (2867825 is for another key)", (1.0, 1.0)),
    # ko
    ("ko", "<답변> 없음 </답변>", (1.0, 1.0)),
    ("ko", "없음", (1.0, 1.0)),
    ("ko", "none", (0.0, 0.0)),
    # Korean attaches its particles: 없음입니다 holds 없음 but is one word
    ("ko", "없음입니다", (1.0, 0.0)),
    # zh: 无 alone, in the answer tags, after a colon; inside 无法 (cannot) only upstream
    ("zh", "无", (1.0, 1.0)),
    ("zh", "<答案>无</答案>", (1.0, 1.0)),
    ("zh", "答案：无。", (1.0, 1.0)),
    ("zh", "无法找到该数字", (1.0, 0.0)),
    # ja: the second none-word
    ("ja", "数字はありません", (1.0, 1.0)),
    ("ja", "該当なし", (1.0, 0.0)),
    # hi: two words; without the space too (upstream removes spaces, corrected allows none)
    ("hi", "<उत्तर> कोई नहीं </उत्तर>", (1.0, 1.0)),
    ("hi", "कोईनहीं", (1.0, 1.0)),
    ("hi", "कोई", (0.0, 0.0)),
    # upstream removes a digit standing alone (\b\d\b): Python's \w has Devanagari letters
    # but not its vowel signs, so a digit between ी and ं stands alone; removed, it joins नहीं
    ("hi", "कोई नही1ं", (1.0, 0.0)),
    # fa: the none-word with a space, the prompt spells it with U+200C: both count
    ("fa", "هیچ\u200cکدام", (1.0, 1.0)),
    ("fa", "هیچ کدام", (1.0, 1.0)),
    # de: lower-cased in both
    ("de", "keine vorhanden", (1.0, 1.0)),
    ("de", "Keine", (0.0, 0.0)),
])
def test_niah_none_per_language(lang, answer, expected):
    refs = [NONE_WORDS[lang][0]]
    assert both(answer, refs, NONE, lang) == expected


def test_cross_lingual_none_words_are_the_instructions():
    # context en, instructions ko: the none-word is 없음, not none
    assert both("none", ["없음"], NONE, "en-ko") == (0.0, 0.0)
    assert both("없음", ["없음"], NONE, "en-ko") == (1.0, 1.0)
    # and in a numbers task, ko's none-word fails the answer, en's does not
    assert both("none 2867825", ["2867825"], SINGLE, "en-ko") == (1.0, 1.0)
    assert both("없음 2867825", ["2867825"], SINGLE, "en-ko") == (0.0, 0.0)


# --- cwe ---------------------------------------------------------------------------------------

def test_cwe_every_gold_word_no_order():
    gold = ["apple", "art", "river"]
    assert both("River, APPLE, art", gold, CWE, "en") == (1.0, 1.0)
    # "art" is a substring of "start" upstream; not a word of its own corrected
    assert both("apple start river", gold, CWE, "en") == (1.0, 0.0)
    # one missing: no partial credit
    assert both("apple art", gold, CWE, "en") == (0.0, 0.0)
    assert both("사과, 강", ["사과", "강"], CWE, "ko") == (1.0, 1.0)
    assert both("사과들 강", ["사과", "강"], CWE, "ko") == (1.0, 0.0)
    # the task's name decides the comparison, as upstream's `"cwe" in task`
    assert oneruler("apple art river", gold, "or_cwe_easy", config("en")) == 1.0


def test_whole_words_are_bounded_by_anything_but_letters_marks_and_digits():
    # Devanagari vowel signs are marks: कोई inside कोईस is not a word
    assert not has_whole_word("कोईस", "कोई")
    assert has_whole_word("<उत्तर>कोई</उत्तर>", "कोई")
    assert not has_whole_word("art2", "art") and has_whole_word("(art)", "art")


# --- as a registered metric ----------------------------------------------------------------------

def test_registered_keyed_on_the_raw_generation():
    assert {"oneruler", "oneruler_corrected"} <= KEYED_METRICS
    for name in ("oneruler", "oneruler_corrected"):
        spec = METRIC_SPECS[name]
        assert spec.benchmark == "oneruler" and spec.keyed
        # upstream scores the response as it is: leading spaces reach the cleaning rules
        assert spec.prepare("  none \n") == "  none \n"
    # row_score passes the row's task and build key to a keyed metric
    assert row_score("oneruler", "nonetheless", ["none"], NONE, config("en")) == 1.0
    assert row_score("oneruler_corrected", "nonetheless", ["none"], NONE, config("en")) == 0.0


def test_task_score_is_the_unrounded_mean_in_percent():
    # upstream's avg_acc = sum(accs) / len(accs): 1 right of 3 -> 33.33...%, not rounded
    preds = ["2867825", "1234567", "none"]
    refs = [["2867825"], ["7654321"], ["7654321"]]
    assert task_score("oneruler", preds, refs, SINGLE, config("en")) == 100 / 3
    assert METRICS["oneruler"](preds, refs, SINGLE, config("en")) == 100 / 3


def test_the_corrected_metric_rescores_oneruler_rows_only():
    assert rescoring_metric("oneruler", None) == "oneruler"
    assert rescoring_metric("oneruler", "oneruler_corrected") == "oneruler_corrected"
    assert rescoring_metric("oneruler", "oneruler") == "oneruler"
    with pytest.raises(ValueError, match="cannot score rows whose metric is 'string_match_all'"):
        rescoring_metric("string_match_all", "oneruler_corrected")
    with pytest.raises(ValueError, match="these rows: oneruler, oneruler_corrected"):
        rescoring_metric("oneruler", "string_match_all")
    with pytest.raises(KeyError, match="unknown metric"):
        rescoring_metric("oneruler", "nope")


def test_depth_items_of_a_metric_without_partial_credit_score_as_their_row():
    from ruler.eval.metrics.depth import row_items

    # a multi-value row whose family gives one item per needle (RULER's niah, at 20 % and
    # 60 %); under ONERULER's metric each item is scored as the whole row is: the answer
    # with both values is right at both depths (each needle's value alone would be a count
    # mismatch: 2 numbers for 1), the answer with one value is wrong at both
    row = {"task": "niah_multivalue", "metric": "oneruler", "outputs": ["1111111", "2222222"],
           "gold_depths": [0.2, 0.6],
           "input": "Text. One of the special magic numbers for key is: 1111111. More. One of "
                    "the special magic numbers for key is: 2222222. End.\nWhat are all the "
                    "special magic numbers for key mentioned in the provided text?"}
    both_values, one_value = "1111111 2222222", "1111111"
    assert row_items(row, both_values, key=config("en")) == [(0.2, 1.0), (0.6, 1.0)]
    assert row_items(row, one_value, key=config("en")) == [(0.2, 0.0), (0.6, 0.0)]
    # RULER's string_match_all counts each needle where it sits
    assert row_items(row, one_value, metric="string_match_all") == [(0.2, 1.0), (0.6, 0.0)]


def test_the_keyed_metric_names_take_part_in_set_operations():
    """The Inspect task intersects its rows' metric names with them (`names & KEYED_METRICS`):
    a set operation on the live view gives a plain set, not a TypeError."""
    from ruler.eval.metrics.specs import KEYED_METRICS

    assert {"oneruler", "string_match_all"} & KEYED_METRICS == {"oneruler"}
    assert KEYED_METRICS - {"oneruler"} == {"oneruler_corrected"}
