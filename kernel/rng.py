"""Per-sample randomness derived from a stable hash, never from global RNG state.

Upstream RULER draws everything from the process-global RNG, so sample #0 depends on how many
length probes ran before it (and so on the tokenizer). Here each sample owns its RNG, derived
from (seed, tokenizer, task, length, index): any subset of a build reproduces the same rows.
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(*parts: object) -> int:
    """A 64-bit integer from the parts, stable across processes and Python versions."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def sample_rng(seed: int, tokenizer: str, task: str, max_seq_length: int, index: int,
               stream: str = "") -> random.Random:
    """A fresh `random.Random` for one sample (optionally one named sub-stream of it)."""
    return random.Random(derive_seed(seed, tokenizer, task, max_seq_length, index, stream))


def below(rng: random.Random, n: int) -> int:
    """`rng.randrange(n)` for n >= 1, the same draw (CPython's rejection sampling on
    `getrandbits`) without its three Python-level calls: needle haystacks draw two values
    per line, tens of thousands per sample. tests/builder/test_rng.py checks it against
    randrange."""
    k = n.bit_length()
    r = rng.getrandbits(k)
    while r >= n:
        r = rng.getrandbits(k)
    return r
