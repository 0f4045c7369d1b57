"""Exactness for tokenizers outside the registry: piece counting is proven
(tests/builder/test_counting) only for the registry's tokenizers, so any other tokenizer gets
every row certified against a whole-prompt tokenization unless the user accepts sampled
certification; the card says which."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers.builds import build, rows
from helpers.paths import TOKENIZERS
from ruler.builder.manifest import read_manifest
from ruler.builder.pipeline.worker import Worker
from ruler.builder.tokenizer_registry import load_tokenizer

pytestmark = [pytest.mark.build]


def _folder(tmp_path: Path) -> Path:
    """A registry tokenizer's files as a folder: outside the registry (not pinned), small and
    quick to load (SentencePiece)."""
    folder = tmp_path / "toks" / "mytok"
    shutil.copytree(TOKENIZERS / "llama-2", folder)
    return folder


class OffByThree:
    """A piece counter that undercounts: what a tokenizer that merges across a junction the
    registry's tokenizers never merge across would do to the shortcut."""

    def __init__(self, real):
        self.real = real

    def __getattr__(self, name):
        return getattr(self.real, name)

    def prompt_length(self, draft):
        return self.real.prompt_length(draft) - 3


@pytest.fixture
def miscounts_sample_2(monkeypatch):
    """Piece counts of sample 2 (not a task's first sample, not a spot check) go wrong."""
    real = Worker._fit

    def fit(self, gen, index, counter):
        if index == 2 and counter is self.fast and counter is not self.exact:
            counter = OffByThree(counter)
        return real(self, gen, index, counter)

    monkeypatch.setattr(Worker, "_fit", fit)


def test_every_row_is_certified_for_a_tokenizer_outside_the_registry(tmp_path,
                                                                     miscounts_sample_2):
    folder = _folder(tmp_path)
    report = build(tmp_path / "out", str(folder), ["niah_single_1", "vt"], [1024], 4,
                   workers=1)
    assert all(f.certified_rows + f.exact_rows == f.rows == 4 for f in report.files)
    assert read_manifest(tmp_path / "out")["builds"]["mytok"]["counting"] == ["certified"]
    card = (tmp_path / "out" / "README.md").read_text()
    assert "every row checked against a whole-prompt tokenization (`certified`)" in card
    tok = load_tokenizer(str(folder))
    for task in ("niah_single_1", "vt"):  # the miscounted sample was caught and refitted
        for r in rows(tmp_path / "out", "mytok", task, 1024):
            assert r["length"] == tok.prompt_length(r["input"], r["answer_prefix"]) \
                + r["tokens_to_generate"] <= 1024


def test_sampled_certification_is_a_choice_the_card_states(tmp_path, miscounts_sample_2):
    folder = _folder(tmp_path)
    report = build(tmp_path / "out", str(folder), ["vt"], [1024], 4, workers=1,
                   sampled_certification=True)
    assert report.files[0].certified_rows == 1  # the task's first sample only
    assert read_manifest(tmp_path / "out")["builds"]["mytok"]["counting"] == ["sampled"]
    assert "on sampled rows only (--sampled-certification)" in \
        (tmp_path / "out" / "README.md").read_text()
    tok = load_tokenizer(str(folder))
    r = rows(tmp_path / "out", "mytok", "vt", 1024)[2]  # what sampling lets through
    assert r["length"] != tok.prompt_length(r["input"], r["answer_prefix"]) + 30


def test_registry_tokenizers_rest_on_the_proof(tmp_path):
    build(tmp_path / "out", "gpt-4", ["vt"], [1024], 4, workers=1)
    assert read_manifest(tmp_path / "out")["builds"]["gpt-4"]["counting"] == ["proven"]


def test_release_re_tokenizes_every_row_of_an_unregistered_tokenizer(tmp_path):
    from ruler.builder.verify.run import verify

    folder = _folder(tmp_path)
    build(tmp_path / "out", str(folder), ["vt"], [1024], 5, workers=1)
    overrides = {"mytok": str(folder)}
    sampled = verify(tmp_path / "out", load=False, tokenizers=overrides, sample=2)
    assert [f.retokenized for f in sampled.files] == [2]
    released = verify(tmp_path / "out", load=False, tokenizers=overrides, sample=2,
                      full_unpinned=True)  # what `ruler release` asks for
    assert [f.retokenized for f in released.files] == [5]
