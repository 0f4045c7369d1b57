"""What is known about the licence of ONERULER's data and the copyright of its books, per
language: one record, read by the dataset card and by `ruler release` (which refuses to publish
a book whose status is unknown without an acknowledgement naming its language).

Sources of these statements: upstream's repository (mungg/OneRuler @ a3fe6af: its README, its
LICENSE, the data files themselves) and the paper's OpenReview record, as read for
$RULER_SHARED/sources/oneruler/README.md (the pinned stand-in of the fetched source).
Nothing else is claimed: where neither states a book's source or copyright status, its status
is unknown here. A language's entry may record a
verified status (`BookFacts.status`) with where it was verified; none does yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Iterable, Mapping

from ruler.benchmarks.oneruler.files import COMMIT, FILES
from ruler.benchmarks.oneruler.languages import LANGUAGES

CODE_LICENCE = ("MIT (the repository's LICENSE, \"Copyright (c) 2025 Yekyung Kim\"; the files "
                "derived from NVIDIA/RULER keep their Apache-2.0 headers)")
DATA_LICENCE = ("none stated: the repository has no licence for its data (no licence file "
                "under OneRuler/data/, no licence section in its README); the OpenReview record "
                "of the paper (COLM 2025, forum 3vxxB3Ar9r) shows CC BY-NC-SA 4.0 in its "
                "licence field, which is the paper's, not stated for the data")
BOOK_SOURCE = ("not stated: the repository and the book files (no headers, no Project "
               "Gutenberg or other licence text) give no source and no copyright status; some "
               "books are 20th-century works")


@dataclass(frozen=True)
class BookFacts:
    """A language's haystack book: its file in upstream's data, and its copyright status where
    it has been verified (None: unknown)."""

    language: str
    file: str  # books/<lang>/<name>.txt, as upstream names it (the name says the work)
    status: str | None = None
    verified_at: str | None = None  # where the status was read

    @property
    def known(self) -> bool:
        return self.status is not None


def _book_file(lang: str) -> str:
    (name,) = [f for f in FILES if f.startswith(f"books/{lang}/")]
    return name


#: Every language's book (upstream holds one per language).
BOOKS: Mapping[str, BookFacts] = MappingProxyType(
    {lang: BookFacts(lang, _book_file(lang)) for lang in LANGUAGES})


def unknown_book_languages(languages: Iterable[str]) -> list[str]:
    """Of `languages` (context languages: the book is the context's), those whose book's
    copyright status is unknown, sorted."""
    return sorted({lang for lang in languages if not BOOKS[lang].known})


def upstream_file_url(file: str) -> str:
    return f"https://github.com/mungg/OneRuler/blob/{COMMIT}/OneRuler/data/{file}"
