"""Build variants: configs built by other rules than the default, beside the default configs.

A variant is its own dataset config, `<tokenizer>--<suffix>` (per-task configs
`<tokenizer>--<suffix>--<task>`), so it never mixes with the default rows. Its parameters are a
field of BuildConfig, part of the build identity, and recorded in the manifest's build entry as
`"variant": {field: value}`; the dataset card explains each kind present (`VARIANTS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping


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
)


def variant_of(cfg: Any) -> dict[str, Any]:
    """The variant parameters set on a BuildConfig (empty for the default config)."""
    return {k.field: getattr(cfg, k.field) for k in VARIANTS
            if getattr(cfg, k.field, None) is not None}


def variant_config(base: str, variant: Mapping[str, Any]) -> str:
    """The dataset config name of `variant` of tokenizer config `base`."""
    return base + "".join(f"--{k.suffix(variant[k.field])}" for k in VARIANTS
                          if k.field in variant)
