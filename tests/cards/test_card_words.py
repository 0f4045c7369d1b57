"""The card's frame says a family's facts in that family's words only (`CardWords`, issue 41):
a benchmark without a card body of its own gets the frame's words everywhere, also in the
sections a plug-in's build rarely has (a source that repeats), and RULER's family keeps its
own (tests/cards/test_golden_cards.py holds those byte for byte)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.golden_cards import FOLDER
from ruler.benchmarks.ruler.card import WORDS
from ruler.builder.manifest import Manifest
from ruler.cards.body import CardWords
from ruler.cards.render import render_card
from ruler.catalog.benchmarks import BENCHMARK_SPECS, Benchmark

#: A benchmark declaring no card body, over RULER's catalog tasks (rows are data here).
PLAIN = Benchmark(id="plain", title="Plain", tasks=("niah_single_1", "vt", "cwe", "qa_1"),
                  config_suffix="plain", variants=("",))


@pytest.fixture
def plain_folder(tmp_path) -> Path:
    """The golden v1 folder whose qa_1 repeats its source, its build recorded as Plain's."""
    BENCHMARK_SPECS.register(PLAIN)
    manifest = json.loads((FOLDER / "v1_repeated" / "manifest.json").read_text())
    for build in manifest["builds"].values():
        build["benchmark"] = "plain"
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    yield tmp_path
    BENCHMARK_SPECS.unregister("plain")


def test_a_benchmark_without_a_card_body_gets_the_frame_s_words(plain_folder):
    card = render_card(Manifest.load(plain_folder))
    assert card.split("\n---\n", 1)[1].lstrip().startswith("# Plain, built exactly")
    frame = CardWords()
    assert "## Repeated source material" in card
    assert f"Some sources hold less text than a long context needs{frame.repeated}." in card
    assert f"maximum new tokens ({frame.budget};" in card
    assert f"of {frame.kvpress_dataset} (`context`" in card
    for field, ruler_words in vars(WORDS).items():
        if ruler_words != getattr(frame, field):
            assert ruler_words not in card, field
    # (its rows quote SQuAD and hold needles: the licences and task table say so, as data)
    for ruler_only in ("RULER", "upstream", "special magic", "the paper", "essay"):
        assert ruler_only not in card, ruler_only
