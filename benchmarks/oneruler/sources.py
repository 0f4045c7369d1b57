"""ONERULER's pinned input: its data folder (books, translated prompts, key nouns, dictionaries)
at a pinned commit of its GitHub repository, file by file."""

from __future__ import annotations

from ruler.benchmarks.oneruler.files import COMMIT, FILES, RAW_BASE, SIZES
from ruler.catalog.sources import FilesSource

#: Its pinned inputs (`Benchmark.sources`), which `ruler sources` lists and fetches.
SOURCES = (
    FilesSource(
        id="oneruler",
        card_license="other",
        card_note="ONERULER's books and translations state none (its section above)",
        title=f"ONERULER data (GitHub mungg/OneRuler @ {COMMIT[:7]}, "
              f"OneRuler/data: 26 books, prompts, nouns, dictionaries)",
        relpath="oneruler",
        sha256=FILES,
        license="none stated by the repository for its data (the paper's OpenReview record: "
                "CC BY-NC-SA 4.0); the books' copyright status is not stated (see the card)",
        file_base=RAW_BASE,
        sizes=SIZES,
    ),
)
