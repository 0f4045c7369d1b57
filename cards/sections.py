"""The sections of the dataset card that describe how to use it with other tools.

The card renderer receives these as input (`render_card(..., sections=...)`) instead of
importing the tools' modules: the texts live in `cards` (`lm_eval_usage`, `inspect_usage`,
`kvpress_usage`),
below the evaluator that implements them, so the card is the same whoever renders it (build,
merge, release, verify's staleness check) and rendering it never imports `eval`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ruler.builder.manifest import Manifest
from ruler.cards import inspect_usage, kvpress_usage, lm_eval_usage


@dataclass(frozen=True)
class CardSection:
    """One usage section: `key` is its placeholder in the card template (`${key}`), `body`
    its text for a manifest, and the Hub repo and revision when the card is for a release."""

    key: str
    body: Callable[[Manifest, str | None, str | None], str]


#: The sections every card shows, in template order.
USAGE_SECTIONS: tuple[CardSection, ...] = (
    CardSection("lm_eval_section", lm_eval_usage.card_section),
    CardSection("inspect_section", inspect_usage.card_section),
    CardSection("kvpress_section", kvpress_usage.card_section),
)
