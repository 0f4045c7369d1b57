"""What a task generator is: a pure function from (sample rng, haystack size) to a draft.

The fitter (builder.fitting) searches the size; the generator only builds text. A generator
must be deterministic in (index, a fresh rng from the same seed, size): the fitter calls
`draft` several times per sample with fresh, identically seeded RNGs, and the result at the
chosen size is the sample. Draw everything that does not depend on size (keys, values,
questions) before anything that does, so the content is stable across sizes.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, Sequence

from ruler.catalog.depths import DepthBin
from ruler.catalog.family import get_family
from ruler.catalog.length_rules import counted_output
from ruler.catalog.tasks import TaskSpec

if TYPE_CHECKING:
    from ruler.catalog.context import BuildContext
    from ruler.catalog.tally import Tally


@dataclass(frozen=True)
class Draft:
    """One candidate sample at a given haystack size (before the length is measured)."""

    input: str
    answer_prefix: str
    outputs: tuple[str, ...]
    gold_spans: tuple[tuple[int, int], ...]  # character spans in `input` of the gold items
    context_span: tuple[int, int]  # character span in `input` of the haystack / context
    size: int
    # `input` cut at clean junctions ("".join(pieces) == input), for builder.counting; empty
    # when a draft is only ever counted whole.
    pieces: tuple[str, ...] = ()
    # Cuts a piece further at clean junctions, for counting a piece not seen before from
    # sub-pieces that recur (a needle line from its key's words and its value's digit
    # groups); None when pieces are counted as they are.
    refine: Callable[[str], tuple[str, ...]] | None = None
    # Characters of the context that repeat text of a source already in it: a task whose
    # source runs out before L repeats it, as upstream does (SQuAD's paragraphs, the essays).
    repeated_chars: int = 0


def template_ends(template: str, **fields: object) -> tuple[str, str]:
    """The text before and after a template's {context}, with the other fields filled in."""
    head, tail = template.split("{context}")
    return head.format(**fields), tail.format(**fields)


def joined(head: str, units: Sequence[str], sep: str, tail: str, clean: bool = False,
           opened: Sequence[str] | None = None) -> tuple[str, tuple[str, ...]]:
    """`head + sep.join(units) + tail`, and the same text cut into pieces at the joins.

    A space separator opens the next piece (" word"); a newline separator closes the previous
    one ("line\\n" | "next"). A join is cut only where it is a clean junction (see
    builder.counting): the units on both sides of a space are non-empty and do not touch it
    with whitespace, the unit after a newline starts with a non-space character; elsewhere the
    unit is glued to the piece before it. `clean=True` promises every unit starts and ends
    with a non-space character, or, with a space separator, is empty and not next to another
    empty unit (a needle at depth 0 leaves an empty run of sentences), skipping the per-unit
    checks; with it, `opened` may give `sep + unit` for units[1:] ready-made (shared strings
    hash once).
    """
    if sep.startswith(" "):
        opens = True
    elif sep.endswith("\n"):
        opens = False
    else:
        raise ValueError(f"no clean junction for separator {sep!r}")
    if len(units) < 2:
        text = head + sep.join(units) + tail
        return text, (text,)
    if clean and opens:
        rest = list(opened) if opened is not None else [sep + u for u in units[1:]]
        pieces = [head + units[0], *rest]
        if "" in units:
            _glue_empty_units(pieces, units)
    elif clean:
        pieces = [head + units[0] + sep, *[u + sep for u in units[1:-1]], units[-1]]
    else:
        pieces = [head + units[0]]
        for prev, u in zip(units, units[1:]):
            starts_clean = bool(u) and not u[0].isspace()
            if opens and starts_clean and prev and not prev[-1].isspace():
                pieces.append(sep + u)
            elif not opens and starts_clean:
                pieces[-1] += sep
                pieces.append(u)
            else:
                pieces[-1] += sep + u
    end_with_tail(pieces, tail)
    return "".join(pieces), tuple(pieces)


def end_with_tail(pieces: list[str], tail: str) -> None:
    """Append the template's tail: its leading newlines close the last piece and the rest is
    a piece of its own ("...again.\\n" | "What is ..."), a clean junction; a tail that opens
    with a space before a non-space character after a non-space one is a piece of its own as
    a word is (" nerve" | " </List>..."). The last unit is then counted (and cached) like the
    others, and where the frame a counter tokenizes can end with the tail alone
    (builder.counting), it is the same for every size of a sample."""
    pieces[-1:] = tail_pieces(pieces[-1], tail)


def tail_pieces(last: str, tail: str) -> tuple[str, ...]:
    """The pieces `end_with_tail` makes of a draft's last piece and the template's tail."""
    rest = tail.lstrip("\n")
    if rest != tail and rest and not rest[0].isspace():
        return last + tail[:len(tail) - len(rest)], rest
    if tail[:1] == " " and tail[1:2].strip() and last[-1:].strip():
        return last, tail
    return (last + tail,)


def _glue_empty_units(pieces: list[str], units: Sequence[str]) -> None:
    """Merge, in place, the pieces around each empty unit of a space-joined list (piece k
    holds unit k): the spaces on both sides of an empty unit are not clean junctions, so
    the unit before, the empty unit and the unit after form one piece, as the per-unit path
    of `joined` cuts them. From the end, so earlier indices stay valid."""
    for i in reversed([i for i, unit in enumerate(units) if not unit]):
        first = max(i - 1, 0)
        pieces[first:i + 2] = ["".join(pieces[first:i + 2])]


class TaskGenerator(ABC):
    """Base class of the five generator families.

    Attributes:
        unit: what `size` counts (for messages and the card), e.g. "essay words".
    """

    unit: ClassVar[str] = "units"
    #: When the inputs run out (`max_size`) before L is filled: False (the default) refuses
    #: the length; True keeps the row with every unit, shorter than L, as an upstream that
    #: stops there does ("run out of vocabs").
    short_at_bound: ClassVar[bool] = False
    #: The share of L below which a sample fitted with whole units is topped up with the
    #: start of the next unit (`next_unit_parts`, `draft_part`); None (the default): whole
    #: units only. For units so long that the last one left out costs a visible share of L
    #: (book sentences at 4K-8K), where rows that fill L keep their whole units.
    top_up_below: ClassVar[float | None] = None

    def __init__(self, spec: TaskSpec, ctx: "BuildContext", max_seq_length: int):
        self.spec = spec
        self.ctx = ctx
        self.max_seq_length = max_seq_length

    @property
    def calibration_step(self) -> int:
        """A size increment large enough to measure tokens per unit (upstream's
        `incremental`): a class attribute or a property of the length, in a subclass."""
        return 10

    @property
    def min_size(self) -> int:
        """The smallest haystack a sample may have."""
        return 1

    @property
    def max_size(self) -> int | None:
        """The largest haystack the inputs allow (None: unbounded)."""
        return None

    def check_samples(self, num_samples: int) -> None:  # noqa: B027 (a hook: no limit by default)
        """Raise RulerError if the sources cannot supply `num_samples` samples."""

    def depth_bin(self, index: int) -> DepthBin | None:
        """The bin sample `index`'s gold items go in, as the build's variant says (a
        depth-swept build); None where upstream's placement applies."""
        if not get_family(self.spec.family.name).sweepable:
            return None
        return self.ctx.variant.depth_bin(index)

    @property
    def tokens_to_generate(self) -> int:
        """The tokens a row reserves for the answer, as the build's variant says (upstream's
        per-task budget by default)."""
        return self.ctx.variant.tokens_to_generate(self.spec)

    @property
    def count_scope(self) -> str:
        """The piece-count cache this generator's drafts use (builder.counting scopes): its
        task's own by default, so one task's one-off pieces never evict another's; tasks that
        draw the same texts (one source's documents) may share one."""
        return self.spec.name

    @property
    def reserved_tokens(self) -> int:
        """The tokens a row's `length` counts on top of its prompt (by the build's length
        rule, `BuildContext.length_rule`)."""
        return counted_output(self.ctx.length_rule, self.tokens_to_generate)

    @abstractmethod
    def draft(self, index: int, rng: random.Random, size: int) -> Draft:
        """Build sample `index` with a haystack of `size` units, drawing only from `rng`."""

    def tally(self, index: int, rng: random.Random, size: int) -> "Tally | None":
        """The pieces of `draft(index, rng, size)` without its text (catalog.tally),
        for a generator that can say them for less than the draft costs; None (the default):
        the fitter counts the draft."""
        return None

    def next_unit_parts(self, index: int, size: int) -> int:
        """How many parts (words; characters where words are not spaced) the unit after
        `size` units has, for a top-up (`top_up_below`); 0: none to take."""
        return 0

    def draft_part(self, index: int, rng: random.Random, size: int, parts: int) -> Draft:
        """Sample `index` with `size` whole units and the first `parts` parts of the next,
        drawing from `rng` exactly as `draft` does (the same keys, values and depths)."""
        raise NotImplementedError(f"{type(self).__name__} tops up no unit")
