"""Build variants: a tokenizer's rows built under one changed rule, as a config of their own.

Convention (shared by every variant): a variant is its own dataset config named
`<tokenizer>--<suffix>` (its per-task configs `<tokenizer>--<suffix>--<task>`), so it never
mixes with the default rows. Its parameter is part of the build identity, recorded in the
manifest's build entry under `variant` (e.g. `{"depth_bins": 10}`) and explained by the card;
`verify`, `--regenerate` and `ruler eval` read it back from there. A variant's samples draw
from the default config's per-sample seeds (the seed names the tokenizer, not the variant),
so sample i of a variant asks what sample i of the default config asks wherever the variant's
rule does not change it. One build makes one variant at most.

A variant is one registered class (`register_variant`, or an entry point in group
`ruler.variants` for a plug-in's: `VARIANTS`): its manifest field, config suffix,
card text, checks and `ruler build` flag (declared on its parameter field with
`ruler.kernel.flags.option`, or as its `switch`) live on it, and it is the ONE channel into
generation: the build recipe carries the variant object to the worker and, through the build
context, to every generator, which ask it (`depth_bin`, `tokens_to_generate`, ...). The
default config is a variant too, `NO_VARIANT`, whose answers are upstream's rules, so no caller
branches on "is there a variant". See docs/extending.md, "Adding a variant".
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Collection, Mapping

from ruler.catalog.depths import MAX_DEPTH_BINS, DepthBin, check_depth_bins, sample_bin
from ruler.catalog.family import family_of, get_family, swept_tasks
from ruler.catalog.tasks import TaskSpec
from ruler.kernel.errors import RulerError
from ruler.kernel.flags import SWITCH, Flag, add_flag, flag_of, option
from ruler.kernel.registry import Registry

if TYPE_CHECKING:
    from ruler.catalog.tokenizer import Tokenizer


@dataclass(frozen=True)
class Variant:
    """The rules a build follows. This base class is the default config (`NO_VARIANT`):
    upstream's rules, no suffix, nothing recorded. A variant subclasses it as a frozen
    dataclass with one field, its parameter, declared with its `ruler build` flag
    (`bins: int = option("--depths", type=int, metavar="N", help=...)`), and overrides what its
    rule changes; a variant without a parameter (`SwitchVariant`) declares its flag as `switch`.
    The flag's value is what the manifest records (`from_value`).

    Instances travel to worker processes inside the build recipe (pickled by class name under
    `spawn` and to Ray workers), so a subclass must be defined at the top level of a module
    that those processes can import.
    """

    #: The key of the manifest's `variant` entry (and of the identity's); "" for the default.
    field: ClassVar[str] = ""
    #: The card's heading and explanation: what differs from the default config and why.
    title: ClassVar[str] = ""
    doc: ClassVar[str] = ""
    #: Added to a build error when a row breaks the variant's rule (`row_problem`).
    row_advice: ClassVar[str] = ""
    #: The `ruler build` flag of a kind without a parameter (a SWITCH `Flag`).
    switch: ClassVar[Flag | None] = None

    # --- what is recorded ---------------------------------------------------------------------

    @property
    def value(self) -> Any:
        """The variant's parameter, as the manifest records it (None for the default)."""
        return None

    def record(self) -> dict[str, Any]:
        """The manifest's `variant` entry: `{field: value}`, {} for the default config."""
        return {self.field: self.value} if self.field else {}

    def suffix(self) -> str:
        """The config-name suffix (`depth10`); "" for the default config."""
        return ""

    def config_name(self, base: str) -> str:
        """The dataset config of this variant of the tokenizer config `base`."""
        suffix = self.suffix()
        return f"{base}--{suffix}" if suffix else base

    def base_config(self, config: str) -> str:
        """The tokenizer config that `config` is this variant of (itself when its name does
        not end with this variant's suffix: `ruler verify` reports such a config)."""
        end = f"--{self.suffix()}" if self.suffix() else ""
        return config[:-len(end)] if end and config.endswith(end) else config

    @classmethod
    def accepts(cls, value: Any) -> bool:
        """Whether a manifest may record `value` for this kind (a positive integer here)."""
        return isinstance(value, int) and not isinstance(value, bool) and value > 0

    @classmethod
    def from_value(cls, value: Any) -> "Variant":
        """The variant a manifest records as `{field: value}`."""
        return cls(value)  # type: ignore[call-arg]  # each kind is a dataclass of its field

    # --- what a build checks ------------------------------------------------------------------

    def check(self, cfg: Any) -> None:
        """Refuse a BuildConfig this variant cannot build (RulerError naming the flag)."""

    def default_tasks(self, tasks: tuple[str, ...]) -> tuple[str, ...]:
        """The tasks `ruler build` makes when --tasks is not given, of the benchmark's
        (`tasks`): all of them, unless the variant applies to some only."""
        return tasks

    # --- what generation asks -----------------------------------------------------------------

    def prompt_mode(self, tokenizer: "Tokenizer") -> str:
        """The prompt mode rows are counted in (`catalog.tokenizer.PROMPT_MODES`)."""
        return tokenizer.default_mode()

    def seed_name(self, base_config: str) -> str:
        """The name every sample's seed is drawn from: the default config's, so sample i of
        a variant keeps sample i's keys, values and questions."""
        return base_config

    def tokens_to_generate(self, spec: TaskSpec) -> int:
        """The tokens a row of `spec` reserves for the answer (part of its fitted length)."""
        return spec.tokens_to_generate

    def depth_bin(self, index: int) -> DepthBin | None:
        """The depth bin sample `index`'s gold items go in; None: upstream's placement."""
        return None

    def row_problem(self, spec: TaskSpec, index: int, row: Mapping[str, Any]) -> str | None:
        """What is wrong with row `index` of `spec` under this variant's rule, or None. The
        build refuses such a row; `ruler verify` reports it."""
        return None

    #: Whether a row's answers are in its `input` (verify checks them and their positions).
    answers_in_input: ClassVar[bool] = True
    #: Whether rows fill their length as their benchmark promises (`FillPromise`); False for
    #: a variant that cuts the haystack out.
    fills_length: ClassVar[bool] = True

    def final_row(self, row: dict[str, Any], haystack: tuple[int, int],
                  count: Callable[[str, str], int]) -> dict[str, Any]:
        """The row as written, from the fitted row: `haystack` is the character span of the
        haystack in `input`, `count(input, answer_prefix)` the prompt's tokens in the build's
        prompt mode. The default: unchanged."""
        return row

    # --- the `ruler build` flag ---------------------------------------------------------------

    @classmethod
    def flag(cls) -> Flag | None:
        """The `ruler build` flag that asks for this kind: its parameter field's, else its
        `switch` (None for the default config)."""
        declared = [flag for f in fields(cls) if (flag := flag_of(f)) is not None]
        return declared[0] if declared else cls.switch

    @classmethod
    def flags(cls) -> tuple[Flag, ...]:
        """Every `ruler build` flag of this kind (`--replicate` and `--replicates`)."""
        flag = cls.flag()
        return () if flag is None else (flag,)

    @classmethod
    def from_flag(cls, value: Any) -> "Variant | None":
        """The variant its flag's value asks for (None, or a switch not given: none)."""
        return None if value is None or value is False else cls.from_value(value)


#: The default config: upstream's rules.
NO_VARIANT = Variant()

def _is_kind(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, Variant) and bool(obj.field)


def _same_kind(a: type[Variant], b: type[Variant]) -> bool:
    # by name: a module imported twice (a script run as __main__ and imported) defines the
    # class twice, and it is still the one kind
    return (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)


#: The kinds of variant by manifest field: ruler's below, then any registered elsewhere, then
#: those a plug-in offers in entry point group `ruler.variants` (`field = "pkg.mod:Class"`):
#: the installed `ruler build` has their flags.
VARIANTS: Registry[type[Variant]] = Registry("variant", "ruler.variants", accepts=_is_kind,
                                             name_of=lambda cls: cls.field, same=_same_kind)


def register_variant(cls: type[Variant]) -> type[Variant]:
    """Register a kind of variant (usable as a class decorator). Its `field` names it in
    manifests; registering runs when its module is imported, which must happen before a
    manifest recording it is read (the schema refuses unknown variants): a plug-in's entry
    point in group `ruler.variants` sees to that in every process."""
    if not _is_kind(cls):
        raise TypeError(f"{cls!r} is not a Variant subclass with a `field`")
    return VARIANTS.register(cls)


def variant_kinds() -> tuple[type[Variant], ...]:
    """Every registered kind, in registration order (the card's and the CLI's order)."""
    return tuple(VARIANTS.values())


def variant_flags(field: str) -> tuple[str, ...]:
    """The `ruler build` flags of the variant kind `field` (for messages)."""
    return tuple(name for flag in VARIANTS[field].flags() for name in flag.names)


def add_variant_flags(container: argparse._ActionsContainer) -> None:
    """Every registered kind's `ruler build` flags, none given by default."""
    leave_out_clashing(set(container._option_string_actions), "ruler build")
    for kind in variant_kinds():
        for flag in kind.flags():
            add_flag(container, flag.dest(""), flag, None)


def leave_out_clashing(taken: Collection[str], command: str) -> None:
    """Leave out (with a warning) each plug-in kind whose flags cannot be read: one that
    `command` has already (a plug-in's `--out` would read the build's folder as its value),
    or that a kind listed before it declared. ruler's own kinds are checked by its tests."""
    seen = set(taken)
    for kind in variant_kinds():
        if not VARIANTS.from_plugin(kind.field):
            seen.update(name for flag in kind.flags() for name in flag.names)
            continue
        try:
            names = [name for flag in kind.flags() for name in flag.names]
        except Exception as e:  # a plug-in's own code
            VARIANTS.leave_out(kind.field, f"its flags cannot be read ({type(e).__name__}: "
                                           f"{e})")
            continue
        clash = [name for name in names if name in seen]
        if clash:
            VARIANTS.leave_out(kind.field, f"its flag {clash[0]} is taken already (by "
                                           f"{command} or a variant listed before it)")
            continue
        seen.update(names)


def record_ok(record: Any) -> bool:
    """Whether a manifest's `variant` entry names at most one registered kind, with a value
    that kind accepts."""
    return isinstance(record, dict) and len(record) <= 1 and all(
        k in VARIANTS and VARIANTS[k].accepts(v) for k, v in record.items())


def variant_from_record(record: Mapping[str, Any] | None) -> Variant:
    """The variant a manifest's `variant` entry records (NO_VARIANT for none)."""
    if not record:
        return NO_VARIANT
    if not record_ok(record):
        raise RulerError(f"unknown or malformed variant {dict(record)!r} (known: "
                         f"{', '.join(VARIANTS)}, one per build)")
    (field, value), = record.items()
    return VARIANTS[field].from_value(value)


def variant_from_flags(values: Mapping[str, Any]) -> Variant:
    """The variant `ruler build`'s flags ask for (NO_VARIANT for none); `values` by the flags'
    names (`vars(args)`, or keywords read as the flags read them)."""
    chosen = [v for kind in variant_kinds() if (flag := kind.flag()) is not None
              and (v := kind.from_flag(values.get(flag.dest("")))) is not None]
    if len(chosen) > 1:
        raise RulerError(f"one variant per build: got {', '.join(sorted(v.field for v in chosen))}"
                         f"; build each into its own config with its own command")
    return chosen[0] if chosen else NO_VARIANT


def variants_from_flags(values: Mapping[str, Any]) -> tuple[Variant, ...]:
    """The configs one `ruler build` makes, in order: the one variant its flags ask for, or
    with `--replicates K` the replicate configs 1..K (each built as `--replicate i` builds
    it)."""
    chosen = variant_from_flags(values)
    count = values.get(REPLICATES.dest(""))
    return (chosen,) if count is None else Replicate.series(count, chosen)


def reserved_output_budget(variant: Mapping[str, Any] | None) -> int | None:
    """The reserved output budget a build entry's `variant` records, or None for a config
    without one."""
    value = (variant or {}).get(OutputBudget.field)
    return None if value is None else int(value)


# --- the variants ruler ships --------------------------------------------------------------------

@register_variant
@dataclass(frozen=True)
class DepthSweep(Variant):
    """Sample i's gold items in depth bin i mod `bins` (`ruler build --depths N`)."""

    bins: int = option(
        "--depths", type=int, metavar="N",
        help=f"build the position-controlled variant instead of the default config: config "
             f"<tokenizer>--depthN, where sample i's gold needle(s) or gold document(s) sit in "
             f"depth bin i mod N (N = 2..{MAX_DEPTH_BINS}; e.g. 10); all else as the default, "
             f"same per-sample seeds. Tasks: those whose family places its gold items (the "
             f"needle and QA tasks, the default with --depths)")

    field = "depth_bins"
    title = "Position-controlled configs (`ruler build --depths N`)"
    doc = (
        "Config `<tokenizer>--depth<N>` holds the needle (niah_*) and QA tasks with the gold "
        "position swept over N equal depth bins of the context (bin b: a `gold_depths` value "
        "in [b/N, (b+1)/N)): sample i's queried needle(s), or its gold document(s) (their "
        "mean start), sit in bin i mod N, so every bin holds samples/N rows of every task "
        "and length, and the rows give a depth x length picture (upstream RULER reports one "
        "score per task and length). Placement: essay haystacks use the points of "
        "upstream's 40-point sentence grid that fall inside the bin, nearest its centre "
        "(several queried needles take several points, and share one when the bin has too "
        "few); noise and needle-line haystacks use the line nearest the bin's centre; QA "
        "moves its gold document(s) as one block to the document slot nearest the bin's "
        "centre, and a distractor document spanning the whole bin moves to the far end of "
        "the context first. Depth is aimed by the token counts of the "
        "units and checked on the row's recorded token depth (the build refuses a row "
        "outside its bin, `ruler verify` checks every row). Other needles, distractors, "
        "the documents chosen, templates, budgets and length fitting follow the default "
        "rules. Sample i keeps the seed of sample i in config `<tokenizer>`: same keys, "
        "values, question and distractors, another position, so the two configs compare "
        "sample by sample. Tasks whose answers are spread over the context (no single gold "
        "position) are not built."
    )
    row_advice = ("the gold item cannot be placed in this bin at this length (use fewer "
                  "--depths or a longer length)")

    @property
    def value(self) -> int:
        return self.bins

    def suffix(self) -> str:
        return f"depth{self.bins}"

    def check(self, cfg: Any) -> None:
        check_depth_bins(self.bins)
        fixed = [t for t in cfg.tasks if not family_of(t).sweepable]
        if fixed:
            raise RulerError(f"--depths sweeps the gold position of "
                             f"{', '.join(swept_tasks(cfg.tasks))}; "
                             f"{', '.join(fixed)} ha{'s' if len(fixed) == 1 else 've'} no "
                             f"single gold position (leave them out of --tasks)")

    def default_tasks(self, tasks: tuple[str, ...]) -> tuple[str, ...]:
        return swept_tasks(tasks)

    def depth_bin(self, index: int) -> DepthBin:
        return sample_bin(index, self.bins)

    def row_problem(self, spec: TaskSpec, index: int, row: Mapping[str, Any]) -> str | None:
        family = get_family(spec.family.name)
        if not family.sweepable:
            return None
        return family.bin_miss(row["gold_depths"], sample_bin(index, self.bins))


#: The prompt mode an output-budget variant is counted in (catalog.tokenizer.PROMPT_MODES).
OUTPUT_BUDGET_MODE = "reasoning"


@register_variant
@dataclass(frozen=True)
class OutputBudget(Variant):
    """A reserved output budget for reasoning models (`ruler build --output-budget N`)."""

    budget: int = option(
        "--output-budget", type=int, metavar="N",
        help="reasoning-model variant: reserve N tokens for the output in place of each task's "
             "tokens_to_generate and count prompts as a reasoning model gets them (chat "
             "template + generation prompt, no answer prefix); written as its own config "
             "<tokenizer>--out16k (N = 16384) and evaluated with `ruler eval --mode reasoning`")

    field = "output_budget"
    title = "Reserved output budget, for reasoning models (`ruler build --output-budget N`)"
    doc = (
        "Models that think before they answer need room for the thinking and no pre-filled "
        "answer (RULER's maintainers advise, for a 128K model, about 112K of input and 16K "
        "of output: NVIDIA/RULER issue #99). In config `<tokenizer>--out<N>` (`out16k` for "
        "16384): the prompt is the tokenizer's chat template with the user turn `input` and "
        "a generation prompt, with no `answer_prefix` (prompt mode `reasoning`; "
        "`answer_prefix` is kept in the rows as data only); every row is fitted to "
        "`length` = prompt tokens + the reserved budget <= L, and `tokens_to_generate` "
        "holds that budget instead of the task's own (the Tasks table keeps upstream's "
        "per-task budgets), so `max_tokens = tokens_to_generate` is right for these rows; "
        "samples use the same per-sample seeds as the tokenizer's default config (the same "
        "keys, values and questions wherever they do not depend on the haystack's size, "
        "with a shorter haystack); scoring is unchanged: RULER's metrics on the answer, the "
        "text after the model's reasoning ends (`ruler eval --mode reasoning`, the default "
        "for these configs, stores both the raw output and the answer, and counts rows "
        "whose reasoning ran out of budget)."
    )

    @property
    def value(self) -> int:
        return self.budget

    def suffix(self) -> str:
        """`out16k` for 16384 (a multiple of 1024 in K, as lengths are written), else
        `out<N>`."""
        b = self.budget
        return f"out{b // 1024}k" if b % 1024 == 0 else f"out{b}"

    def check(self, cfg: Any) -> None:
        """Refuse a budget that leaves no room for a prompt at some requested length."""
        budget = self.budget
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise RulerError(f"--output-budget must be a positive integer, got {budget!r}")
        short = sorted(L for L in cfg.lengths if L <= budget)
        if short:
            raise RulerError(f"--output-budget {budget} leaves no room for the prompt at "
                             f"length(s) {', '.join(map(str, short))}: every length must exceed "
                             f"it (e.g. --lengths 32k,64k,128k for a 16K budget)")

    def prompt_mode(self, tokenizer: "Tokenizer") -> str:
        if not tokenizer.has_chat_template:
            raise RulerError(f"--output-budget builds prompts for reasoning models (chat template "
                             f"with a generation prompt); tokenizer {tokenizer.name!r} has no "
                             f"chat template")
        return OUTPUT_BUDGET_MODE

    def tokens_to_generate(self, spec: TaskSpec) -> int:
        return self.budget


#: The most replicate configs one `--replicates K` builds: a seed-to-seed spread needs a
#: handful, and each is a whole build of the default config; a larger K is a typo, refused
#: before anything is made (10**8 used to fill 13.7 GB of memory in ten minutes, writing nothing).
MAX_REPLICATES = 100

#: `ruler build --replicates K`: the replicate configs 1..K, built one after the other.
REPLICATES = Flag(
    ("--replicates",), type=int, metavar="K",
    help=f"build replicates 1..K of the default config in one command: K configs "
         f"<tokenizer>--rep1 .. <tokenizer>--repK, each its own config with its own manifest "
         f"entry, the same files as K builds with --replicate 1 .. K (`ruler report` given "
         f"runs of one model on them pools them); K <= {MAX_REPLICATES}")


@register_variant
@dataclass(frozen=True)
class Replicate(Variant):
    """Replicate `index` of the default config: other per-sample seeds, nothing else changed
    (`ruler build --replicate I`).

    One index is one config, as for every variant (one `variant` entry and identity per
    config in the manifest). `--replicates K` builds replicates 1..K in one command, as K
    builds `--replicate 1` .. `--replicate K` (`series`): each its own config, with the same
    bytes."""

    index: int = option(
        "--replicate", type=int, metavar="I",
        help="build replicate I (1, 2, ...) of the default config: config <tokenizer>--repI, "
             "same tasks, lengths and samples with other per-sample seeds, to measure "
             "seed-to-seed variance")

    field = "replicate"
    title = ("Replicate configs, for seed-to-seed variance (`ruler build --replicates K`, "
             "`--replicate I`)")
    doc = (
        "Config `<tokenizer>--rep<I>` is an independent redraw of the benchmark: the same "
        "tasks, lengths, sample count, templates, budgets and length fitting as config "
        "`<tokenizer>`, with every sample's seed drawn from the name `<tokenizer>--rep<I>` "
        "instead of `<tokenizer>` (other needles, keys, values, questions, haystack "
        "positions and documents). `ruler build --replicates K` builds replicates 1..K, "
        "each its own config. Evaluating a model on `<tokenizer>` and on replicates "
        "1..K measures how much its score moves with the draw of the samples alone, beside "
        "the per-row intervals `ruler report` gives: `ruler report` given those runs pools "
        "them (mean and spread over replicates); `ruler compare` pairs two runs on the "
        "same replicate, never across replicates (their rows differ)."
    )

    @property
    def value(self) -> int:
        return self.index

    def suffix(self) -> str:
        return f"rep{self.index}"

    def check(self, cfg: Any) -> None:
        index = self.index
        if isinstance(index, bool) or not isinstance(index, int) or index < 1:
            raise RulerError(f"--replicate must be a positive integer, got {index!r}")

    def seed_name(self, base_config: str) -> str:
        return self.config_name(base_config)

    @classmethod
    def series(cls, count: Any, chosen: Variant = NO_VARIANT) -> tuple["Replicate", ...]:
        """Replicates 1..`count` (`ruler build --replicates K`), refusing a count that is not a
        positive integer or that comes with another variant flag (`chosen`: the variant the
        other flags ask for)."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise RulerError(f"--replicates must be a positive integer (the number of "
                             f"replicate configs to build), got {count!r}")
        if count > MAX_REPLICATES:
            raise RulerError(f"--replicates: at most {MAX_REPLICATES} replicate configs in one "
                             f"build (each is a whole build of the default config); got "
                             f"{count:,}")
        if isinstance(chosen, Replicate):
            raise RulerError(f"--replicates {count} builds replicates 1..{count}; "
                             f"--replicate {chosen.index} builds one: give only one of them")
        if chosen != NO_VARIANT:
            raise RulerError(f"--replicates redraws the default config and does not combine "
                             f"with another variant (got {chosen.field} = {chosen.value!r}, "
                             f"config <tokenizer>--{chosen.suffix()}): build it with its own "
                             f"command")
        return tuple(cls(i) for i in range(1, count + 1))

    @classmethod
    def flags(cls) -> tuple[Flag, ...]:
        return (*super().flags(), REPLICATES)


@dataclass(frozen=True)
class SwitchVariant(Variant):
    """A variant without a parameter, switched on by its flag: the manifest records
    `{field: true}`."""

    @property
    def value(self) -> bool:
        return True

    @classmethod
    def accepts(cls, value: Any) -> bool:
        return value is True

    @classmethod
    def from_value(cls, value: Any) -> "SwitchVariant":
        return cls()


#: The prompt mode a base-model variant is counted in (catalog.tokenizer.PROMPT_MODES).
BASE_MODEL_MODE = "base"


@register_variant
@dataclass(frozen=True)
class BaseModel(SwitchVariant):
    """Rows counted as a base model gets them (`ruler build --base`): the tokenizer's special
    tokens + input + answer prefix, no chat template. It has no parameter: the manifest
    records `{"base_model": true}`."""

    field = "base_model"
    title = "Base-model configs (`ruler build --base`)"
    switch = Flag(
        ("--base",), kind=SWITCH,
        help="base-model variant: count prompts as a base model gets them (special tokens + "
             "input + answer prefix, no chat template), as upstream's --model_template_type "
             "base; written as its own config <tokenizer>--base and evaluated with `ruler eval "
             "--mode base` (the default for it)")
    doc = (
        "Config `<tokenizer>--base` is for models without a chat template, evaluated as "
        "upstream RULER evaluates base models (`--model_template_type base`): the model is "
        "given the tokenizer's special tokens (e.g. BOS) + `input` + `answer_prefix`, and "
        "every row is fitted to that count + `tokens_to_generate` <= L (prompt mode `base`; "
        "`ruler eval --mode base` is the default for these configs). The default config of a "
        "tokenizer with a chat template counts the chat-wrapped prompt instead, a few tokens "
        "longer, so its haystacks are a few tokens shorter. Tasks, templates, answer prefixes, "
        "budgets and per-sample seeds are the default config's: sample i asks what sample i "
        "of config `<tokenizer>` asks, with a haystack fitted to the base prompt."
    )

    def suffix(self) -> str:
        return "base"

    def prompt_mode(self, tokenizer: "Tokenizer") -> str:
        if not tokenizer.has_chat_template:
            raise RulerError(f"tokenizer {tokenizer.name!r} has no chat template: its default "
                             f"config already counts prompts as a base model gets them (leave "
                             f"out --base)")
        return BASE_MODEL_MODE


@register_variant
@dataclass(frozen=True)
class NoContext(SwitchVariant):
    """The default config's rows without their haystack (`ruler build --no-context`): what a
    model scores from the instruction and the question alone. No parameter: the manifest
    records `{"no_context": true}`."""

    field = "no_context"
    title = "No-context baseline (`ruler build --no-context`)"
    switch = Flag(
        ("--no-context",), kind=SWITCH,
        help="no-context baseline: the default config's rows with the haystack cut out "
             "(instruction, question and answer prefix kept), as config "
             "<tokenizer>--nocontext: what a model scores without the context")
    doc = (
        "Config `<tokenizer>--nocontext` holds, for each row of config `<tokenizer>`, the same "
        "row with its haystack cut out of `input`: the task's instruction (and its one-shot "
        "example, where it has one), the question and the answer prefix stay, the essays, "
        "noise, needles, word "
        "lists and documents go. The sample is the default config's sample i (same seed, same "
        "question and references), fitted at L as there and then cut; `length` counts the "
        "short prompt that remains + `tokens_to_generate`, `gold_token_positions` and "
        "`gold_depths` are empty and `haystack_size` is 0. A model scores near zero here on "
        "every task whose answer lives only in the context (the oracle, answering from the "
        "references, scores 100 on the default config) and at its closed-book level on "
        "question answering: the floor a context score should be read against. Scored "
        "with RULER's metrics, like every config."
    )

    answers_in_input = False
    fills_length = False

    def suffix(self) -> str:
        return "nocontext"

    def final_row(self, row: dict[str, Any], haystack: tuple[int, int],
                  count: Callable[[str, str], int]) -> dict[str, Any]:
        h0, h1 = haystack
        text, cut = row["input"], len(row["context"])
        if not 0 <= h0 <= h1 <= cut:
            raise RulerError(f"task {row['task']}: the haystack (characters {h0}..{h1}) is not "
                             f"inside the context (0..{cut}); cannot cut it out")
        context = text[:h0] + text[h1:cut]
        stripped = context + row["question"]
        return {**row, "input": stripped, "context": context,
                "length": count(stripped, row["answer_prefix"]) + row["tokens_to_generate"],
                "gold_token_positions": [], "gold_depths": [], "haystack_size": 0}
