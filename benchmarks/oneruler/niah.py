"""ONERULER's needle tasks (niah_single, niah_none, niah_multikey, niah_multivalue,
niah_multiquery) in one language, or cross-lingually (context in one, instructions in another).

Upstream (`synthetic/niah.py`, notes/oneruler.md §3, §5), per sample:
1. k keys drawn from the context language's translated nouns (the 100, or 95 cross-lingually);
2. per key, v values `randint(1_000_000, 9_999_999)`; each needle is the context language's
   `needle_numbers` with key and value, right-stripped, plus its full stop;
3. the needles shuffled by a fresh `Random(seed)` (one fixed permutation per needle count);
4. one depth per needle from the 40-point grid round(linspace(0, 100, 40)), without
   replacement; needle j goes after sentence int(n * depth / 100) of the n haystack sentences,
   the depths sorted (so in the shuffled order);
5. q of the k keys asked; the answer lists their values, key by key, in drawing order;
   niah_none asks a noun that is no needle's key, and the answer is the instruction
   language's none-word.
The haystack is the book's first n sentences (cycling through the book when it is shorter),
joined with the needles by "" for a zh or ja context and " " otherwise; the prompt is the
instruction language's `task`, then `question_{single|multi}_numbers`, `please_list`,
`if_no_numbers` (joined by "" or " " as the context language's sentences are), then
`answer_prefix`, `answer_numbers` (joined the same way), formatted with the context and the
query key(s); cross-lingually the query is the key's translation (the first noun-list row
whose context entry it is).

Differences (the card's "Differences from upstream", `differences`): n is the most
sentences with which the whole prompt, as the model reads it, plus the 30 answer tokens fits
L (upstream sizes the book text alone to L); every draw comes from the sample's own seed;
sentences come from sentencex (upstream: stanza), a segment over its language's limit cut
where its sentences end (`oneruler_sentences`); no two needles share a key string (nor,
cross-lingually, a query translation), and the values of one sample are distinct.
"""

from __future__ import annotations

import random
import re
from functools import cached_property, lru_cache
from typing import Mapping, cast

from ruler.benchmarks.oneruler.data import OnerulerData
from ruler.benchmarks.oneruler.languages import OnerulerLanguage, full_stop, joiner
from ruler.benchmarks.oneruler.resources import (
    book_sentences,
    data,
    language_of,
    noun_keys,
    prompt_parts,
    translations,
)
from ruler.benchmarks.oneruler.tasks import ONERULER_NIAH
from ruler.benchmarks.ruler2.items import aimed_step
from ruler.catalog.base import Draft, TaskGenerator, joined, tail_pieces, template_ends
from ruler.catalog.depths import DEPTHS
from ruler.catalog.family import TaskFamily
from ruler.catalog.letter_junction import cut_units
from ruler.catalog.sampling import draw_unique
from ruler.catalog.tally import Gather, Tally
from ruler.catalog.tasks import TaskSpec
from ruler.kernel.rng import below


def niah_template(parts: Mapping[str, str], context_language: str, queries: int) -> str:
    """Upstream's template: `task` + question + answer, the question and answer parts joined
    by "" when the context language is zh or ja, else by " " (the instruction language's
    parts; the joining rule is keyed on the context language, as upstream keys it)."""
    sep = joiner(context_language)
    kind = "single" if queries == 1 else "multi"
    question = sep.join((parts[f"question_{kind}_numbers"], parts["please_list"],
                         parts["if_no_numbers"]))
    answer = sep.join((parts["answer_prefix"], parts["answer_numbers"]))
    return parts["task"] + question + answer


def needle_text(parts: Mapping[str, str], context_language: str, key: str, value: str) -> str:
    """`add_period(needle_numbers.format(key=..., value=...))`."""
    return parts["needle_numbers"].format(key=key, value=value).rstrip() + \
        full_stop(context_language)


def value_of(rng: random.Random) -> str:
    """`random.randint(1_000_000, 9_999_999)`, the same draw (`rng.below`)."""
    return str(1_000_000 + below(rng, 9_000_000))


class OnerulerNiahGenerator(TaskGenerator):
    unit = "book sentences"
    # A row whose whole sentences leave it under 0.99 of L (the sentence after them is long
    # beside L: 100-800 tokens at 4K-8K) takes the words of that sentence that still fit.
    top_up_below = 0.99

    def __init__(self, spec: TaskSpec, ctx, max_seq_length: int):
        super().__init__(spec, ctx, max_seq_length)
        p = spec.params
        if (p["type_haystack"], p["type_needle_k"], p["type_needle_v"]) != \
                ("book", "words", "numbers"):
            raise ValueError(f"task {spec.name}: ONERULER's needle tasks have a book haystack, "
                             f"word keys and number values")
        self.num_k, self.num_v, self.num_q = p["num_needle_k"], p["num_needle_v"], p["num_needle_q"]
        self.relevant = bool(p["relevant_needle"])
        self.language: OnerulerLanguage = language_of(ctx)
        lang = self.language
        self.keys = noun_keys(ctx, lang)
        self.translate = translations(ctx, lang)  # identity for one language
        self.sentences = book_sentences(ctx, lang.context)
        self.context_parts = prompt_parts(ctx, lang.context)
        self.parts = prompt_parts(ctx, lang.instructions)
        self.sep = joiner(lang.context)
        self.template = niah_template(self.parts, lang.context, self.num_q)

    @property
    def calibration_step(self) -> int:
        return aimed_step(self.max_seq_length, 40, 25)  # a book sentence is some 20-60 tokens

    @cached_property
    def _needle_order(self) -> list[int]:
        """Upstream's `random.Random(random_seed).shuffle(needles)`: the same permutation of
        the k * v needles in every sample."""
        order = list(range(self.num_k * self.num_v))
        random.Random(self.ctx.seed).shuffle(order)
        return order

    def _draw_keys(self, rng: random.Random) -> list[str]:
        """k nouns drawn by position (upstream: `random.sample(words, k)`), a position whose
        string, or query translation, another key already has drawn again."""
        keys: list[str] = []
        asked: set[str] = set()
        while len(keys) < self.num_k:
            key = self.keys[below(rng, len(self.keys))]
            if key not in keys and self.translate[key] not in asked:
                keys.append(key)
                asked.add(self.translate[key])
        return keys

    def _absent_key(self, rng: random.Random, keys: list[str]) -> str:
        """niah_none's query: `random.choice(words)` until it is none of the needles' keys
        (nor, cross-lingually, asks what one of them asks)."""
        asked = {self.translate[k] for k in keys}
        while True:
            word = self.keys[below(rng, len(self.keys))]
            if word not in keys and self.translate[word] not in asked:
                return word

    def draft(self, index: int, rng: random.Random, size: int) -> Draft:
        return self._draft(rng, size, None)

    def next_unit_parts(self, index: int, size: int) -> int:
        return len(self._parts_of(self._sentences(size, size + 1)[0]))

    def draft_part(self, index: int, rng: random.Random, size: int, parts: int) -> Draft:
        words = self._parts_of(self._sentences(size, size + 1)[0])
        return self._draft(rng, size, (" " if self.sep else "").join(words[:parts]))

    def _parts_of(self, sentence: str) -> list[str]:
        """A sentence's words (book text is one space between words, `book_sentences`), or
        its characters in a language written without spaces (zh, ja)."""
        return sentence.split(" ") if self.sep else list(sentence)

    def _draws(self, rng: random.Random
               ) -> tuple[list[tuple[str, str]], list[int], list[str], tuple[str, ...], set]:
        """A sample's draws, in order: the needles (key, value) as placed, their depths, the
        queries (as asked), the answer and the asked keys."""
        keys = self._draw_keys(rng)
        values = draw_unique(rng, self.num_k * self.num_v, value_of)
        by_key = [values[i * self.num_v:(i + 1) * self.num_v] for i in range(self.num_k)]
        drawn = [(k, v) for k, vs in zip(keys, by_key) for v in vs]
        placed = [drawn[i] for i in self._needle_order]
        depths = rng.sample(DEPTHS, len(placed))
        chosen = rng.sample(range(self.num_k), self.num_q)
        if self.relevant:
            queries = [keys[i] for i in chosen]
            outputs = tuple(v for i in chosen for v in by_key[i])
        else:
            queries = [self._absent_key(rng, keys)]
            outputs = (self.parts["none"],)
        asked_keys = set(queries) if self.relevant else set()
        return placed, depths, [self.translate[q] for q in queries], outputs, asked_keys

    def _draft(self, rng: random.Random, size: int, part: str | None) -> Draft:
        """The sample with `size` whole sentences and, when `part` is given, the start of the
        next one after them: a haystack sentence of its own for the needles' positions."""
        placed, depths, queries, outputs, asked_keys = self._draws(rng)
        hay = size + (part is not None)  # haystack sentences, a part counted as one
        cuts = sorted(int(hay * d / 100) for d in depths)
        units: list[str] = []
        gold: list[int] = []  # unit indices of the asked keys' needles
        prev = 0
        for cut, (key, value) in zip(cuts, placed):
            units.extend(self._haystack(prev, cut, size, part) or [""])
            if key in asked_keys:
                gold.append(len(units))
            units.append(needle_text(self.context_parts, self.language.context, key, value))
            prev = cut
        units.extend(self._haystack(prev, hay, size, part) or [""])

        fields = {f"query{i + 1}": q for i, q in enumerate(queries)}
        head, tail = template_ends(self.template, **fields)
        if self.sep:
            # `joined`'s clean cut where its promise holds (the same pieces, without its
            # per-unit checks): stripped sentences and needles, empty units only between
            # needles or at the ends (needles are never empty, so never two in a row)
            clean = self._clean_sentences and all(
                _stripped(needle_text(self.context_parts, self.language.context, k, v))
                for k, v in placed) and (part is None or _stripped(part))
            text, pieces = joined(head, units, self.sep, tail, clean=clean)
        else:  # zh, ja: no space; cut where a letter meets punctuation, if the tokenizer may
            text = head + "".join(units) + tail
            pieces = self._letter_pieces(head, units, tail)
        # where the asked needles start (the units before them, each with its separator)
        starts = {i: len(head) + sum(map(len, units[:i])) + i * len(self.sep) for i in gold}
        book = len(self.sentences)
        repeated = sum(len(self.sentences[i % book]) + len(self.sep)
                       for i in range(book, size))
        if part is not None and size >= book:
            repeated += len(part) + len(self.sep)
        return Draft(input=text, answer_prefix="", outputs=outputs,
                     gold_spans=tuple((starts[i], starts[i] + len(units[i])) for i in gold),
                     context_span=(len(head), len(text) - len(tail)), size=size,
                     pieces=pieces, repeated_chars=repeated)

    def _letter_pieces(self, head: str, units: list[str], tail: str) -> tuple[str, ...]:
        """An unspaced draft's pieces: each unit cut at its last letter junction (before its
        closing punctuation: "...说" | "。"), where the tokenizer is proven additive there
        (catalog.letter_junction), the template's tail after its newline a piece of its own;
        () where it is not (counted whole)."""
        if not self.ctx.tokenizer.letter_junctions:
            return ()
        pieces = cut_units(head, units, "")
        pieces[-1:] = tail_pieces(pieces[-1], tail)
        return tuple(pieces)

    def tally(self, index: int, rng: random.Random, size: int) -> Tally | None:
        """`draft`'s pieces (`joined`'s clean cut) without its text: the runs of whole
        sentences between the needles as positions in the book's sentences with their
        space (`_opened`), the needles and the pieces an empty run glues (a needle at depth
        0, two sharing a cut) as they are, the first two and the last with the template's
        ends. None where sentences are not spaced or not clean (drafted instead)."""
        if not self.sep or not self._clean_sentences:
            return None
        placed, depths, queries, _, _ = self._draws(rng)
        needles = [needle_text(self.context_parts, self.language.context, k, v)
                   for k, v in placed]
        if not all(map(_stripped, needles)):
            return None
        head, tail = template_ends(self.template, **{f"query{i + 1}": q
                                                     for i, q in enumerate(queries)})
        bounds = [0, *sorted(int(size * d / 100) for d in depths), size]
        # the draft's units: a run of sentences (start, end) or "" where it is empty, then a
        # needle, ..., then the last run
        units: list[tuple[int, int] | str] = []
        for j, needle in enumerate(needles):
            units += [(bounds[j], bounds[j + 1]) if bounds[j + 1] > bounds[j] else "", needle]
        units.append((bounds[-2], size) if size > bounds[-2] else "")
        # its pieces: text, or (start, end) for " " + each sentence of a run
        out: list[str | tuple[int, int]] = []
        glue = False  # an empty unit's piece joins the next one (always a needle)
        for i, unit in enumerate(units):
            if unit == "":
                piece = head if i == 0 else " "
                if out:
                    out[-1] = cast(str, out[-1]) + piece  # a needle's piece
                else:
                    out.append(piece)
                glue = True
                continue
            if isinstance(unit, str):
                piece = (head if i == 0 else " ") + unit
                if glue:
                    out[-1] = cast(str, out[-1]) + piece
                else:
                    out.append(piece)
            else:
                start, end = unit
                if i == 0:
                    out.append(head + self._sentence(start))
                    start += 1
                if end > start:
                    out.append((start, end))
            glue = False
        first, second = self._explicit(out, 0), self._explicit(out, 1)
        last = self._explicit(out, len(out) - 1, last=True) if len(out) > 2 else ""
        if len(out) < 4:  # no middle: the counter tokenizes such a draft whole
            return None
        middle: list = []
        literal: list[str] = []
        for item in out[2:-1]:
            if isinstance(item, str):
                literal.append(item)
            else:
                middle.extend(self._gathers(*item))
        if literal:
            middle.append(tuple(literal))
        return Tally(first=(first, second), middle=tuple(middle),
                     last=tail_pieces(last, tail), answer_prefix="")

    def _sentence(self, i: int) -> str:
        return self.sentences[i % len(self.sentences)]

    def _explicit(self, out: list, k: int, last: bool = False) -> str:
        """Piece `k` of `out` as text: a run there gives up its first sentence to it (its
        last, for the `last` piece)."""
        item = out[k]
        if isinstance(item, str):
            return item
        start, end = item
        if last:
            out[k:] = ([(start, end - 1)] if end - 1 > start else []) + \
                [" " + self._sentence(end - 1)]
            return cast(str, out[-1])
        out[k:k + 1] = [" " + self._sentence(start)] + \
            ([(start + 1, end)] if end > start + 1 else [])
        return cast(str, out[k])

    def _gathers(self, start: int, end: int) -> list[Gather]:
        """Haystack sentences start..end-1 (the book repeated) as positions in `_opened`."""
        book, runs = len(self.sentences), []
        while start < end:
            at = start % book
            n = min(end - start, book - at)
            runs.append(Gather(self._opened, slice(at, at + n)))
            start += n
        return runs

    @cached_property
    def _opened(self) -> list[str]:
        """" " + each book sentence: the pieces of every tally share these strings."""
        return [" " + s for s in self.sentences]

    @cached_property
    def _clean_sentences(self) -> bool:
        """Whether every book sentence is non-empty and starts and ends with a non-space
        character (a unit `joined` may cut cleanly without checking it)."""
        return all(map(_stripped, self.sentences))

    def _haystack(self, start: int, end: int, size: int, part: str | None) -> list[str]:
        """Haystack sentences start..end-1: the book's, sentence `size` being `part` (the
        start of the book's next sentence) where one is given."""
        if part is None or end <= size:
            return self._sentences(start, end)
        return self._sentences(start, size) + [part] if start <= size else []

    def _sentences(self, start: int, end: int) -> list[str]:
        """Haystack sentences start..end-1 of the book repeated as often as needed
        (`expand_haystack`)."""
        book = self.sentences
        if end <= len(book):
            return list(book[start:end])
        return [book[i % len(book)] for i in range(start, end)]


def _stripped(unit: str) -> bool:
    """Non-empty, with no space at either end."""
    return bool(unit) and not unit[0].isspace() and not unit[-1].isspace()


# --- checks ------------------------------------------------------------------------------------

@lru_cache(maxsize=256)
def _pattern(template: str, **groups: str) -> str:
    """A template as a regular expression: literal text, each `{name}` the group given."""
    out, pos = [], 0
    for m in re.finditer(r"\{(\w+)\}", template):
        out.append(re.escape(template[pos:m.start()]))
        out.append(groups.get(m.group(1), r".*?"))
        pos = m.end()
    return "".join(out) + re.escape(template[pos:])


def _parse(row: Mapping, found: tuple[OnerulerLanguage, OnerulerData] | str | None = None
           ) -> tuple[OnerulerLanguage, str, list[str], list[tuple[str, str, int]],
                      tuple[int, int]] | str:
    """(language, none-word, asked keys in the context language, needles (key, value,
    offset) in the context, the context's span) of a row, re-derived from its input with the
    language's prompt files (`found`: the row's language and data folder; by default those
    its config names, found as builds find sources), or why they cannot be."""
    from ruler.benchmarks.oneruler.resources import check_resources

    if found is None:
        found = check_resources(row)
    if isinstance(found, str):
        return found
    lang, data = found
    parts, ctx_parts = data.niah_parts(lang.instructions), data.niah_parts(lang.context)
    queries = 2 if row["task"] == "or_niah_multiquery" else 1
    template = niah_template(parts, lang.context, queries)
    q = _alternatives(data.nouns.keys(lang.instructions))
    m = re.fullmatch(_pattern(template, context=r"(.*)", query1=q, query2=q), row["input"],
                     re.S)
    if m is None:
        return "the input is not the language's template"
    context_start = m.start(1)
    asked = list(m.groups()[1:])
    back: dict[str, list[str]] = {}
    if lang.cross_lingual:  # the query is a translation: the context keys it stands for
        for key, asked_as in data.nouns.translations(lang.context, lang.instructions).items():
            back.setdefault(asked_as, []).append(key)
    keys = [k for a in asked for k in back.get(a, [a])]
    nouns = _alternatives(data.nouns.keys(lang.context))
    needle = re.compile(_pattern(ctx_parts["needle_numbers"].rstrip(), key=nouns,
                                 value=r"([0-9]{7})") + re.escape(full_stop(lang.context)))
    needles = [(n.group(1), n.group(2), n.start())
               for n in needle.finditer(row["input"], context_start, m.end(1))]
    return lang, parts["none"], keys, needles, (context_start, m.end(1))


@lru_cache(maxsize=64)
def _alternatives(words: tuple[str, ...]) -> str:
    """A group matching exactly one of `words` (the longest first), never text around them
    (a book's own quotes and colons). Cached: every built row's check asks it."""
    return "(" + "|".join(map(re.escape, sorted(set(words), key=len, reverse=True))) + ")"


def check_row(row: Mapping, resources: tuple[OnerulerLanguage, OnerulerData] | None = None
              ) -> str | None:
    """The asked keys' needles in the input hold exactly `outputs` (niah_none: no needle has
    the asked key, and the answer is the instruction language's none-word). `resources`: the
    row's language and data folder (default: found from its config, `_parse`)."""
    parsed = _parse(row, resources)
    if isinstance(parsed, str):
        return parsed
    lang, none, keys, needles, _ = parsed
    found = [value for key, value, _ in needles if key in keys]
    if row["task"] == "or_niah_none":
        if found:
            return f"a needle has the asked key ({found})"
        return None if list(row["outputs"]) == [none] else \
            f"outputs {list(row['outputs'])}, expected [{none!r}]"
    if sorted(found) != sorted(row["outputs"]):
        return f"needles for {keys} hold {found}, outputs are {list(row['outputs'])}"
    return None


def gold_spans(row: Mapping, generator=None):
    """Where the asked keys' needles start, and the context's span."""
    parsed = _parse(row)
    if isinstance(parsed, str):
        return parsed
    _, _, keys, needles, span = parsed
    if row["task"] == "or_niah_none":
        return [], span
    return [at for key, _, at in needles if key in keys], span


def check_built_row(row: Mapping, generator: OnerulerNiahGenerator) -> str | None:
    """`check_row` with the build's own language and data folder."""
    return check_row(row, (generator.language, data(generator.ctx)))


FAMILY = TaskFamily(spec=ONERULER_NIAH, generator=OnerulerNiahGenerator, check_row=check_row,
                    gold_spans=gold_spans, check_built_row=check_built_row)
