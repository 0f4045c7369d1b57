"""Word lists from the pinned `wonderwords` release (2.2.0, RULER's generation era).

3.x dropped four nouns, which changes every `random.choice` over the lists, so the version is
pinned in pyproject and checked here. Lists are read from the package's asset files directly
rather than through wonderwords' private helpers.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import random
from functools import lru_cache

from ruler.kernel.errors import RulerError
from ruler.kernel.rng import below

WONDERWORDS_VERSION = "2.2.0"


@lru_cache(maxsize=None)
def wonderwords_list(name: str) -> tuple[str, ...]:
    """`nounlist.txt`, `adjectivelist.txt` or `verblist.txt`, in file order."""
    version = importlib.metadata.version("wonderwords")
    if version != WONDERWORDS_VERSION:
        raise RulerError(f"wonderwords {version} is installed; RULER's word lists are those of "
                         f"wonderwords {WONDERWORDS_VERSION} (pip install "
                         f"wonderwords=={WONDERWORDS_VERSION})")
    text = importlib.resources.files("wonderwords").joinpath("assets").joinpath(name).read_text(
        "utf-8")
    return tuple(w for w in (line.strip() for line in text.splitlines()) if w)


class AdjectiveNounKeys:
    """Uniform draws of "adjective-noun" keys, as upstream's `random.choice(words)`.

    Upstream materialises sorted(set(f"{adj}-{noun}")) (6,175,260 strings) per process;
    drawing a uniform (adjective, noun) index pair gives the same distribution (up to the
    handful of pairs whose joined strings coincide) without the list.
    """

    def __init__(self) -> None:
        self.adjectives = wonderwords_list("adjectivelist.txt")
        self.nouns = wonderwords_list("nounlist.txt")

    def draw(self, rng: random.Random) -> str:
        i = below(rng, len(self.adjectives) * len(self.nouns))  # rng.randrange(...)
        adj, noun = divmod(i, len(self.nouns))
        return f"{self.adjectives[adj]}-{self.nouns[noun]}"
