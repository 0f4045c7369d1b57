"""The essay haystack: RULER's Paul Graham corpus as a word stream with sentence boundaries.

Upstream takes `num_haystack` words of `re.sub(r"\\s+", " ", essay).split(" ")` (repeating the
corpus when more are needed), joins them with spaces and runs nltk's punkt `sent_tokenize` on
the result for every probe and sample. Punkt decides each boundary from the tokens around it,
so the sentences of a prefix are the corpus's sentences that end inside it plus the prefix's
truncated last sentence. We split the corpus once and slice (the card's differences).
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import functools
import hashlib
import itertools
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from ruler.catalog.sources import ResolvedSource
from ruler.kernel.errors import RulerError
from ruler.kernel.user_cache import user_cache_root


def punkt_tokenizer(english_dir: Path):
    """Punkt with the pinned English parameters, read from our resolved (hash-checked) files.

    Reading the four files ourselves avoids mutating `nltk.data.path` and nltk's download
    bootstrap; the parameters are the same ones `sent_tokenize` loads.
    """
    from nltk.tabdata import PunktDecoder
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    dec, params = PunktDecoder(), PunktParameters()
    english_dir = Path(english_dir)
    with open(english_dir / "collocations.tab", encoding="utf-8") as f:
        params.collocations = set(dec.tab2tups(f))
    with open(english_dir / "sent_starters.txt", encoding="utf-8") as f:
        params.sent_starters = dec.txt2set(f)
    with open(english_dir / "abbrev_types.txt", encoding="utf-8") as f:
        params.abbrev_types = dec.txt2set(f)
    with open(english_dir / "ortho_context.tab", encoding="utf-8") as f:
        params.ortho_context = dec.tab2intdict(f)
    return PunktSentenceTokenizer(params)


@dataclass(frozen=True)
class EssayCorpus:
    """The corpus as an endless space-joined word stream with punkt sentence boundaries.

    Boundaries come from one punkt pass over two copies of the corpus: the first copy gives
    the boundaries before the first seam, the second copy (whose context is a previous copy,
    like every later repetition) gives the boundaries of every later copy.
    """

    words: tuple[str, ...]
    text2: str  # " ".join(words + words)
    word_ends: tuple[int, ...]  # char offset just after each word, within one copy
    first_ends: tuple[int, ...]  # sentence ends in copy 0 (offsets < period)
    later_ends: tuple[int, ...]  # sentence ends of any later copy, relative to its start

    @property
    def period(self) -> int:
        """Characters per corpus copy, including the joining space."""
        return (len(self.text2) + 1) // 2

    def char_end(self, num_words: int) -> int:
        copies, rest = divmod(num_words, len(self.words))
        if rest == 0:
            return copies * self.period - 1
        return copies * self.period + self.word_ends[rest - 1]

    def repeated_chars(self, num_words: int) -> int:
        """Characters of the first `num_words` words that repeat the corpus (past its first
        copy): upstream repeats the corpus when a haystack needs more words than it has."""
        return max(0, self.char_end(num_words) - self.period)

    def _slice(self, a: int, b: int) -> str:
        shift = (a // self.period) * self.period
        return self.text2[a - shift:b - shift]

    def _boundaries(self, end: int):
        yield from self.first_ends[:bisect.bisect_right(self.first_ends, end)]
        k = 1
        while k * self.period <= end:
            base = k * self.period
            for rel in self.later_ends:
                if base + rel > end:
                    return
                yield base + rel
            k += 1

    def prefix_sentences_spaced(self, num_words: int) -> tuple[list[str], list[str]]:
        """`sent_tokenize(" ".join(first num_words words).strip())`, from the precomputed
        split, and " " + each of them.

        The complete sentences are shared string objects from a cache that grows with the
        longest prefix asked for, so the pieces of every draft hash once (builder.counting);
        only the truncated last sentence is new.
        """
        end = self.char_end(num_words)
        cache = self._sentence_cache
        while cache.covered < end:
            self._extend(cache)
        k = bisect.bisect_right(cache.bounds, end)
        n = cache.nonempty_before[k]
        sentences, spaced = cache.sentences[:n], cache.spaced[:n]
        tail = self._slice(cache.bounds[k - 1] if k else 0, end).strip()
        if tail:
            sentences.append(tail)
            spaced.append(" " + tail)
        return sentences, spaced

    @cached_property
    def _sentence_cache(self) -> "_SentenceCache":
        return _SentenceCache()

    def _extend(self, cache: "_SentenceCache") -> None:
        """Add the sentences of the next corpus copy to the cache."""
        start = cache.covered
        prev = cache.bounds[-1] if cache.bounds else 0
        for b in self._boundaries(start + self.period):
            if b <= start and cache.bounds:
                continue
            s = self._slice(prev, b).strip()
            cache.bounds.append(b)
            if s:
                cache.sentences.append(s)
                cache.spaced.append(" " + s)
            cache.nonempty_before.append(len(cache.sentences))
            prev = b
        cache.covered = start + self.period

    def prefix_text(self, num_words: int) -> str:
        """`" ".join(first num_words words)` (for tests and checks)."""
        out, remaining = [], num_words
        while remaining > 0:
            take = min(remaining, len(self.words))
            out.append(" ".join(self.words[:take]))
            remaining -= take
        return " ".join(out)


@dataclass
class _SentenceCache:
    """Sentences of the word stream up to `covered` characters: `bounds[i]` is where sentence
    boundary i is, `nonempty_before[i]` how many non-empty sentences end at or before it."""

    covered: int = 0
    bounds: list[int] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    spaced: list[str] = field(default_factory=list)
    nonempty_before: list[int] = field(default_factory=lambda: [0])


def load_essay_words(path: Path) -> list[str]:
    try:
        text = json.loads(Path(path).read_text(encoding="utf-8"))["text"]
    except (ValueError, KeyError, TypeError) as e:
        raise RulerError(f"{path} is not RULER's essay corpus ({{\"text\": ...}}): {e}") from None
    if not isinstance(text, str) or not text.strip():
        raise RulerError(f"{path}: the essay corpus has no text")
    return re.sub(r"\s+", " ", text).split(" ")


def _sentence_ends(punkt, text: str) -> list[int]:
    """Punkt over the whole (trusted, hash-pinned) corpus in one pass.

    nltk >= 3.10 bounds every regex iteration by a wall-clock limit (5 s) as a ReDoS guard;
    one pass over 6 MB of text can exceed it on a loaded machine, so the limit is lifted for
    this call only.
    """
    try:
        from nltk import redos
    except ImportError:  # nltk < 3.10 has no guard
        return [b for _, b in punkt.span_tokenize(text)]
    saved = redos.DEFAULT_TIMEOUT
    redos.DEFAULT_TIMEOUT = None
    try:
        return [b for _, b in punkt.span_tokenize(text)]
    finally:
        redos.DEFAULT_TIMEOUT = saved


#: Bump when the split below changes: the cached splits of earlier versions are then unused.
SPLIT_VERSION = 1


def _cached_sentence_ends(key: str, text: str, split: Callable[[], list[int]]) -> list[int]:
    """`split()`, kept in the user cache under `key` (the inputs' sha256s, nltk's version and
    SPLIT_VERSION): every process that builds needs the split (a build's spawned workers, a
    test session's), and punkt takes seconds over the corpus; reading it back takes
    milliseconds. A cached split that is not a valid one for `text` is split anew; a cache that
    cannot be written only costs the time."""
    path = user_cache_root() / "essay-splits" / f"{key}.json"
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cached = None
    if (isinstance(cached, list) and all(type(b) is int for b in cached)
            and all(0 < a < b for a, b in zip(cached, cached[1:]))
            and (not cached or 0 < cached[0] and cached[-1] <= len(text))):
        return cached
    ends = split()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(ends, f)
        os.replace(tmp, path)
    return ends


def build_corpus(essay_json: Path, punkt_english_dir: Path,
                 cache_key: str | None = None) -> EssayCorpus:
    """The corpus and its sentence ends; with `cache_key` (a digest of everything the split
    depends on) the punkt split is read from and kept in the user cache."""
    words = load_essay_words(essay_json)
    single = " ".join(words)
    period = len(single) + 1
    ends = [end - 1 for end in itertools.accumulate(len(w) + 1 for w in words)]
    text = single + " " + single

    def split() -> list[int]:
        return _sentence_ends(punkt_tokenizer(punkt_english_dir), text)

    sent_ends = split() if cache_key is None else _cached_sentence_ends(cache_key, text, split)
    first = tuple(b for b in sent_ends if b < period)
    seam = (period - 1,) if (period - 1) in first else ()
    later = tuple(sorted({b - period for b in sent_ends if period <= b < 2 * period - 1}
                         | set(seam)))
    return EssayCorpus(tuple(words), text, tuple(ends), first, later)


def shared_corpus(essays: ResolvedSource, punkt: ResolvedSource) -> EssayCorpus:
    """The corpus of these (hash-checked) files, split by punkt once per process.

    The split takes seconds and every build context needs it (a notebook or a test session
    builds many); keyed by the files' sha256, so other content is split anew. Each caller gets
    its own instance: the sentence cache an instance grows is not shared between builds.
    """
    return dataclasses.replace(_split_corpus(str(essays.path), essays.sha256,
                                             str(punkt.path), punkt.sha256))


@functools.lru_cache(maxsize=2)
def _split_corpus(essay_json: str, essay_sha256: str, punkt_dir: str,
                  punkt_sha256: str) -> EssayCorpus:
    from importlib.metadata import version

    key = hashlib.sha256(f"split {SPLIT_VERSION}, essays {essay_sha256}, punkt {punkt_sha256}, "
                         f"nltk {version('nltk')}".encode()).hexdigest()[:32]
    return build_corpus(Path(essay_json), Path(punkt_dir), cache_key=key)
