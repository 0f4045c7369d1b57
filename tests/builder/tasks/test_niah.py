"""NIAH family: upstream's strings, exact lengths, tight fill, unique keys, gold positions."""

from __future__ import annotations

import re

import numpy as np
import pytest

from helpers.builds import NIAH_TASKS, build, rows
from ruler.benchmarks.ruler.niah import DEPTHS, NEEDLE
from ruler.benchmarks.ruler.tasks import NIAH
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.catalog.checks import check_row
from ruler.catalog.tasks import TASKS

# Upstream's strings (NVIDIA/RULER scripts/data/synthetic/constants.py), the oracle.
UPSTREAM_TEMPLATE = (
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to "
    "memorize it. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all "
    "the special magic {type_needle_v} for {query} mentioned in the provided text?")
UPSTREAM_PREFIX = (" The special magic {type_needle_v} for {query} mentioned in the provided "
                   "text are")
LENGTHS = (4096, 8192)
SAMPLES = 10


@pytest.fixture(scope="module")
def niah_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("niah")
    build(out, "llama-3.1", NIAH_TASKS, LENGTHS, SAMPLES)
    return out


def test_family_constants_equal_upstream():
    assert NIAH.template == UPSTREAM_TEMPLATE
    assert NIAH.answer_prefix == UPSTREAM_PREFIX
    assert NIAH.tokens_to_generate == 128 and NIAH.metric == "string_match_all"
    assert NEEDLE == "One of the special magic {type_needle_v} for {key} is: {value}."
    assert list(DEPTHS) == list(np.round(np.linspace(0, 100, num=40, endpoint=True)).astype(int))


def test_task_parameters_equal_upstream_yaml():
    p = {t: dict(TASKS[t].params) for t in NIAH_TASKS}
    assert p["niah_single_1"] == dict(type_haystack="noise", type_needle_k="words",
                                      type_needle_v="numbers", num_needle_k=1, num_needle_v=1,
                                      num_needle_q=1)
    assert p["niah_single_3"]["type_needle_v"] == "uuids"
    assert p["niah_multikey_1"]["num_needle_k"] == 4
    assert p["niah_multikey_2"]["type_haystack"] == "needle"
    assert p["niah_multikey_3"]["type_needle_k"] == "uuids"
    assert p["niah_multivalue"]["num_needle_v"] == 4 and p["niah_multiquery"]["num_needle_q"] == 4


@pytest.mark.subprocess
def test_singular_prompt_matches_upstreams_rendering(niah_build):
    row = rows(niah_build, "llama-3.1", "niah_single_1", 4096)[0]
    key = re.search(r"for (\S+) mentioned", row["input"]).group(1)
    assert row["input"].startswith(
        "A special magic number is hidden within the following text. Make sure to memorize it. "
        "I will quiz you about the number afterwards.\n")
    assert row["input"].endswith(
        f"\nWhat is the special magic number for {key} mentioned in the provided text?")
    assert row["answer_prefix"] == (
        f" The special magic number for {key} mentioned in the provided text is")


@pytest.mark.subprocess
def test_plural_prompts_for_multiquery(niah_build):
    row = rows(niah_build, "llama-3.1", "niah_multiquery", 4096)[0]
    q = re.search(r"What are all the special magic numbers for (.+) mentioned", row["input"])
    assert q and q.group(1).count(", ") == 3 and ", and " in q.group(1)
    assert row["answer_prefix"].endswith(" mentioned in the provided text are")
    assert len(row["outputs"]) == 4


@pytest.mark.subprocess
@pytest.mark.parametrize("task", [t if t in ("niah_single_1", "niah_multikey_2", "niah_multiquery")
                                  else pytest.param(t, marks=pytest.mark.slow) for t in NIAH_TASKS])
def test_lengths_exact_fill_tight_and_answers_recoverable(niah_build, task):
    tok = load_tokenizer("llama-3.1")
    for L in LENGTHS:
        rs = rows(niah_build, "llama-3.1", task, L)
        assert [r["index"] for r in rs] == list(range(SAMPLES))
        fills = []
        for r in rs:
            fresh = tok.prompt_length(r["input"], r["answer_prefix"]) + r["tokens_to_generate"]
            assert r["length"] == fresh <= L
            fills.append(r["length"] / L)
            assert check_row(r) is None
            assert all(0.0 <= d <= 1.0 for d in r["gold_depths"])
            assert len(r["gold_token_positions"]) == len(r["outputs"])
        assert np.mean(fills) >= 0.99 and min(fills) >= 0.98, (task, L, fills)


@pytest.mark.subprocess
def test_gold_token_positions_point_at_the_needles(niah_build):
    tok = load_tokenizer("llama-3.1")
    for task in ("niah_single_2", "niah_multikey_1", "niah_multivalue"):
        for r in rows(niah_build, "llama-3.1", task, 4096):
            ids = tok.encode(r["input"])
            for pos in r["gold_token_positions"]:
                assert tok.hf.decode(ids[pos:pos + 8]).lstrip().startswith("One of the special")


@pytest.mark.subprocess
def test_no_duplicate_keys_within_a_sample(niah_build):
    needle = re.compile(r"One of the special magic \w+ for (.+?) is: ")
    for task in ("niah_multikey_2", "niah_multikey_3", "niah_multikey_1"):
        for r in rows(niah_build, "llama-3.1", task, 8192):
            keys = needle.findall(r["input"])
            assert len(keys) == len(set(keys)), task


@pytest.mark.subprocess
def test_check_row_fails_on_a_tampered_row(niah_build):
    r = rows(niah_build, "llama-3.1", "niah_multikey_2", 4096)[0]
    assert check_row(r) is None
    assert check_row(dict(r, outputs=["1234567"])) is not None
    assert check_row(dict(r, input=r["input"].replace(r["outputs"][0], "0000000"))) is not None


@pytest.mark.subprocess
def test_essay_needles_sit_between_sentences_at_grid_depths(niah_build):
    for r in rows(niah_build, "llama-3.1", "niah_multikey_1", 8192):
        assert r["haystack_size"] > 3000  # essay words
        for pos in r["gold_token_positions"]:
            assert 0 < pos < r["length"]


@pytest.mark.parametrize("task", ["niah_multikey_2", "niah_multikey_3"])
def test_distractor_lines_do_not_depend_on_the_sizes_probed_before(task):
    """The distractor memo (RNG checkpoints) gives the draft a fresh generator would."""
    from ruler.catalog import get_task, make_generator
    from ruler.catalog.context import BuildContext
    from ruler.kernel.rng import sample_rng

    ctx = BuildContext(load_tokenizer("gpt-4"), "gpt-4", 42)

    def draft(gen, size):
        d = gen.draft(0, sample_rng(42, "gpt-4", task, 8192, 0), size)
        return d.input, d.gold_spans, d.outputs

    probed = make_generator(get_task(task), ctx, 8192)
    for size in (700, 40, 256, 513, 255, 1000, 512):
        fresh = make_generator(get_task(task), ctx, 8192)
        assert draft(probed, size) == draft(fresh, size), size


@pytest.mark.parametrize("task", ["niah_multikey_2", "niah_multikey_3", "niah_single_3"])
def test_the_inlined_line_drawer_draws_what_unique_key_and_random_draw(task):
    """Distractor lines are drawn by an inlined drawer (thousands a sample at 128K): the same
    draws and strings as `_unique_key`, `_random` and the needle's format."""
    import random

    from ruler.benchmarks.ruler.niah import NEEDLE
    from ruler.catalog import get_task, make_generator
    from ruler.catalog.context import BuildContext

    gen = make_generator(get_task(task), BuildContext(load_tokenizer("gpt-4"), "gpt-4", 42),
                         8192)
    draw = gen._line_drawer()
    ours, theirs = random.Random(3), random.Random(3)
    taken_ours, taken_theirs = {"seed-key"}, {"seed-key"}
    for _ in range(3000):
        key = gen._unique_key(theirs, taken_theirs)
        line = NEEDLE.format(type_needle_v=gen.type_v, key=key,
                             value=gen._random(theirs, gen.type_v))
        assert draw(ours, taken_ours) == (key, line)
    assert ours.getstate() == theirs.getstate() and taken_ours == taken_theirs
