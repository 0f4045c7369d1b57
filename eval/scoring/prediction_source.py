"""What a predictions reader returns (`ruler.eval.scoring.prediction_readers`): the records, and
what the run itself says about them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ruler.eval.records.run_record import ServingRecord


@dataclass
class PredictionSource:
    records: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None  # the model the run names, for the report
    limit: int | None = None  # the run asked for the first N rows of each split only
    files: list[Path] = field(default_factory=list)  # the files read, for the fingerprint
    mode: str | None = None  # the prompt mode of a `ruler eval` run (None: not known)
    origin: Path | None = None  # the file or folder the user named
    # The (config, task, L) cells the run itself asked for, where it records them (run.json,
    # an Inspect log's task metadata, lm-eval's results file); None: not known.
    asked: set[tuple[str, str, int]] | None = None
    # How a `ruler eval` run's prompts reached the model (run.json's `serving`), if recorded.
    serving: list[ServingRecord] | None = None
    # How the run generated, where its files say (eval.metrics.health.HealthFacts settings:
    # framework, mode, temperature, max_tokens, ...); None: not known.
    settings: dict[str, Any] | None = None
    # The records carry no key but their prompt text (NeMo-Skills output): their reader keys
    # them against the dataset's rows (`PredictionReader.key_rows`) before scoring.
    by_prompt: bool = False
    # The reader that read them (`prediction_readers.PREDICTION_READERS`; None: ruler's own).
    reader: str | None = None

    @classmethod
    def merge(cls, parts: list["PredictionSource"]) -> "PredictionSource":
        """All records; the model, limit and mode only where every part agrees; the cells asked
        for when every part knows its own."""
        def agreed(values: set) -> Any:
            return values.pop() if len(values) == 1 else None

        known = [p.asked for p in parts if p.asked is not None]
        asked = set().union(*known) if len(known) == len(parts) else None
        settings = [p.settings for p in parts]
        return cls([r for p in parts for r in p.records], agreed({p.model for p in parts}),
                   agreed({p.limit for p in parts}), [f for p in parts for f in p.files],
                   agreed({p.mode for p in parts}), asked=asked,
                   settings=settings[0] if all(s == settings[0] for s in settings) else
                   _merged_settings(settings))


def _merged_settings(parts: list[dict[str, Any] | None]) -> dict[str, Any]:
    """Settings of several parts (one per task file): a value all parts agree on; per-task
    values (dicts: `max_tokens_by_task`) united; anything else where they differ, not known."""
    known = [p for p in parts if p]
    out: dict[str, Any] = {}
    for key in sorted({k for p in known for k in p}):
        values = [p.get(key) for p in known]
        if all(isinstance(v, dict) for v in values):
            out[key] = {k: v for d in values if isinstance(d, dict) for k, v in d.items()}
        elif all(v == values[0] for v in values):
            out[key] = values[0]
    return out
