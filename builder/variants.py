"""Build variants: a tokenizer's rows built under one changed rule, as a config of their own.

Convention (shared by every variant): a variant is its own dataset config named
`<tokenizer>--<suffix>` (its per-task configs `<tokenizer>--<suffix>--<task>`), so it never
mixes with the default rows. Its parameter is a `BuildConfig` field, part of the build
identity, recorded in the manifest's build entry under `variant` (e.g. `{"depth_bins": 10}`)
and explained by the card (`VARIANTS`); `verify`, `--regenerate` and `ruler eval` read it back
from there. A variant's samples draw from the default config's per-sample seeds (the seed
names the tokenizer, not the variant), so sample i of a variant asks what sample i of the
default config asks wherever the variant's rule does not change it. One build makes one
variant at most.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ruler.builder.errors import RulerError
from ruler.builder.tasks.catalog import TaskSpec

#: The prompt mode an output-budget variant is counted in (builder.tokenizer.PROMPT_MODES).
OUTPUT_BUDGET_MODE = "reasoning"


def output_budget_suffix(budget: int) -> str:
    """`out16k` for 16384 (a multiple of 1024 in K, as lengths are written), else `out<N>`."""
    return f"out{budget // 1024}k" if budget % 1024 == 0 else f"out{budget}"


@dataclass(frozen=True)
class VariantKind:
    """One kind of variant."""

    field: str  # the BuildConfig field and the key in the manifest's "variant" entry
    suffix: Callable[[Any], str]  # value -> config-name suffix
    title: str  # the card's heading
    doc: str  # the card's explanation: what differs from the default config and why


VARIANTS: tuple[VariantKind, ...] = (
    VariantKind(
        field="depth_bins",
        suffix=lambda n: f"depth{n}",
        title="Position-controlled configs (`ruler build --depths N`)",
        doc=(
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
            "sample by sample. vt, cwe and fwe are not built: their answers are spread over "
            "the context."
        ),
    ),
    VariantKind(
        field="output_budget",
        suffix=output_budget_suffix,
        title="Reserved output budget, for reasoning models (`ruler build --output-budget N`)",
        doc=(
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
        ),
    ),
)


def variant_of(cfg: Any) -> dict[str, Any]:
    """The variant parameters set on a BuildConfig (empty for the default config)."""
    return {k.field: getattr(cfg, k.field) for k in VARIANTS
            if getattr(cfg, k.field, None) is not None}


def variant_config(base: str, variant: Mapping[str, Any]) -> str:
    """The dataset config name of `variant` of tokenizer config `base`."""
    return base + "".join(f"--{k.suffix(variant[k.field])}" for k in VARIANTS
                          if k.field in variant)


def check_one_variant(cfg: Any) -> None:
    """A build makes the default config or one variant of it."""
    chosen = variant_of(cfg)
    if len(chosen) > 1:
        raise RulerError(f"one variant per build: got {', '.join(sorted(chosen))}; build each "
                         f"into its own config with its own command")


def reserved_output_budget(variant: Mapping[str, Any] | None) -> int | None:
    """The reserved output budget of a build entry's `variant`, or None for a config without
    one."""
    value = (variant or {}).get("output_budget")
    return None if value is None else int(value)


def with_output_budget(spec: TaskSpec, output_budget: int | None) -> TaskSpec:
    """The task as a variant builds it: `tokens_to_generate` = the reserved budget."""
    return spec if output_budget is None else dataclasses.replace(spec, output_budget=output_budget)


def check_output_budget(output_budget: int | None, lengths: tuple[int, ...]) -> None:
    """Refuse a budget that leaves no room for a prompt at some requested length."""
    if output_budget is None:
        return
    if isinstance(output_budget, bool) or not isinstance(output_budget, int) or output_budget < 1:
        raise RulerError(f"--output-budget must be a positive integer, got {output_budget!r}")
    short = sorted(L for L in lengths if L <= output_budget)
    if short:
        raise RulerError(f"--output-budget {output_budget} leaves no room for the prompt at "
                         f"length(s) {', '.join(map(str, short))}: every length must exceed it "
                         f"(e.g. --lengths 32k,64k,128k for a 16K budget)")
