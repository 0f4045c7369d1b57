"""Variable tracking (vt): follow a chain of `VAR X = ...` assignments hidden in noise.

Layout (upstream `variable_tracking.py`, type_haystack noise):
- a chain is `VAR A = 12345`, `VAR B = VAR A `, ... (hop lines keep upstream's trailing
  space); its lines are inserted, in chain order, before distinct noise lines chosen at random,
  so two chain lines never touch and the last line is always noise;
- the context is the lines joined by "\\n" (then upstream's `. \\n` -> `.\\n` replace);
- a one-shot example precedes the task text: the same task with 3-letter names, sized once to
  fit 500 tokens (template + answer prefix, no chat wrapper), followed by " " + its answer
  names + "\\n", then "\\n" and the real task. Upstream builds the example once and renames its
  chain and value for every sample; here the layout (its noise-line count and the chain
  positions) is fixed per build and names and value are drawn per sample.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass
from typing import Mapping, Sequence

from ruler.benchmarks.ruler.noise import NOISE_SENTENCE
from ruler.benchmarks.ruler.tasks import VARIABLE_TRACKING
from ruler.catalog.base import Draft, TaskGenerator, joined, template_ends
from ruler.catalog.family import TaskFamily
from ruler.catalog.sampling import draw_unique
from ruler.kernel.rng import derive_seed

NAME_LEN = 5          # upstream: k=5 letters for the real chains
ICL_NAME_LEN = 3      # upstream: k=3 for the one-shot example
ICL_BUDGET = 500      # upstream sizes the example to fit 500 tokens
ICL_STEP = 5          # upstream's `incremental` for the example search
ICL_VALUE = 12345     # upstream's placeholder value of the example (used while sizing it)
# np.random.randint(10000, 99999) excludes the upper bound.
VALUE_RANGE = (10000, 99998)
# A 3-letter name "VAR" would read as the keyword (upstream's str.replace renaming could
# even rewrite every "VAR" of the example).
FORBIDDEN_NAMES = frozenset({"VAR"})


def draw_chains(rng: random.Random, num_chains: int, hops: int, name_len: int,
                forbidden: frozenset[str] = frozenset()) -> list[list[str]]:
    """`num_chains` chains of `hops` names each, every name distinct (`name_len` letters)."""
    names = draw_unique(rng, num_chains * hops,
                        lambda r: "".join(r.choices(string.ascii_uppercase, k=name_len)),
                        forbidden)
    return [names[i:i + hops] for i in range(0, len(names), hops)]


def chain_lines(names: Sequence[str], value: int) -> list[str]:
    lines = [f"VAR {names[0]} = {value}"]
    lines += [f"VAR {names[j + 1]} = VAR {names[j]} " for j in range(len(names) - 1)]
    return lines


def insert_chains(num_noise: int, chains: Sequence[Sequence[str]],
                  positions: Sequence[Sequence[int]]) -> list[str]:
    """Noise lines with each chain's lines inserted as upstream does.

    For chain c, `positions[c]` are sorted distinct indices into the list as it stands when the
    chain is inserted; line j goes to index positions[c][j] + j (before that original line).
    """
    lines = [NOISE_SENTENCE] * num_noise
    for chain, pos in zip(chains, positions):
        for j, (p, line) in enumerate(zip(pos, chain)):
            lines.insert(p + j, line)
    return lines


def render_context(lines: Sequence[str]) -> str:
    # Upstream's replace is a no-op for the noise haystack (no line ends with ". "); kept so
    # the text is produced by the same rule.
    return "\n".join(lines).replace(". \n", ".\n")


@dataclass(frozen=True)
class IclLayout:
    """The one-shot example's shape, fixed per (tokenizer, seed): noise lines and positions."""

    num_noise: int
    positions: tuple[tuple[int, ...], ...]


class VariableTrackingGenerator(TaskGenerator):
    unit = "noise lines"

    def __init__(self, spec, ctx, max_seq_length):
        super().__init__(spec, ctx, max_seq_length)
        p: Mapping = spec.params
        if p.get("type_haystack", "noise") != "noise":
            raise NotImplementedError("only the noise haystack (the standard vt) is built")
        self.num_chains = int(p["num_chains"])
        self.num_hops = int(p["num_hops"])
        self.icl_hops = min(10, self.num_hops)  # upstream caps the example's hops at 10
        self.family = spec.family
        key = f"vt-icl:{ctx.tokenizer_name}:{ctx.seed}:{self.num_chains}:{self.icl_hops}"
        self.icl = ctx.resource(key, self._size_icl)

    @property
    def calibration_step(self) -> int:  # upstream's `incremental`
        return 5 if self.max_seq_length < 4096 else 10

    @property
    def min_size(self) -> int:
        # Every chain line needs a distinct noise line to precede.
        return self.num_chains * (self.num_hops + 1)

    # --- text ---------------------------------------------------------------------------

    def _prefix(self, value: int, num_v: int) -> str:
        return self.family.answer_prefix.format(query=value, num_v=num_v)

    def _icl(self, chains: Sequence[Sequence[str]], values: Sequence[int], layout: IclLayout,
             with_answer: bool = True) -> tuple[str, tuple[str, ...]]:
        """The solved example; chain 0 (value values[0]) is the one asked about. Its text,
        and the text cut into pieces at its lines (builder.counting)."""
        lines = insert_chains(layout.num_noise,
                              [chain_lines(c, v) for c, v in zip(chains, values)],
                              layout.positions)
        value, num_v = values[0], self.icl_hops + 1
        head, tail = template_ends(self.family.template, query=value, num_v=num_v)
        end = tail + self._prefix(value, num_v)
        if with_answer:
            # Upstream: icl['input'] (which still ends with the prefix's "they are: ") + " " +
            # the names + "\n", hence the double space before the names.
            end += " " + " ".join(chains[0]) + "\n"
        text, pieces = joined(head, lines, "\n", end)
        if ". \n" in text:  # render_context's replace would change the text: keep it whole
            text = head + render_context(lines) + end
            pieces = (text,)
        return text, pieces

    def _icl_draw(self) -> tuple[list[list[str]], int]:
        """The build-level draw of the example used for sizing: its chains and layout seed.

        One draw per (seed, tokenizer), like upstream's single example drawn once per process.
        """
        rng = random.Random(derive_seed(self.ctx.seed, self.ctx.tokenizer_name, "vt-icl"))
        chains = draw_chains(rng, self.num_chains, self.icl_hops + 1, ICL_NAME_LEN,
                             FORBIDDEN_NAMES)
        return chains, rng.getrandbits(64)

    def icl_sizing_probe(self, n: int) -> str:
        """The example's question (no answer, value 12345) with n noise lines, as sized."""
        chains, layout_seed = self._icl_draw()
        return self._icl(chains, [ICL_VALUE] * len(chains), self._icl_layout(layout_seed, n),
                         with_answer=False)[0]

    def _icl_layout(self, layout_seed: int, n: int) -> IclLayout:
        return IclLayout(n, self._positions(random.Random(layout_seed), n, self.icl_hops + 1))

    def _size_icl(self) -> IclLayout:
        """Largest example (in noise lines) whose question fits ICL_BUDGET tokens, as upstream.

        Upstream counts its one draw with `text_to_tokens` (no special tokens) and
        tokens_to_generate 0, and keeps the example for every sample; here the layout is
        fixed per build and names and value are drawn per sample.
        """
        def fits(n: int) -> bool:
            return self.ctx.tokenizer.count(self.icl_sizing_probe(n)) <= ICL_BUDGET

        lo = max(ICL_STEP, self.num_chains * (self.icl_hops + 1))
        if fits(lo):
            hi = lo * 2
            while fits(hi):
                lo, hi = hi, hi * 2
            while hi - lo > 1:  # fits(lo) and not fits(hi)
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        # else: upstream also keeps its smallest size when nothing fits
        return self._icl_layout(self._icl_draw()[1], lo)

    def _positions(self, rng: random.Random, num_noise: int, chain_len: int
                   ) -> tuple[tuple[int, ...], ...]:
        # Upstream samples each chain's slots among the lines present when it is inserted:
        # the noise and the c chains before it.
        return tuple(tuple(sorted(rng.sample(range(num_noise + c * chain_len), chain_len)))
                     for c in range(self.num_chains))

    # --- draft --------------------------------------------------------------------------

    def draft(self, index: int, rng: random.Random, size: int) -> Draft:
        hops = self.num_hops + 1
        # Size-independent draws first: names, values, the example's names and value.
        chains = draw_chains(rng, self.num_chains, hops, NAME_LEN)
        # One value per chain (upstream draws one per chain too) and per example chain, all
        # distinct, so exactly one chain holds the queried value and the example's differs.
        values = [int(v) for v in draw_unique(rng, 2 * self.num_chains,
                                              lambda r: str(r.randint(*VALUE_RANGE)))]
        values, icl_values = values[:self.num_chains], values[self.num_chains:]
        value = values[0]
        icl_chains = draw_chains(rng, self.num_chains, self.icl_hops + 1, ICL_NAME_LEN,
                                 FORBIDDEN_NAMES)
        # Then the size-dependent layout.
        positions = self._positions(rng, size, hops)
        main_lines = [chain_lines(c, v) for c, v in zip(chains, values)]
        lines = insert_chains(size, main_lines, positions)

        icl, icl_pieces = self._icl(icl_chains, icl_values, self.icl)
        head, tail = template_ends(self.family.template, query=value, num_v=hops)
        task, task_pieces = joined(head, lines, "\n", tail)
        if ". \n" in task:  # render_context's replace would change the text: count it whole
            task, task_pieces = head + render_context(lines) + tail, ()
        text = icl + "\n" + task
        # "\n" + "\n" is no clean junction: the example's last piece and the task's first join.
        pieces = ((*icl_pieces[:-1], icl_pieces[-1] + "\n" + task_pieces[0], *task_pieces[1:])
                  if task_pieces else ())
        start = len(icl) + 1 + len(head)
        gold = []
        pos = start
        for line in main_lines[0]:
            at = text.index(line, pos)
            gold.append((at, at + len(line)))
            pos = at + len(line)
        return Draft(input=text, answer_prefix=self._prefix(value, hops),
                     outputs=tuple(chains[0]), gold_spans=tuple(gold),
                     context_span=(start, len(text) - len(tail)), size=size, pieces=pieces)


# --- answer check ---------------------------------------------------------------------------

_VAR_LINE = re.compile(r"^VAR ([A-Z]+) = (?:VAR ([A-Z]+)|(\d+)) ?$", re.M)
_QUESTION = re.compile(r"Question: Find all variables that are assigned the value (\d+) in the "
                       r"text above\.\Z")


def check_row(row: Mapping) -> str | None:
    """Follow the chain from the queried value through the task's context (not the example)."""
    text: str = row["input"]
    head = VARIABLE_TRACKING.template[:VARIABLE_TRACKING.template.index("{context}")]
    start = text.rfind(head)
    if start < 0:
        return "task text not found"
    q = _QUESTION.search(text)
    if q is None:
        return "question with the queried value not found at the end of the input"
    value = q.group(1)
    body = text[start + len(head):q.start()]
    lines = _VAR_LINE.findall(body)
    lhs = [m[0] for m in lines]
    if len(set(lhs)) != len(lhs):
        return "a variable is assigned more than once"
    holders = {m[0] for m in lines if m[2] == value}
    changed = True
    while changed:
        changed = False
        for name, src, _ in lines:
            if src and src in holders and name not in holders:
                holders.add(name)
                changed = True
    outputs = list(row["outputs"])
    if len(set(outputs)) != len(outputs):
        return "outputs repeat a name"
    if holders != set(outputs):
        return (f"the chain from value {value} gives {sorted(holders)}, outputs are "
                f"{sorted(outputs)}")
    if value not in row["answer_prefix"]:
        return "the answer prefix does not name the queried value"
    return None


def gold_spans(row: Mapping, generator=None) -> tuple[list[int], tuple[int, int]] | str:
    """Re-derived from the row alone: where each line of the queried chain starts (in chain
    order, as `outputs` names it), and the task context's span (after the example)."""
    text: str = row["input"]
    head = VARIABLE_TRACKING.template[:VARIABLE_TRACKING.template.index("{context}")]
    q = _QUESTION.search(text)
    start = text.rfind(head)
    if start < 0 or q is None or not text[:q.start()].endswith("\n"):
        return "task text or question not found"
    start += len(head)
    names = list(row["outputs"])
    lines = chain_lines(names, int(q.group(1))) if names else []
    offsets, pos = [], start
    for line in lines:
        at = text.find(line, pos)
        if at < 0:
            return f"chain line {line!r} not found"
        offsets.append(at)
        pos = at + len(line)
    return offsets, (start, q.start() - 1)


FAMILY = TaskFamily(
    spec=VARIABLE_TRACKING, generator=VariableTrackingGenerator, check_row=check_row,
    gold_spans=gold_spans)
