"""Shared helpers for the vt / cwe / fwe / qa generator tests: fit samples with real tokenizers.

Generators are exercised directly (fit_sample with the builder's piece counts), so these
tests do not depend on the build pipeline; `assert_lengths_and_fill` checks each stored length
against a fresh tokenization of the whole prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from helpers.paths import SOURCES  # pinned inputs beside the checkout
from ruler.builder.counting import PieceCounter
from ruler.builder.fitting import FittedSample, fit_sample
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.catalog import get_task, make_generator
from ruler.catalog.base import TaskGenerator
from ruler.catalog.benchmarks import BENCHMARK_SPECS
from ruler.catalog.context import BuildContext
from ruler.catalog.length_rules import PROMPT_AND_OUTPUT
from ruler.catalog.tokenizer import Tokenizer
from ruler.kernel.rng import sample_rng

SEED = 42


@lru_cache(maxsize=None)
def tokenizer(name: str) -> Tokenizer:
    return load_tokenizer(name)


@lru_cache(maxsize=None)
def counter(tok: Tokenizer) -> PieceCounter:
    """The builder's piece counter for the tokenizer's default prompt mode (whole-prompt
    counts of every fitting step took most of these tests' time)."""
    return PieceCounter(tok, tok.default_mode())


@lru_cache(maxsize=None)
def context(tok_name: str, sources_dir: str = str(SOURCES), seed: int = SEED,
            length_rule: str = PROMPT_AND_OUTPUT) -> BuildContext:
    return BuildContext(tokenizer(tok_name), tok_name, seed, sources_dir,
                        length_rule=length_rule)


def generator(task: str, tok_name: str, L: int, **ctx_kw) -> TaskGenerator:
    """`task`'s generator at L in a context of its benchmark's length rule."""
    owner = next(b for b in BENCHMARK_SPECS.values() if task in b.tasks)
    return make_generator(get_task(task), context(tok_name, length_rule=owner.length_rule,
                                                  **ctx_kw), L)


@dataclass(frozen=True)
class Sample:
    row: dict
    fitted: FittedSample


def fit(gen: TaskGenerator, index: int) -> Sample:
    ctx, L, task = gen.ctx, gen.max_seq_length, gen.spec.name
    count = counter(ctx.tokenizer)
    count.scope(gen.count_scope)
    fitted = fit_sample(gen, index,
                        lambda: sample_rng(ctx.seed, ctx.tokenizer_name, task, L, index),
                        count.prompt_length, L)
    d = fitted.draft
    row = {"tokenizer": ctx.tokenizer_name, "task": task, "max_seq_length": L, "index": index,
           "input": d.input, "answer_prefix": d.answer_prefix, "outputs": list(d.outputs),
           "length": fitted.length, "tokens_to_generate": gen.spec.tokens_to_generate,
           "metric": gen.spec.metric, "haystack_size": d.size}
    return Sample(row, fitted)


def fit_many(task: str, tok_name: str, L: int, n: int) -> list[Sample]:
    gen = generator(task, tok_name, L)
    gen.check_samples(n)
    return [fit(gen, i) for i in range(n)]


def assert_lengths_and_fill(samples: list[Sample], tok_name: str, L: int,
                            mean_min: float = 0.99, min_min: float = 0.98) -> tuple[float, float]:
    """Stored length = a fresh count + tokens_to_generate <= L; fill above the thresholds."""
    tok = tokenizer(tok_name)
    fills = []
    for s in samples:
        r = s.row
        fresh = tok.prompt_length(r["input"], r["answer_prefix"]) + r["tokens_to_generate"]
        assert r["length"] == fresh <= L, (r["index"], r["length"], fresh, L)
        fills.append(r["length"] / L)
    mean, low = sum(fills) / len(fills), min(fills)
    assert mean >= mean_min and low >= min_min, (tok_name, L, mean, low)
    return mean, low
