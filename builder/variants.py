"""Build variants: a tokenizer's rows built under one changed rule, as a config of their own.

Convention (shared by every variant): a variant is its own dataset config named
`<tokenizer>--<variant>` (its per-task configs `<tokenizer>--<variant>--<task>`, as the card
names per-task configs); its parameter is a `BuildConfig` field, part of the build identity,
recorded in the manifest's build entry under `variant` (e.g. `{"output_budget": 16384}`) and
explained by the card; `verify` and `ruler eval` read it back from there.

Reserved output budget (`ruler build --output-budget N`, config `<tokenizer>--out16k` for
N = 16384): for reasoning models, which think before they answer. RULER's maintainers advise
dropping the answer prefix and raising the output budget for them (NVIDIA/RULER issue #99:
for a 128K model about 112K of input and 16K of output). Such a config's rows are fitted to
`prompt + N <= L` with the prompt counted as a reasoning model is given it: the chat template
with a generation prompt and no answer prefix (prompt mode `reasoning`); `tokens_to_generate`
holds N in place of the task's own budget (the row stays self-describing: `length` = prompt
tokens + `tokens_to_generate`, and `tokens_to_generate` is what to pass as `max_tokens`).
Scoring never reads it, so RULER's metrics are unchanged; upstream's per-task budgets stay in
the task catalog and the card. Samples draw from the same per-sample seeds as the default
config (the seed names the tokenizer, not the variant), so a variant row asks what the default
row asks wherever that does not depend on the haystack's size.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from ruler.builder.errors import RulerError
from ruler.builder.tasks.catalog import TaskSpec

#: The prompt mode an output-budget variant is counted in (builder.tokenizer.PROMPT_MODES).
OUTPUT_BUDGET_MODE = "reasoning"


def output_budget_suffix(budget: int) -> str:
    """`out16k` for 16384 (a multiple of 1024 in K, as lengths are written), else `out<N>`."""
    return f"out{budget // 1024}k" if budget % 1024 == 0 else f"out{budget}"


def variant_config(base: str, output_budget: int | None) -> str:
    """The dataset config of a build: the tokenizer's config, or `<tokenizer>--<variant>`."""
    return base if output_budget is None else f"{base}--{output_budget_suffix(output_budget)}"


def variant_record(output_budget: int | None) -> dict[str, Any]:
    """What the manifest's build entry and the build identity record (empty: no variant)."""
    return {} if output_budget is None else {"output_budget": int(output_budget)}


def reserved_output_budget(build: Mapping[str, Any]) -> int | None:
    """A build entry's reserved output budget, or None for a default config."""
    value = (build.get("variant") or {}).get("output_budget")
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
