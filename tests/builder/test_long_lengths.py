"""Lengths past the paper's 128K: 256K and 1M.

Sources run out there and are repeated as upstream repeats them (qa: the whole document list
again, cut; niah essays: the corpus from its start). Every occurrence of a gold document is a
gold item with its depth, needle keys stay unique, and the manifest and card say how much of
each context is repeated material. The fast tests check the drafts at repeating sizes; the
slow one builds 2 samples of several tasks at 256K and 1M and proves them with `verify`.
"""

from __future__ import annotations

import json
import re

import pytest

from helpers.builds import build, rows
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.builder.verify.run import verify
from ruler.catalog import TASKS, make_generator
from ruler.catalog.context import BuildContext
from ruler.kernel.rng import sample_rng

ONE_M = 1 << 20


@pytest.fixture(scope="module")
def ctx():
    return BuildContext(load_tokenizer("llama-3.1"), "llama-3.1", 42)


@pytest.mark.parametrize("task", ["qa_1", "qa_2"])
def test_qa_past_its_documents_repeats_the_list_and_marks_every_gold_occurrence(ctx, task):
    gen = make_generator(TASKS[task], ctx, ONE_M)
    docs, n = gen.data.docs, len(gen.data.docs)
    size = 2 * n + 7  # the list twice, then cut
    for index in range(3):
        d = gen.draft(index, sample_rng(42, "llama-3.1", task, ONE_M, index), size)
        gold = gen.data.questions[index].gold
        # gold id g occurs at g, g + n and, for g < 7, g + 2n: every occurrence is gold
        expected = sum(len(range(g, size, n)) for g in gold)
        assert len(d.gold_spans) == expected >= 2 * len(gold)
        for a, b in d.gold_spans:  # "Document i:\n" + a gold document
            assert d.input.startswith("Document ", a)
            assert any(d.input[a:b].endswith(":\n" + docs[g]) for g in gold)
        assert sum(d.input.count(docs[g]) for g in gold) >= expected
        assert d.repeated_chars == sum(len(docs[i % n]) for i in range(n, size))
        assert d.input.count("\n\nDocument ") == size


def test_qa_below_its_documents_repeats_nothing(ctx):
    gen = make_generator(TASKS["qa_1"], ctx, ONE_M)
    d = gen.draft(0, sample_rng(42, "llama-3.1", "qa_1", ONE_M, 0), len(gen.data.docs) - 1)
    assert d.repeated_chars == 0 and len(d.gold_spans) == 1


@pytest.mark.slow  # builds the essay corpus (punkt over 6 MB)
def test_essay_haystacks_continue_with_the_corpus_and_count_the_repeat(ctx):
    gen = make_generator(TASKS["niah_single_2"], ctx, ONE_M)
    corpus = gen.corpus
    words = len(corpus.words)
    assert corpus.repeated_chars(words) == 0
    extra = corpus.words[:10]
    assert corpus.repeated_chars(words + 10) == len(" ".join(extra))
    d = gen.draft(0, sample_rng(42, "llama-3.1", "niah_single_2", ONE_M, 0), words + 5000)
    assert d.repeated_chars == corpus.repeated_chars(words + 5000) > 0


def test_distractor_needle_keys_stay_unique_at_a_million_tokens(ctx):
    gen = make_generator(TASKS["niah_multikey_2"], ctx, ONE_M)
    d = gen.draft(0, sample_rng(42, "llama-3.1", "niah_multikey_2", ONE_M, 0), 60000)
    keys = re.findall(r"^One of the special magic numbers for (.+) is: \d+\.$", d.input, re.M)
    assert len(keys) == 60001 and len(set(keys)) == len(keys)


# --- built for real: 2 samples at 256K and 1M --------------------------------------------------

LONG_TASKS = ("qa_1", "qa_2", "cwe", "niah_single_2", "niah_multikey_2")


@pytest.fixture(scope="module")
def long_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("long")
    build(out, "llama-3.1", LONG_TASKS, [262144, ONE_M], 2)
    return out


@pytest.mark.slow
def test_long_builds_are_exact_readable_and_verified(long_build):
    for task in LONG_TASKS:
        for L in (262144, ONE_M):
            for row in rows(long_build, "llama-3.1", task, L):
                assert 0.995 * L <= row["length"] <= L, (task, L, row["length"])
    report = verify(long_build, load=False)  # lengths re-tokenized, answers, gold, hashes
    assert report.ok, report


@pytest.mark.slow
def test_long_qa_records_every_gold_occurrence_with_its_depth(long_build):
    for task in ("qa_1", "qa_2"):
        gen = make_generator(TASKS[task], BuildContext(load_tokenizer("llama-3.1"), "llama-3.1",
                                                       42), ONE_M)
        docs, n = gen.data.docs, len(gen.data.docs)
        for L in (262144, ONE_M):
            for row in rows(long_build, "llama-3.1", task, L):
                assert row["haystack_size"] > n  # past the source: repeated
                gold = gen.data.questions[row["index"]].gold
                occurrences = sum(len(range(g, row["haystack_size"], n)) for g in gold)
                assert len(row["gold_token_positions"]) == occurrences
                depths = row["gold_depths"]
                assert depths == sorted(depths) and all(0 <= x <= 1 for x in depths)
                if L == ONE_M:
                    assert occurrences >= 4 * len(gold)  # spread over the whole context
                    assert depths[0] < 0.25 and depths[-1] > 0.75
                assert sum(row["input"].count(docs[g]) for g in gold) >= occurrences


@pytest.mark.slow
def test_long_builds_record_and_show_repeated_material(long_build):
    files = json.loads((long_build / "manifest.json").read_text())["files"]

    def share(task, L):
        return files[f"data/llama-3.1/{task}/{L}.parquet"].get("repeated_share")

    assert share("qa_1", ONE_M)["mean"] > 0.7  # ~6,000 documents from 1,204
    assert 0 < share("qa_1", 262144)["mean"] < 0.3
    assert share("qa_2", ONE_M)["mean"] > 0.8
    assert share("niah_single_2", 262144) is None  # the corpus holds ~700K tokens
    assert 0.2 < share("niah_single_2", ONE_M)["mean"] < 0.5
    assert share("cwe", ONE_M) is None and share("niah_multikey_2", ONE_M) is None
    card = (long_build / "README.md").read_text()
    section = card.split("## Repeated source material", 1)[1].split("\n## ", 1)[0]
    assert "| `llama-3.1` | `qa_1` | 1048576 |" in section
    assert "| `llama-3.1` | `niah_single_2` | 1048576 |" in section
    assert "`cwe`" not in section.split("|---")[1]
