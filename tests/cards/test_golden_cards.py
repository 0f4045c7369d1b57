"""Every benchmark's dataset card renders as it did (issue 41): the stored manifests of small
builds of RULER v1, RULERv2, ONERULER (en and ko) and a folder holding all three render the
stored cards byte for byte (`tests/cards/golden_cards/<case>/`, written by
`helpers.golden_cards` from main at 847732f). Moving a benchmark's text from the card's frame
into its card body must not change a byte of them.

`RULER_GOLDEN_CARDS_WRITE=1` rewrites the stored cards (accepting a deliberate change)."""

from __future__ import annotations

import os

import pytest

from helpers.golden_cards import CASES, FOLDER, RELEASED, cards

WRITE = os.environ.get("RULER_GOLDEN_CARDS_WRITE") == "1"


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_benchmark_s_card_renders_as_before(case):
    folder = FOLDER / case
    made = cards(folder, case)
    assert set(made) == {"README.md", *(["README.release.md"] if case in RELEASED else [])}
    for name, text in made.items():
        if WRITE:
            (folder / name).write_text(text, encoding="utf-8")
        assert text == (folder / name).read_text(encoding="utf-8"), f"{case}/{name} differs"
