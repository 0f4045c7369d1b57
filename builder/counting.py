"""Exact prompt lengths without re-tokenizing whole prompts: token counts of pieces, summed.

The fitter measures several drafts per sample, and a 128K draft takes about a quarter of a
second to tokenize. Most of a draft is made of units that recur across probes and samples
(essay sentences, noise lines, words, documents), so a draft also carries its text cut into
`pieces` at clean junctions: a piece starts with a space before a non-space character
(" word"), right after a newline ("The grass...\\n" | "The grass..."), or inside a needle's key
or value: at an adjective-noun key's hyphen (" bright" | "-lantern"), after a number's first
three digits (" 123" | "4567."), between a UUID's runs of letters and digits; and, for
tokenizers whose pre-tokenizer ends every letter run at a non-letter, after a letter before
a non-ASCII punctuation mark or symbol ("...说" | "。他...": catalog.letter_junction, the
junction of Chinese and Japanese text; such a piece is counted after the newline anchor,
another pre-token boundary for them). At such a junction no token of the tokenizer spans
the two sides (the space, newline and letter junctions are pre-token boundaries; the others
are scanned for in every vocabulary by tests/builder/test_counting.py), so the tokens of
the whole are the tokens of the parts, and

    prompt_length(input) = prompt_length(frame) + sum(count(p) for p in pieces[2:j])

with frame = pieces[0] + pieces[1] + pieces[j:] tokenized exactly, chat template, answer
prefix and special tokens included (the frame keeps the text's own ends, so a template that
trims the user turn trims the same characters). pieces[j:] is the template's tail where it
joins pieces[1] cleanly (after a line: the probes of a sample then share one frame, counted
once), else the last unit and the tail. A middle piece is counted in context, after an
anchor ending like its real predecessor (".", ".\\n" or "x"; digits group after a newline as
after three digits), because SentencePiece adds a dummy prefix to a text's first word that it
does not add mid-text. A piece seen for the first time may be counted from finer, recurring
parts (Draft.refine: a needle line from its key's and value's parts).

Whether a tokenizer really is additive at these junctions is a property of the tokenizer, not
something to assume: tests/builder/test_counting.py proves it for every registry tokenizer on every
task, and the build certifies each task on its first sample before trusting it and spot-checks
every file (builder.pipeline), counting exactly wherever the shortcut does not hold.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import weakref
from typing import Any, Callable, Sequence, cast

import numpy as np

from ruler.catalog.base import Draft
from ruler.catalog.letter_junction import opens_after_letter
from ruler.catalog.tally import Gather, Tally
from ruler.catalog.tokenizer import Tokenizer

# A piece that starts with a space follows a non-space character, one that starts with a
# hyphen follows a letter, any other follows a newline.
_ANCHOR_BEFORE_SPACE = "."
_ANCHOR_BEFORE_HYPHEN = "x"
_ANCHOR_AFTER_NEWLINE = ".\n"
_ANCHORS = (_ANCHOR_BEFORE_SPACE, _ANCHOR_BEFORE_HYPHEN, _ANCHOR_AFTER_NEWLINE)
# Bounds on memory (an entry is ~100 B besides its key; most keys are shared corpus strings).
MAX_CACHED_PIECES = 1_000_000  # per scope (common words at 1M-2M: ~500K-750K distinct pieces)
MAX_TOTAL_PIECES = 2_000_000  # over all scopes
MAX_REFINED_PIECES = 100_000  # pieces counted from their parts (about 10 samples' lines)


def _may_follow(end: str, first: str, letters: bool = False) -> bool:
    """Whether a piece opening with `first` follows text ending with `end` through a clean
    junction of its own kind (a space, a hyphen, or a new line; with `letters`, a letter
    junction too: catalog.letter_junction)."""
    if first not in " -":  # ("" is in " -": an empty piece counts as one after a space)
        return end == "\n" or (letters and end.isalpha() and opens_after_letter(first))
    return end.isalpha() if first == "-" else end != "" and not end.isspace()


class ExactCounter:
    """Counts by tokenizing the whole prompt (the reference; used where pieces are not proven)."""

    def __init__(self, tok: Tokenizer, mode: str):
        self.tok, self.mode = tok, mode

    def scope(self, name: str) -> None:
        """Count the next drafts for `name` (a task); see PieceCounter.scope."""

    def counts_whole(self, draft: Draft) -> bool:
        """Whether this counter counts `draft` (and finds its token positions) by tokenizing
        the whole prompt, as the reference does."""
        return True

    def prompt_length(self, draft: Draft) -> int:
        return self.tok.prompt_length(draft.input, draft.answer_prefix, self.mode)

    def token_positions(self, draft: Draft, char_offsets: Sequence[int]) -> list[int]:
        """Index, in `encode(draft.input)`, of the token holding each character offset."""
        return self.tok.token_index_at(draft.input, char_offsets)


class PieceCounter(ExactCounter):
    """Counts a draft from its frame plus cached in-context counts of its middle pieces."""

    def __init__(self, tok: Tokenizer, mode: str):
        super().__init__(tok, mode)
        self._scopes: dict[str, dict[str, int]] = {}
        self._cache = self._scopes.setdefault("", {})
        self._middle_memo: dict[int, tuple[weakref.ref, list[int]]] = {}
        # (pieces[0], the frame's fixed end, answer prefix) -> the frame's tokens less those
        # of its pieces that change with the size (see prompt_length)
        self._bases: dict[tuple[str, str, str], int] = {}
        # id(table) -> (the table, its pieces' counts by position, -1 where not counted yet)
        self._tables: dict[int, tuple[Sequence[str], np.ndarray]] = {}
        self._head_counts: dict[str, int] = {}
        self._frame_starts: dict[str, list[int]] = {}
        self._anchor_len = {a: tok.count(a) for a in _ANCHORS}
        self._letters = tok.letter_junctions
        self._refined: dict[str, int] = {}  # see _refined_counts

    def counts_whole(self, draft: Draft) -> bool:
        return len(draft.pieces) < 4  # too few pieces to cut: counted as ExactCounter does

    @staticmethod
    def _anchor(piece: str) -> str:
        first = piece[:1]
        if first == " ":
            return _ANCHOR_BEFORE_SPACE
        return _ANCHOR_BEFORE_HYPHEN if first == "-" else _ANCHOR_AFTER_NEWLINE

    def scope(self, name: str) -> None:
        """Cache the pieces of the next drafts apart, under `name` (a task). Some tasks bring
        one-off pieces in every sample (random numbers, UUIDs) and would otherwise fill the
        cache and evict the words and sentences the other tasks draw again and again."""
        self._cache = self._scopes.setdefault(name, {})

    def _make_room(self, n_new: int) -> bool:
        """Evict to keep the bounds; True if the current scope was emptied."""
        cache, emptied = self._cache, False
        if len(cache) + n_new > MAX_CACHED_PIECES:
            cache.clear()  # then it holds this draft's pieces (one draft may exceed the bound)
            emptied = True
        while sum(map(len, self._scopes.values())) + n_new > MAX_TOTAL_PIECES:
            others = [c for c in self._scopes.values() if c and c is not cache]
            if not others:
                break
            max(others, key=len).clear()
        return emptied

    def piece_counts(self, pieces: Sequence[str],
                     refine: Callable[[str], tuple[str, ...]] | None = None) -> list[int]:
        """In-context token counts of middle pieces (cached; misses counted in one batch, or
        from their sub-pieces when `refine` cuts them further)."""
        if refine is not None:
            return self._refined_counts(pieces, refine)
        cache = self._cache
        counts = list(map(cache.get, pieces))  # map: a 128K draft has ~50K pieces
        if None not in counts:
            return cast("list[int]", counts)  # no None in it
        missing = list(dict.fromkeys(itertools.compress(
            pieces, map(operator.is_, counts, itertools.repeat(None)))))
        if self._make_room(len(missing)):
            missing = list(dict.fromkeys(pieces))
        new = dict(zip(missing, self._count_new(missing, refine)))
        cache.update(new)
        try:
            return list(map(cache.__getitem__, pieces))
        except KeyError:  # refining emptied the scope after `counts` were read
            return [new[p] if n is None else n for p, n in zip(pieces, counts)]

    def _refined_counts(self, pieces: Sequence[str],
                        refine: Callable[[str], tuple[str, ...]]) -> list[int]:
        """piece_counts of pieces a draft counts from their parts (needle lines): the parts
        (words, digit groups, UUID runs) recur and are cached in the scope; the pieces
        themselves are one sample's (its distractor lines, thousands at 128K, never seen again)
        and are kept apart, in a memo emptied when it grows past a few samples' worth, so the
        scope's cache stays small and fast and is never emptied by them."""
        memo = self._refined
        counts = list(map(memo.get, pieces))
        if None not in counts:
            return cast("list[int]", counts)  # no None in it
        missing = list(dict.fromkeys(itertools.compress(
            pieces, map(operator.is_, counts, itertools.repeat(None)))))
        new = dict(zip(missing, self._count_new(missing, refine)))
        if len(memo) + len(new) > MAX_REFINED_PIECES:
            memo.clear()
        memo.update(new)
        return [new[p] if n is None else n for p, n in zip(pieces, counts)]

    def _count_new(self, pieces: list[str], refine) -> list[int]:
        if refine is not None:
            parts = list(map(refine, pieces))
            sub = iter(self.piece_counts(list(itertools.chain.from_iterable(parts))))
            return [sum(itertools.islice(sub, len(ps))) for ps in parts]
        anchored = [self._anchor(p) + p for p in pieces]
        return [n - self._anchor_len[self._anchor(p)]
                for p, n in zip(pieces, self.tok.count_batch(anchored))]

    @staticmethod
    def _frame_end(pieces: Sequence[str], letters: bool = False) -> int:
        """Where the frame's end starts: the last piece that may follow pieces[1] directly
        through a junction of its own kind (the template's tail after a line, else the last
        unit and the tail), so the frame tokenizes as the text does around it."""
        end = pieces[1][-1:]
        for j in range(len(pieces) - 1, 2, -1):
            if _may_follow(end, pieces[j][:1], letters):
                return j
        return 2

    def _middle_counts(self, draft: Draft) -> list[int]:
        # The fitter measures a draft, then asks for the positions of the one it keeps. The
        # memo holds drafts weakly: at 1M tokens a draft with its pieces is tens of MB.
        entry = self._middle_memo.get(id(draft))
        if entry is not None and entry[0]() is draft:
            return entry[1]
        if len(self._middle_memo) >= 16:
            self._middle_memo.clear()
        pieces = draft.pieces
        counts = self.piece_counts(pieces[2:self._frame_end(pieces, self._letters)], draft.refine)
        self._middle_memo[id(draft)] = (weakref.ref(draft), counts)
        return counts

    def prompt_length(self, draft: Draft) -> int:
        pieces = draft.pieces
        if self.counts_whole(draft):
            return super().prompt_length(draft)
        j = self._frame_end(pieces, self._letters)
        bridged = j < len(pieces) - 1
        return self._framed(pieces[0], [pieces[1], pieces[j]] if bridged else [pieces[1]],
                            pieces[j + 1:] if bridged else pieces[j:], draft.answer_prefix,
                            sum(self._middle_counts(draft)))

    def _framed(self, first: str, varying: list[str], rest: Sequence[str],
                answer_prefix: str, middle: int) -> int:
        """The prompt's tokens: its frame, first + varying + rest, plus its middle's `middle`.

        The frame is pieces[0] + pieces[1] + pieces[j:]. Its pieces that change with the size
        probed are counted as middle pieces: pieces[1] (a shuffled list's first item) and,
        where the tail cannot follow pieces[1] directly, pieces[j], the draft's last unit
        (the bridge). The frame without them is remembered: tokenized once, with the first
        such pieces seen, then length = frame - varying' + varying + middle. They join their
        neighbours through clean junctions of their own kinds, so their tokens are their
        in-context counts whichever units they are.
        """
        n_varying = sum(self.piece_counts(varying))
        key = (first, "".join(rest), answer_prefix)
        base = self._bases.get(key)
        if base is None:
            if len(self._bases) >= 64:
                self._bases.clear()
            base = self._bases[key] = self.tok.prompt_length(
                first + "".join(varying) + key[1], answer_prefix, self.mode) - n_varying
        return base + n_varying + middle

    def tally_length(self, tally: Tally) -> int | None:
        """`prompt_length` of the draft `tally` describes (catalog.tally), from the
        tally: the same frame, and its middle summed run by run. None where the frame's end
        is not among the tally's last pieces (the draft is counted instead)."""
        last, n = tally.last, tally.size()
        if n < 4:
            return None
        end = tally.first[1][-1:]
        for k in range(len(last) - 1, -1, -1):
            if n - len(last) + k <= 2:
                return None
            if _may_follow(end, last[k][:1], self._letters):
                break
        else:
            return None
        bridged = k < len(last) - 1
        middle = sum(self.piece_counts(last[:k], tally.refine)) + sum(
            self._gathered(run, tally.refine) if isinstance(run, Gather)
            else sum(self.piece_counts(run, tally.refine)) for run in tally.middle)
        return self._framed(tally.first[0],
                            [tally.first[1], last[k]] if bridged else [tally.first[1]],
                            last[k + 1:] if bridged else last[k:], tally.answer_prefix, middle)

    def _gathered(self, run: Gather, refine) -> int:
        """The sum of a Gather's piece counts, kept by table position: each position is
        counted once (piece_counts, so the pieces are cached for token_positions too)."""
        table = run.table
        entry = self._tables.get(id(table))
        if entry is None or entry[0] is not table:
            if len(self._tables) >= 8:  # a sample's lines can be megabytes (1M tokens)
                self._tables.pop(next(iter(self._tables)))
            entry = self._tables[id(table)] = (table, np.full(len(table), -1, dtype=np.int64))
        counts = entry[1]
        if len(counts) < len(table):  # the table grew (a sample's lines)
            counts = np.concatenate([counts, np.full(len(table) - len(counts), -1, np.int64)])
            self._tables[id(table)] = (table, counts)
        picked = counts[run.ids]
        if (picked < 0).any():
            ids = np.arange(len(counts))[run.ids] if isinstance(run.ids, slice) else run.ids
            missing = np.unique(ids[picked < 0])
            counts[missing] = self.piece_counts([table[i] for i in missing.tolist()], refine)
            picked = counts[run.ids]
        return int(picked.sum())

    def token_positions(self, draft: Draft, char_offsets: Sequence[int]) -> list[int]:
        pieces = draft.pieces
        if self.counts_whole(draft):
            return super().token_positions(draft, char_offsets)
        tok = self.tok
        starts = list(itertools.accumulate(map(len, pieces[:-1]), initial=0))
        head = pieces[0] + pieces[1]
        n_head = self._recall(self._head_counts, head, lambda: tok.count(head))
        j = self._frame_end(pieces, self._letters)
        # tokens before middle piece k (k = 2 .. j - 1), then before the frame's end
        before = list(itertools.accumulate(self._middle_counts(draft), initial=n_head))
        out = []
        for c in char_offsets:
            k = bisect.bisect_right(starts, c) - 1
            if k <= 1:
                out.append(tok.token_index_at(head, [c])[0])
            elif k >= j:  # in the frame's end, measured in the frame
                frame = head + "".join(pieces[j:])
                frame_starts = self._recall(self._frame_starts, frame,
                                            lambda: tok.token_starts(frame))
                at = len(head) + c - starts[j]  # as token_index_at, from remembered starts
                local = (len(frame_starts) if at >= len(frame)
                         else max(0, bisect.bisect_right(frame_starts, at) - 1)) - n_head
                out.append(before[-1] + local)
            elif c == starts[k]:  # a piece's first character starts its first token (the
                out.append(before[k - 2])  # junction is clean: the counts add up there)
            else:
                piece, anchor = pieces[k], self._anchor(pieces[k])
                local = (tok.token_index_at(anchor + piece, [len(anchor) + c - starts[k]])[0]
                         - self._anchor_len[anchor])
                out.append(before[k - 2] + local)
        return out

    @staticmethod
    def _recall(memo: dict, key: str, compute: Callable[[], Any]) -> Any:
        """`memo[key]`, computed once (a small memo: a sample's drafts share their head and
        frame, and some benchmarks' heads are the same for every sample of a task)."""
        if key not in memo:
            if len(memo) >= 64:
                memo.clear()
            memo[key] = compute()
        return memo[key]


#: How a file's lengths were counted: recorded per file and per config in the manifest, and
#: explained by the dataset card. Any of them gives the same rows when piece counts are right;
#: they differ in how much of that is proven.
COUNTING_METHODS = {
    "whole-prompt": "every length counted by tokenizing the whole prompt (the reference)",
    "certified": "piece counts, every row checked against a whole-prompt tokenization",
    "proven": "piece counts, proven additive for this registry tokenizer by the generator's "
              "tests; each task's first sample and spot checks counted whole",
    "sampled": "piece counts checked against whole-prompt tokenization on sampled rows only "
               "(--sampled-certification): not proven for this tokenizer",
}


def counting_method(rows: int, exact_rows: int, certified_rows: int, pinned: bool) -> str:
    """The COUNTING_METHODS key of a file from its row counts and whether its tokenizer is
    a pinned registry one (whose additivity tests/builder/test_counting.py proves)."""
    if exact_rows >= rows:
        return "whole-prompt"
    if exact_rows + certified_rows >= rows:
        return "certified"
    return "proven" if pinned else "sampled"
