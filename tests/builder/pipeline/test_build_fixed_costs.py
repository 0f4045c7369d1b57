"""What a build pays once rather than per file or per config: the card is rendered when the
files are recorded, once per command (issue 43)."""

from __future__ import annotations

import pytest

import ruler.builder.pipeline.publish as publish
from helpers.builds import build
from ruler.builder.manifest import Manifest
from ruler.cards.render import render_card
from ruler.commands.main import main


@pytest.fixture
def card_writes(monkeypatch) -> list:
    """Each rendering of OUT's publish steps (the card), as its folder."""
    writes: list = []
    real = publish.write_published
    monkeypatch.setattr(publish, "write_published", lambda out: writes.append(out) or real(out))
    return writes


def _card_is_current(out) -> bool:
    return (out / "README.md").read_text() == render_card(Manifest.load(out))


@pytest.mark.build
def test_a_build_renders_its_card_once_not_after_every_file(tmp_path, card_writes):
    """At e344ff3 the card was rendered after each of the 4 files."""
    out = tmp_path / "ruler"
    build(out, "gpt-4", ["niah_single_1", "vt"], [1024, 2048], 2)
    assert len(card_writes) == 1 and _card_is_current(out)
    build(out, "gpt-4", ["niah_single_1", "vt"], [1024, 2048], 2)  # up to date: nothing written
    assert len(card_writes) == 1 and _card_is_current(out)


@pytest.mark.build
def test_a_command_of_several_configs_renders_the_card_once(tmp_path, card_writes, capsys):
    """ONERULER's languages (and --replicates) are one config each: at e344ff3 the card was
    rendered after every file of every config (4 here)."""
    out = tmp_path / "ruler"
    assert main(["build", "--tokenizer", "gpt-4", "--benchmark", "oneruler", "--languages",
                 "sw,en", "--tasks", "or_niah_single,or_niah_none", "--lengths", "2000",
                 "--samples", "1", "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    assert len(card_writes) == 1 and _card_is_current(out)
    printed = capsys.readouterr().out
    assert "gpt-4--oneruler-sw: 2 file(s) built" in printed
    assert "gpt-4--oneruler-en: 2 file(s) built" in printed


@pytest.mark.build
def test_the_files_recorded_before_a_failure_are_on_the_card(tmp_path, card_writes,
                                                            monkeypatch):
    """A build that stops after some files were recorded renders the card of those."""
    from ruler.builder.pipeline.publish import Publisher

    real = Publisher.publish
    published = []

    def publish_then_fail(self, result, entry, written):
        if published:
            raise KeyboardInterrupt
        published.append(result.path)
        real(self, result, entry, written)

    monkeypatch.setattr(Publisher, "publish", publish_then_fail)
    out = tmp_path / "ruler"
    with pytest.raises(KeyboardInterrupt):
        build(out, "gpt-4", ["niah_single_1", "vt"], [1024], 1)
    assert len(Manifest.load(out).files) == 1 and len(card_writes) == 1
    assert _card_is_current(out)
