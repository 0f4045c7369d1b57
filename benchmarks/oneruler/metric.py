"""ONERULER's metric: upstream's scoring of one answer, exactly, and a corrected variant.

Upstream: mungg/OneRuler `OneRuler/eval/evaluate.py` (notes/oneruler.md §6; read at commit
7df5ce7f48014b03226dac52e885fb9cfc52c139). A row scores 0 or 1, never in between; which
comparison runs is chosen by the task's name as upstream does it (`"niah_none" in task`, then
`"cwe" in task`, else the numbers: the row's `task`, a catalog name `or_niah_none`, `or_cwe`,
...), and the none-words are those of the row's instruction language: the `language` the
manifest's build entry of the row's config records (`ko`, or `en-ko` for context en and
instructions ko: exactly upstream's `--language`), given to the functions below by their
caller. The config's name is never read for it: a tokenizer folder may be called anything,
`q--oneruler-ko` included.

`oneruler` (upstream's, the default, so scores compare with the paper):
- numbers (niah_single / multikey / multivalue / multiquery): an empty answer is wrong. The
  answer is NFKC-normalised; if a none-word occurs in it, as it is or lower-cased without
  spaces and U+200C (the answer itself is not lower-cased: "None" passes, "none" fails, even
  inside "nonetheless"), the answer is wrong. Then every run of digits (`\\d+`, any script)
  of two or more digits, de-duplicated, as integers: right iff there are as many as gold
  values and they are the same set. "2,867,825" is three runs: wrong.
- none (niah_none): the answer NFKC-normalised, stripped, lower-cased, without ASCII spaces
  and U+200C, isolated single digits removed; right iff a none-word (cleaned alike) is a
  substring of it. Numbers do not matter; "nonetheless" holds "none", 无法 holds 无.
- words (cwe, cwe_easy): right iff every gold word (stripped, lower-cased) is a substring of
  the stripped, lower-cased answer; order is not checked, "art" is found in "start".

`oneruler_corrected` fixes the flaws the notes list (§7.16), one rule each:
- case: answer, none-words and gold words are compared case-folded, so "None" is a none-word
  like "none" (in the numbers tasks it fails the answer as "none" does);
- whole words: a none-word or gold word counts only where it is not part of a longer word
  (the characters around it are not letters, marks or digits), its inner spaces matching
  any run of spaces or U+200C, or none (fa writes هیچ‌کدام with U+200C): "nonetheless" is
  not "none", ru "планета" (planet, a key noun) does not hold "нет", 无法 does not hold 无
  (in zh and ja, written without spaces, the none-word must stand apart: `无`, `答案：无。`);
- numbers with separators: a run like 2,867,825 / 2.867.825 / 2 867 825 / 2'867'825 (one
  separator throughout, groups of three) is one number;
- blank answers: nothing to change in the metric. An empty or blank answer scores 0 under
  both (upstream scores "" as wrong too); upstream drops only answers that are None, and in
  ruler a row without an answer is a failed request under either metric: kept out of the
  score, counted and named, the run reported PARTIAL with its averages withheld (never
  silently dropped, never silently scored).
Not changed: the none answer may carry numbers (upstream's check for them is commented out),
order of the cwe words, extra words or numbers beyond the count rules above.

A run of more than 4,300 digits (`INT_DIGITS`, Python's default limit on what `int()` converts
from text): upstream's `int()` raises on it and its `except Exception: return False` scores
the row wrong; both metrics score it wrong too, whatever limit this interpreter is set to (no
needle's value is that long: only leading zeros could make it one, and upstream, run as it
is, never reads them). The references are converted the same way (a reference that is no
number makes the row wrong, as upstream's second `try` does), so no answer raises here.

Not reproduced, with the reason: upstream's evaluation loop also scores, for models whose
name holds "deepseek", only the first `<Answer>...</Answer>` (English tags, one line), and
skips o3 answers that ended at the token limit. Those depend on the model's name, not on the
row; ruler's reasoning mode removes a model's thinking instead (`ruler eval --mode
reasoning`), and answers cut at the limit are scored and flagged in the report's health
section.

Plain functions over the standard library: `ruler export lm-eval` copies this module.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Sequence

#: upstream's `none_dict`: the answers that mean "no such number", per instruction language
#: (the first of each is the `none` entry of that language's prompt file).
NONE_WORDS = {
    "en": ("none",), "ko": ("없음",), "pl": ("brak",), "zh": ("无",), "vi": ("Không có",),
    "ja": ("なし", "数字はありません"), "ta": ("ஏதுமில்லை",), "hu": ("nincs",),
    "fr": ("aucun",), "no": ("ingen",), "uk": ("немає", "Нема"), "ru": ("нет",),
    "de": ("Keine vorhanden",), "es": ("ninguno",), "sv": ("inga",), "fi": ("ei mikään",),
    "cs": ("žádné", "žádná"), "sr": ("nema",), "pt": ("nenhum",), "it": ("nessuno",),
    "fa": ("هیچ کدام",), "sw": ("hakuna",), "nl": ("geen",), "st": ("ha ho letho",),
    "hi": ("कोई नहीं",), "da": ("ingen",),
}

def check_language(language: str) -> str:
    """`language` if it is upstream's `--language` of a ONERULER config ("ko", or "en-ko":
    context en, instructions ko), else a ValueError naming the known codes."""
    codes = language.split("-") if isinstance(language, str) else []
    if not 1 <= len(codes) <= 2 or any(code not in NONE_WORDS for code in codes):
        raise ValueError(f"{language!r} is not a ONERULER language (a code, or context-"
                         f"instructions such as en-ko; known codes: "
                         f"{', '.join(sorted(NONE_WORDS))})")
    return language


#: Python's default limit on the digits `int()` converts from text
#: (`sys.int_info.default_max_str_digits`): past it upstream's conversion raises.
INT_DIGITS = 4300


def as_integers(texts: Sequence[str]) -> list[int] | None:
    """Upstream's `[int(x) for x in texts]` inside its `try: ... except Exception: return
    False`: the integers, or None (the row is wrong) where one is not a number or is longer
    than INT_DIGITS digits (this interpreter's own limit is not consulted)."""
    if any(len(text) > INT_DIGITS for text in texts):
        return None
    try:
        return [int(text) for text in texts]
    except ValueError:
        return None


def instruction_language(language: str) -> str:
    """The language whose none-words count: the instructions' ("ko" of "en-ko")."""
    return language.split("-")[1] if "-" in language else language


# --- upstream ---------------------------------------------------------------------------------

def upstream_clean(text: str) -> str:
    """Upstream's `clean_text`: stripped, lower-cased, without U+200C and ASCII spaces."""
    return text.strip().lower().replace("\u200c", "").replace(" ", "")


def upstream_numbers(answer: str, references: Sequence[str], language: str) -> bool:
    """Upstream's `compare_numbers`."""
    if not answer:
        return False
    text = unicodedata.normalize("NFKC", answer)
    for word in NONE_WORDS[instruction_language(language)]:
        if word in text or upstream_clean(word) in text:
            return False
    runs = [run for run in re.findall(r"\d+", text) if len(run) > 1]
    if not runs:
        return False
    found = as_integers(list(dict.fromkeys(runs)))
    gold = as_integers(references)
    if found is None or gold is None:
        return False
    return len(found) == len(gold) and set(found) == set(gold)


def upstream_none(answer: str, language: str) -> bool:
    """Upstream's `compare_none` (its gold list is not read: the none-words decide)."""
    text = upstream_clean(unicodedata.normalize("NFKC", answer))
    text = re.sub(r"\b\d\b", "", text)
    return any(upstream_clean(word) in text for word in NONE_WORDS[instruction_language(language)])


def upstream_words(answer: str, references: Sequence[str]) -> bool:
    """Upstream's `is_correct_order` (no order is checked)."""
    text = answer.strip().lower()
    return all(word.strip().lower() in text for word in references)


def oneruler(prediction: str, references: Sequence[str], task: str, language: str) -> float:
    """Upstream's value of one row (1.0 or 0.0), chosen by task as upstream does; `language`:
    its build's recorded language ("ko", "en-ko")."""
    check_language(language)
    if "niah_none" in task:
        right = upstream_none(prediction, language)
    elif "cwe" in task:
        right = upstream_words(prediction, references)
    else:
        right = upstream_numbers(prediction, references, language)
    return 1.0 if right else 0.0


# --- corrected --------------------------------------------------------------------------------

# One number written with a thousands separator (the same one throughout), else a digit run.
NUMBER = re.compile(r"(?<!\d)(?:\d{1,3}(?P<sep>[,.' ’٬])\d{3}(?:(?P=sep)\d{3})*(?!\d)|\d+)")


def folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def is_word_character(ch: str) -> bool:
    """Letters, marks (Devanagari and Tamil vowel signs) and digits make up words."""
    return unicodedata.category(ch)[0] in "LMN"


def phrase_pattern(phrase: str) -> re.Pattern:
    """`phrase` (folded) with any run of spaces or U+200C, or none, between its words."""
    return re.compile(r"[\s\u200c]*".join(re.escape(w) for w in folded(phrase).split()))


def has_whole_word(text: str, phrase: str) -> bool:
    """Whether folded `text` holds `phrase` where no letter, mark or digit touches it."""
    pattern = phrase_pattern(phrase)
    if not pattern.pattern:
        return True  # an empty phrase is in every text, as a substring is
    start = 0
    while (found := pattern.search(text, start)) is not None:
        before = text[found.start() - 1] if found.start() else " "
        after = text[found.end()] if found.end() < len(text) else " "
        if not is_word_character(before) and not is_word_character(after):
            return True
        start = found.start() + 1
    return False


def has_none_word(text: str, language: str) -> bool:
    return any(has_whole_word(text, w) for w in NONE_WORDS[instruction_language(language)])


def corrected_numbers(answer: str, references: Sequence[str], language: str) -> bool:
    text = folded(answer)
    if has_none_word(text, language):
        return False
    runs = [re.sub(r"\D", "", m.group(0)) for m in NUMBER.finditer(text)]
    distinct = list(dict.fromkeys(run for run in runs if len(run) > 1))
    if not distinct:
        return False
    found = as_integers(distinct)
    gold = as_integers(references)
    if found is None or gold is None:
        return False
    return len(found) == len(gold) and set(found) == set(gold)


def corrected_none(answer: str, language: str) -> bool:
    return has_none_word(folded(answer), language)


def corrected_words(answer: str, references: Sequence[str]) -> bool:
    text = folded(answer)
    return all(has_whole_word(text, word) for word in references)


def oneruler_corrected(prediction: str, references: Sequence[str], task: str,
                       language: str) -> float:
    """The corrected value of one row (1.0 or 0.0): see the module docstring; `language`: its
    build's recorded language ("ko", "en-ko")."""
    check_language(language)
    if "niah_none" in task:
        right = corrected_none(prediction, language)
    elif "cwe" in task:
        right = corrected_words(prediction, references)
    else:
        right = corrected_numbers(prediction, references, language)
    return 1.0 if right else 0.0

