"""ONERULER's data read as upstream's generator reads it (the `oneruler` source: a copy of
GitHub mungg/OneRuler @ a3fe6af `OneRuler/data/`).

- `prompt/<lang>/niah.txt`: a JSON object of template parts; `prompt/<lang>/cwe.txt`: the
  whole CWE template.
- `vocab/100_noun_list_translated.tsv`: the needle keys, one column per language, read as
  pandas' `read_csv(sep="\\t")` reads it (its default missing-value strings are missing),
  missing entries dropped, each entry stripped.
- `books/<lang>/*.txt`: the haystack, concatenated and every whitespace run made one space.
- `vocab/dictionaries/<Name>/<Name>.csv` (`words,pos`): the CWE words of the 25 languages
  other than English, read as upstream's pandas code does (missing words dropped, words
  holding a digit dropped, nouns, adjectives and verbs kept).

pandas is not needed: the tables are read with `csv` and pandas' rules restated
(tests/builder/tasks/test_oneruler_data.py checks the result equals pandas' on every file).
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Mapping

from ruler.benchmarks.oneruler.languages import (
    CROSS_LINGUAL_DROPPED_ROWS,
    DICTIONARY,
)
from ruler.kernel.errors import RulerError

#: The strings pandas' `read_csv` reads as missing by default (`pandas._libs.parsers.
#: STR_NA_VALUES`), plus the empty field.
PANDAS_NA = frozenset({
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
})

#: The parts of a language's niah.txt (the same 14 keys in all 26 files).
NIAH_PARTS = ("task", "needle_words", "needle_numbers", "question_single_numbers",
              "question_single_words", "question_multi_numbers", "question_multi_words",
              "please_list", "if_no_numbers", "if_no_words", "answer_prefix", "answer_words",
              "answer_numbers", "none")

_DIGIT = re.compile(r"\d")
_WHITESPACE = re.compile(r"\s+")


def read_table(path: Path, delimiter: str) -> tuple[tuple[str, ...], list[tuple[str | None, ...]]]:
    """(header, rows) of a CSV/TSV file as pandas reads it by default: blank lines skipped,
    missing-value strings as None, short rows padded with None."""
    with open(path, encoding="utf-8", newline="") as f:
        lines = [r for r in csv.reader(f, delimiter=delimiter) if r]
    if not lines:
        raise RulerError(f"{path} is empty")
    header, width = tuple(lines[0]), len(lines[0])
    rows = [tuple(None if v in PANDAS_NA else v for v in (*r, *[""] * (width - len(r))))
            for r in lines[1:]]
    return header, rows


@dataclass(frozen=True)
class NounTable:
    """The 100 translated nouns: `columns` (en, definition, then 25 codes), one tuple a row."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str | None, ...], ...]

    def _col(self, lang: str) -> int:
        try:
            return self.columns.index(lang)
        except ValueError:
            raise RulerError(f"the noun list has no column {lang!r}") from None

    def _rows(self, cross_lingual: bool) -> list[tuple[str | None, ...]]:
        if not cross_lingual:
            return list(self.rows)
        return [r for i, r in enumerate(self.rows) if i not in CROSS_LINGUAL_DROPPED_ROWS]

    def keys(self, lang: str, cross_lingual: bool = False) -> tuple[str, ...]:
        """Upstream's `words`: the column's entries, missing ones dropped, each stripped (the
        rows earth, field, house, month and moon dropped first when cross-lingual)."""
        c = self._col(lang)
        return tuple(v.strip() for r in self._rows(cross_lingual) if (v := r[c]) is not None)

    def translations(self, context: str, instructions: str) -> dict[str, str]:
        """Cross-lingual query translation: each context-language key -> the instruction-
        language entry of the first (cross-lingual) row whose stripped context entry it is."""
        c, i = self._col(context), self._col(instructions)
        out: dict[str, str] = {}
        for r in self._rows(cross_lingual=True):
            key, value = r[c], r[i]
            if key is not None and key.strip() not in out and value is not None:
                out[key.strip()] = value.strip()
        return out


class OnerulerData:
    """The data folder; each file read (and checked) on first use."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def _text(self, rel: str) -> str:
        try:
            return (self.root / rel).read_text(encoding="utf-8")
        except OSError as e:
            raise RulerError(f"ONERULER data: cannot read {self.root / rel}: "
                             f"{e.strerror or e}") from None

    def niah_parts(self, lang: str) -> Mapping[str, str]:
        parts = json.loads(self._text(f"prompt/{lang}/niah.txt"))
        missing = [k for k in NIAH_PARTS if not isinstance(parts.get(k), str)]
        if missing:
            raise RulerError(f"ONERULER data: prompt/{lang}/niah.txt lacks {', '.join(missing)}")
        return parts

    def cwe_template(self, lang: str) -> str:
        """The whole cwe.txt, as upstream reads it (`open(...).read()`)."""
        return self._text(f"prompt/{lang}/cwe.txt")

    @cached_property
    def nouns(self) -> NounTable:
        header, rows = read_table(self.root / "vocab/100_noun_list_translated.tsv", "\t")
        return NounTable(header, tuple(rows))

    def book(self, lang: str) -> str:
        """Every `*.txt` of `books/<lang>/` (one per language), concatenated in name order,
        every whitespace run made one space (`re.sub(r'\\s+', ' ', book)`)."""
        folder = self.root / "books" / lang
        names = sorted(p.name for p in folder.glob("*.txt")) if folder.is_dir() else []
        if not names:
            raise RulerError(f"ONERULER data: no book in {folder}")
        return _WHITESPACE.sub(" ", "".join(self._text(f"books/{lang}/{n}") for n in names))

    def dictionary_words(self, lang: str) -> list[str]:
        """A language's CWE words, as `common_words_extraction.py` collects them: nouns, then
        adjectives, then verbs (file order), without missing words or words with a digit."""
        name = DICTIONARY[lang]
        header, rows = read_table(self.root / f"vocab/dictionaries/{name}/{name}.csv", ",")
        try:
            w, p = header.index("words"), header.index("pos")
        except ValueError:
            raise RulerError(f"ONERULER data: dictionary {name}.csv lacks the columns words, "
                             f"pos (has {', '.join(header)})") from None
        kept = [(word, r[p]) for r in rows if (word := r[w]) is not None
                and not _DIGIT.search(word)]
        return [word for pos in ("noun", "adjective", "verb") for word, part in kept
                if part == pos]
