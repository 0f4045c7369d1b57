"""Depth-swept builds, fast parts: bins, placement rules, variant naming and validation, and
generators fitted with a real tokenizer (no build pipeline)."""

from __future__ import annotations

from dataclasses import replace

import pytest

import helpers.tasks as th
from ruler.benchmarks.ruler import niah
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.builder.pipeline import BuildConfig
from ruler.catalog import get_task, make_generator
from ruler.catalog.context import BuildContext
from ruler.catalog.depths import DEPTHS, DepthBin, bin_of, check_depth_bins
from ruler.catalog.family import swept_tasks
from ruler.catalog.placement import document_order, essay_gold_cuts, line_gold_slots
from ruler.catalog.variants import NO_VARIANT, DepthSweep
from ruler.kernel.errors import RulerError

# --- bins ------------------------------------------------------------------------------------

def test_bin_edges_are_half_open_and_one_is_in_the_last_bin():
    assert [bin_of(d, 10) for d in (0.0, 0.0999, 0.1, 0.3, 0.7, 0.9999, 1.0)] == \
        [0, 0, 1, 3, 7, 9, 9]
    # 0.3 * 10 is 2.9999999999999996 in floats: an exact edge still opens the next bin
    assert bin_of(3 / 10, 10) == 3 and bin_of(0.15, 20) == 3
    b = DepthBin(3, 10)
    assert (b.lo, b.hi, b.centre) == (0.3, 0.4, 0.35) and b.contains(0.3) and not b.contains(0.4)


@pytest.mark.parametrize("bins", [0, 1, 21, 2.5, True])
def test_bad_bin_counts_are_one_clear_error(bins):
    with pytest.raises(RulerError, match="--depths must be an integer from 2 to 20"):
        check_depth_bins(bins)


def test_every_bin_up_to_20_holds_a_point_of_upstreams_grid():
    for n in range(2, 21):
        assert {bin_of(d / 100, n) for d in DEPTHS} == set(range(n))


# --- variant naming and validation -------------------------------------------------------------

def test_variant_config_names_and_identity():
    cfg = BuildConfig(tokenizer="gpt-4", tasks=swept_tasks(), variant=DepthSweep(10))
    assert cfg.variant.record() == {"depth_bins": 10}
    assert cfg.variant.config_name("gpt-4") == "gpt-4--depth10"
    assert replace(cfg, variant=NO_VARIANT).variant.record() == {}
    assert NO_VARIANT.config_name("org--name") == "org--name"
    assert swept_tasks() == tuple(t for t in STANDARD_TASKS if t.startswith(("niah", "qa")))


@pytest.mark.parametrize("tasks", [("vt",), ("niah_single_1", "cwe"), ("fwe",)])
def test_depths_refuse_tasks_without_a_gold_position(tasks):
    with pytest.raises(RulerError, match="no single gold position"):
        BuildConfig(tokenizer="gpt-4", tasks=tasks, variant=DepthSweep(10))


# --- placement rules ---------------------------------------------------------------------------

def test_essay_gold_cut_is_the_grid_point_nearest_the_bin_centre():
    weights = [10] * 200  # equal sentences; grid point d cuts before sentence 2d

    def depth(cut: int) -> float:
        return cut * 10 / (200 * 10 + 10)  # the gold needle itself weighs 10

    for b in range(10):
        (cut,) = essay_gold_cuts(weights, DepthBin(b, 10), [10], [], set())
        in_bin = [d for d in DEPTHS if bin_of(depth(2 * d), 10) == b]
        best = min(in_bin, key=lambda d: abs(depth(2 * d) - (b + 0.5) / 10))
        assert cut == 2 * best, (b, cut, best)


def test_essay_gold_cuts_avoid_points_other_needles_take_and_count_them():
    weights = [10] * 200
    others = [(int(200 * 0.15), 10)]  # the point nearest bin 1's centre is taken
    cuts = essay_gold_cuts(weights, DepthBin(1, 10), [10], others, {15})
    assert cuts != [30] and 0.1 <= cuts[0] / 200 < 0.2
    # several gold needles: distinct grid points, all in the bin with the cluster before them
    cuts = essay_gold_cuts(weights, DepthBin(8, 10), [10] * 4, [], set())
    assert cuts == sorted(cuts) and len(cuts) == 4
    starts = [(cuts[t] * 10 + 10 * t) / (2000 + 40) for t in range(4)]
    assert all(bin_of(s, 10) == 8 for s in starts)
    # two points are clear of the bin's edges with the whole cluster before them: shared
    assert len(set(cuts)) == 2
    # two needles, one point whose cut lies in the bin: they share it
    cuts = essay_gold_cuts([10] * 40, DepthBin(3, 20), [10] * 2, [], set())
    assert len(set(cuts)) == 1 and len(cuts) == 2


def test_essay_without_a_grid_point_in_the_bin_uses_the_nearest_sentence():
    # 100 sentences: grid point d cuts before sentence d; the heavy sentences 1 and 2 put every
    # grid cut but 0 past 97% of the weight, while cut 1 (off the grid) lies in bin 1 of 20
    weights = [200, 1400, 1400] + [1] * 97
    assert essay_gold_cuts(weights, DepthBin(1, 20), [0], [], set()) == [1]


def test_line_slot_is_the_line_nearest_the_bin_centre():
    weights = [10] * 1000
    for b in (0, 4, 9):
        (slot,) = line_gold_slots(weights, DepthBin(b, 10), [10], [])
        assert abs(slot * 10 / 10010 - (b + 0.5) / 10) <= 10 / 10010
    # uneven lines: the weight before the slot, not the line count, decides
    weights = [1] * 500 + [100] * 500
    (slot,) = line_gold_slots(weights, DepthBin(1, 2), [1], [])  # centre: 75% of the weight
    assert slot == 874  # 500 + 100 * (slot - 500) ~= 0.75 * 50501; by line count: 750
    # several gold needles go in at one slot (consecutive lines), never on another needle's
    slots = line_gold_slots([10] * 100, DepthBin(5, 10), [10, 10], [(54, 10)])
    assert slots[0] == slots[1] != 54


def _block_depth(rest, block, fixed, order, block_order, j):
    """The mean start of the block's documents."""
    lengths = [rest[i] for i in order]
    lengths[j:j] = [block[t] for t in block_order]
    starts = [sum(lengths[:k]) + sum(fixed[:k]) for k in range(len(lengths))]
    total = sum(lengths) + sum(fixed)
    return sum(starts[j:j + len(block)]) / (len(block) * total)


def test_document_block_goes_where_its_depth_is_in_the_bin():
    rest, fixed = [100] * 19, [5] * 20
    for b in range(10):
        order, bo, j = document_order(rest, [100], fixed, DepthBin(b, 10))
        assert order == list(range(19)) and bo == [0]  # nothing had to move
        assert bin_of(_block_depth(rest, [100], fixed, order, bo, j), 10) == b


def test_a_document_spanning_the_bin_moves_to_the_far_end():
    rest = [100, 100, 300, 100, 100]  # in upstream's order the 300 covers 27%..68%
    fixed = [0] * 7
    block = [20, 20]
    order, bo, j = document_order(rest, block, fixed, DepthBin(4, 10))
    assert order == [0, 1, 3, 4, 2]  # a bin in the first half: it moves to the end
    assert bin_of(_block_depth(rest, block, fixed, order, bo, j), 10) == 4


def test_two_gold_documents_reach_the_last_bin_longest_first():
    # 940 in all, the last bin starts at 846. At the end, shortest first the starts are 800
    # and 820 (mean 810: out); longest first 800 and 920 (mean 860: in). Neither document
    # could start in the bin with the other after it: the block is wider than the bin.
    rest, block, fixed = [100] * 8, [20, 120], [0] * 10
    order, bo, j = document_order(rest, block, fixed, DepthBin(9, 10))
    assert (order, bo, j) == (list(range(8)), [1, 0], 8)
    assert bin_of(_block_depth(rest, block, fixed, order, bo, j), 10) == 9


# --- generators, fitted with a real tokenizer ----------------------------------------------------

def _swept(tok: str, bins: int) -> BuildContext:
    base = th.context(tok)
    return BuildContext(base.tokenizer, base.tokenizer_name, base.seed, base.sources_dir,
                        variant=DepthSweep(bins))


@pytest.mark.parametrize("task", ["niah_single_1", "niah_multikey_2"])
def test_line_haystack_samples_sit_in_their_bins_and_keep_their_seeds(task):
    L, bins = 4096, 4
    default = make_generator(get_task(task), th.context("gpt-4"), L)
    swept = make_generator(get_task(task), _swept("gpt-4", bins), L)
    for i in range(bins):
        a, b = th.fit(default, i), th.fit(swept, i)
        assert len(b.fitted.draft.gold_spans) == 1
        # same seed: same question and answer, the needle moved
        assert a.row["outputs"] == b.row["outputs"]
        assert a.row["input"].rsplit("\n", 1)[-1] == b.row["input"].rsplit("\n", 1)[-1]
        d = b.fitted.draft
        (start, _), (c0, c1) = d.gold_spans[0], d.context_span
        assert bin_of((start - c0) / (c1 - c0), bins) == i % bins
    th.assert_lengths_and_fill([th.fit(swept, i) for i in range(bins)], "gpt-4", L,
                               mean_min=0.99, min_min=0.98)


def test_needles_regex_reads_values_in_input_order():
    row = {"input": "Some text.\nOne of the special magic numbers for a-b is: 2. x "
                    "One of the special magic numbers for c-d is: 1.\nWhat are all the special "
                    "magic numbers for c-d, and a-b mentioned in the provided text?",
           "outputs": ["1", "2"]}
    assert niah.gold_values_in_order(row) == ["2", "1"]
    assert niah.check_row(row) is None


def test_a_spawned_worker_gets_the_variant_config_and_bins():
    import pickle

    from ruler.builder.pipeline.recipe import BuildRecipe
    from ruler.builder.pipeline.worker import Worker

    cfg = BuildConfig(tokenizer="gpt-4", tasks=swept_tasks(), variant=DepthSweep(10))
    recipe = BuildRecipe.from_config(cfg, th.tokenizer("gpt-4"))
    copy = pickle.loads(pickle.dumps(Worker(recipe)))
    # the same recipe, its tokenizer loaded again (the same identity)
    assert replace(copy.recipe, tokenizer=None) == replace(recipe, tokenizer=None)
    assert copy.recipe.tokenizer.identity == recipe.tokenizer.identity
    assert copy.recipe.config == "gpt-4--depth10"
    assert copy.ctx.variant == DepthSweep(10)
    assert copy.ctx.tokenizer_name == "gpt-4"  # the seeds stay the default config's
    # the generators of the copy ask the variant where sample 13's gold goes
    assert copy.generator("niah_single_1", 4096).depth_bin(13) == DepthBin(3, 10)
