"""Why `ruler eval` skipped a row, as a kind the code reads; the reason text is for people.

A row is skipped, never truncated, when it cannot run within the engine's context limit
(`max_model_len`): a row whose prompt plus `tokens_to_generate` exceeds it, or a row counting
its prompt alone whose prompt leaves no token to generate. The runner records the kind in the
prediction (`skip_kind`) beside the reason; `ruler score` counts skipped rows by kind and the
report's health section names rows skipped for the context limit. Predictions written before
the kind was recorded carry only the reason text, which names the limit: `skip_kind` reads the
kind from it for them.
"""

from __future__ import annotations

import enum
from typing import Any, Mapping


class SkipReason(str, enum.Enum):
    """A kind of skip (the value is what predictions.jsonl records)."""

    #: prompt + tokens_to_generate > max_model_len (a v1 row: its length counts the budget)
    OVER_CONTEXT = "over_context"
    #: the prompt alone fills max_model_len (where the prompt alone is counted: its budget is
    #: clamped otherwise)
    NO_ROOM = "no_room"

    @property
    def label(self) -> str:
        """The kind in scores.json's `skip_reasons` ("3x <label>")."""
        return _LABELS[self]


_LABELS = {SkipReason.OVER_CONTEXT: "prompt + tokens_to_generate > max_model_len",
           SkipReason.NO_ROOM: "prompt >= max_model_len (no room to generate)"}

#: The prediction field that records the kind.
FIELD = "skip_kind"


def skip_kind(record: Mapping[str, Any]) -> SkipReason | None:
    """The kind of a skipped prediction record: the one it records, else (a record written
    before kinds were) the one its reason text names; None for neither."""
    recorded = record.get(FIELD)
    if recorded:
        try:
            return SkipReason(recorded)
        except ValueError:
            return None  # a kind of a later version: its reason text says it
    reason = str(record.get("reason") or "")
    if "leaves no room to generate" in reason:
        return SkipReason.NO_ROOM
    if "max_model_len" in reason:
        return SkipReason.OVER_CONTEXT
    return None
