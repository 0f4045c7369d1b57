"""The card's ONERULER section says how books are cut into haystack sentences, how many
sentences each language has beside the splitter's alone, and the fill the rule brought."""

from __future__ import annotations

from ruler.benchmarks.oneruler.card_sentences import changed_languages, sentences_section
from ruler.benchmarks.oneruler.languages import LANGUAGES


def test_the_section_states_the_rule_counts_and_measured_fill():
    text = sentences_section(["en", "es", "sw"])
    assert "cut at every sentence end inside it" in text and "never inside a word" in text
    assert "every haystack sentence of the 26 books then\nholds at most 1,000 tokens" in text
    assert "Rows changed by the rule (wherever a row reaches a cut segment) in this\n" \
           "folder's languages: `es`." in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    # 4096: the top-up of a row that whole sentences leave under 0.99 of L
    assert "a row that whole sentences leave\nunder 0.99 of L takes the words" in text
    assert rows[0].startswith("| `en` | sentencex | 4,200 | 6,273 | 321 / 321 | 0.990 → 0.994 |")
    assert rows[1].startswith("| `es` | sentencex | 3,300 | 799 → 9,435 | 63,553 → 736 / "
                              "63,238 → 734 | 0.524 → 0.993 | 0.268 → 0.994 |")
    assert "| 0.067 → 0.996 |" in rows[1]  # 32000: the rows that stopped at 0.07 of L
    assert rows[2].startswith("| `sw` | regex | 2,400 | 1,254 | 862 / 876 |")


def test_the_changed_languages_are_those_whose_sentences_changed():
    assert changed_languages(LANGUAGES) == ["cs", "da", "de", "es", "fr", "hi", "it", "ja",
                                            "ko", "nl", "no", "pt", "ru", "ta", "vi"]
