"""What a predictions reader returns: the records, and what the run itself says about them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PredictionSource:
    records: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None  # the model the run names, for the report
    limit: int | None = None  # the run asked for the first N rows of each split only

    @classmethod
    def merge(cls, parts: list["PredictionSource"]) -> "PredictionSource":
        """All records; the model and limit only where every part agrees."""
        models = {p.model for p in parts}
        limits = {p.limit for p in parts}
        return cls([r for p in parts for r in p.records],
                   models.pop() if len(models) == 1 else None,
                   limits.pop() if len(limits) == 1 else None)
