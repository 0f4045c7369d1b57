"""What is known about the licence of ONERULER's data and the copyright of its books, per
language: one record, read by the dataset card and by `ruler release` (which refuses to publish
a book whose status is unknown without an acknowledgement naming its language: its release
gate, `BOOK_STATUS`).

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
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from ruler.benchmarks.oneruler.files import FILES
from ruler.benchmarks.oneruler.languages import LANGUAGES, OnerulerLanguage
from ruler.builder.release_gates import ReleaseGate
from ruler.kernel.errors import RulerError

if TYPE_CHECKING:
    from ruler.builder.manifest import Manifest

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


def oneruler_configs(manifest: Manifest) -> dict[str, OnerulerLanguage]:
    """The folder's ONERULER configs (with files) and their languages."""
    return {c: _language(manifest.builds[c].axis_values()) for c in manifest.configs()
            if manifest.builds[c].benchmark == "oneruler" and manifest.files_of(c)}


def _language(values: Mapping[str, object]) -> OnerulerLanguage:
    """A build's language, as its axis values hold it."""
    language = values["language"]
    assert isinstance(language, OnerulerLanguage), language
    return language


def check_book_status(manifest: Manifest, acknowledged: Sequence[str]) -> None:
    """ONERULER's release gate: its configs hold their context language's book, and neither
    upstream's repository nor its books state a source or copyright status: a release refuses
    unless `acknowledged` names exactly the languages whose status is unknown."""
    languages = oneruler_configs(manifest).values()
    unknown = unknown_book_languages(lang.context for lang in languages)
    given = sorted(set(acknowledged or ()))
    if given == unknown:
        return
    if not unknown:
        raise RulerError(f"--acknowledge-book-status {','.join(given)}: no ONERULER book of "
                         f"unknown status is in this folder; leave the flag out")
    raise RulerError(
        f"the ONERULER configs hold books whose source and copyright status upstream does not "
        f"state (languages: {', '.join(unknown)}; the card lists each book): check you may "
        f"redistribute them, then pass --acknowledge-book-status {','.join(unknown)}"
        + (f" (given: {','.join(given)})" if given else ""))


#: `ruler release --acknowledge-book-status LANGS`.
BOOK_STATUS = ReleaseGate(
    "--acknowledge-book-status", check=check_book_status, metavar="LANGS",
    help="ONERULER configs: the comma-separated languages whose book's copyright status is "
         "unknown (upstream states none; the card lists them), named after checking you may "
         "redistribute each; without it such a release refuses and says which")
