"""scores.json: `ruler score`'s output, which `ruler report` and `ruler compare` read, as
typed records: `eval.scoring.score` makes a `ScoresRecord` (per cell a `CellScore`),
`eval.records.results_schema.read_scores` reads one back after checking the file's shape.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from ruler.eval.failure_modes.record import CellFailures
from ruler.eval.records.build_tie import LENGTH_ONLY, TIE_KINDS
from ruler.eval.records.health_record import HealthFacts
from ruler.eval.records.run_record import DatasetRecord, PromptCheck, ServingRecord
from ruler.kernel.json_record import Decode, FrozenRecord, Record, record_list

SCORES_FORMAT = "ruler-scores/1"


def cell_of(label: str) -> tuple[str, int]:
    """"task/L" (`CellScore.label`, as records name split files) -> (task, L)."""
    task, L = label.rsplit("/", 1)
    return task, int(L)


@dataclass(frozen=True, kw_only=True)
class CellScore(FrozenRecord):
    """One (task, L) cell of the selection: upstream's task score over the rows answered, and
    what happened to every row asked for."""

    DECODE: ClassVar[Mapping[str, Decode]] = {"failures": CellFailures.from_json}

    task: str
    max_seq_length: int
    metric: str  # the metric that scored it
    score: float | None  # None: no row was answered
    rows: int  # rows of the split (or of the evaluated subset)
    scored: int
    nulls: int  # answered with an empty prediction (after v1's post-processing: strip)
    skipped: int
    errors: int
    missing: int
    data_sha256: str = ""
    # How its rows' `length` counts (catalog.length_rules), as its file's manifest entry
    # records it; "": not recorded (older scores)
    length_rule: str = ""
    skip_reasons: list[str] = field(default_factory=list)  # "3x <kind or reason>"
    # reasoning mode: answered rows whose thinking hit the output budget (scored as empty)
    budget_exhausted: int = 0
    # answered rows that ran with less than their tokens_to_generate (the context
    # left after the prompt; `Prediction.output_budget`)
    budget_clamped: int = 0
    # Answered rows whose stored prediction had a secret (the API key) cut out: scored on the
    # answer as generated, restored with the key this process holds (`eval.records.redaction`; rows
    # it could not restore are counted in `errors`, never scored on the redacted text)
    redacted: int = 0
    # The answered rows' values (0..1, `metrics.row_score`: the metric on the prediction as its
    # upstream prepares it) as [[index, value], ...] in row order: what intervals and paired
    # comparisons are computed from (`ruler report`, `ruler compare`). `score` stays
    # upstream's aggregate. None: not recorded (older scores).
    row_scores: list[list[float]] | None = None
    # The score's 95 % interval on 0..100 ([low, high]) and how it was made
    # (`ruler.eval.metrics.intervals`); None when no row was answered.
    ci95: list[float] | None = None
    ci_method: str | None = None
    # How the answered rows are tied to this build (`ruler.eval.records.build_tie`): kind -> rows
    # ("length": rows carrying an equal length and nothing more), and the rows neither their
    # data_sha256 nor their prompt ties to it (scored, but they may come from another build;
    # None: not recorded, older scores).
    tied_by: dict[str, int] = field(default_factory=dict)
    unverified: int | None = None
    # Each wrong answered row's failure mode (`ruler.eval.failure_modes`); None: not labelled
    # (older scores, or a benchmark whose rows the labeler does not read).
    failures: CellFailures | None = None

    @property
    def key(self) -> tuple[str, int]:
        return self.task, int(self.max_seq_length)

    @property
    def label(self) -> str:
        """"task/L", as split files are named in records."""
        return f"{self.task}/{self.max_seq_length}"

    @property
    def done(self) -> int:
        """Rows with a result: answered, or skipped as longer than the model's context (a
        lasting outcome of the run's settings). Missing and failed rows have none yet."""
        return self.rows - self.missing - self.errors

    @property
    def complete(self) -> bool:
        return self.missing == 0 and self.errors == 0

    @property
    def values(self) -> list[float] | None:
        """The answered rows' values in row order (None: not recorded)."""
        return None if self.row_scores is None else [float(v) for _, v in self.row_scores]


@dataclass(frozen=True)
class TieTotals:
    """Over a selection's cells: rows scored, tied to the build (and by what), and unverified
    (of which `length_only` carry an equal length and nothing more). Cells of older
    scores.json record no ties: their rows count as neither."""

    scored: int
    tied: int
    by: dict[str, int]
    unverified: int
    length_only: int

    @classmethod
    def of(cls, cells: Sequence[CellScore]) -> TieTotals:
        by: Counter[str] = Counter()
        for c in cells:
            by.update(c.tied_by)
        recorded = [c for c in cells if c.unverified is not None]
        return cls(scored=sum(c.scored for c in recorded), tied=sum(by[k] for k in TIE_KINDS),
                   by={k: by[k] for k in TIE_KINDS if by[k]},
                   unverified=sum(c.unverified or 0 for c in recorded),
                   length_only=by[LENGTH_ONLY])

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class Selection(FrozenRecord):
    """What was asked for: tasks, lengths, the rows per file (`--limit`), and who chose it:
    "flags", "run" (the run's record), "config" (every file of the config) or "caller"."""

    tasks: list[str] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    limit: int | None = None
    by: str | None = None


@dataclass(frozen=True, kw_only=True)
class PredictionsRecord(FrozenRecord):
    """What was scored: the predictions' path as given (absolute) and the sha256 of their
    bytes (`integrations.sources.fingerprint`)."""

    path: str
    sha256: str


@dataclass(kw_only=True)
class ScoresRecord(Record):
    """scores.json (module docstring)."""

    DECODE: ClassVar[Mapping[str, Decode]] = {
        "dataset": DatasetRecord.from_json, "cells": record_list(CellScore.from_json),
        "selection": Selection.from_json, "predictions": PredictionsRecord.from_json,
        "serving": record_list(ServingRecord.from_json), "prompt_check": PromptCheck.from_json,
        "health": HealthFacts.from_json}
    DERIVED: ClassVar[tuple[str, ...]] = ("format", "coverage", "tied_to_build")
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"suites"})

    dataset: DatasetRecord
    config: str
    model: str | None = None
    cells: list[CellScore]  # one per (task, L) file of the selection, answered or not
    missing: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    # Score by depth (eval.metrics.depth): "task/L" -> [[depth, score], ...] of the answered rows,
    # and the dataset config's depth bins when it is depth-swept (`ruler build --depths N`).
    depth_items: dict[str, list[list[float]]] | None = None
    depth_bins: int | None = None
    # The dataset config's build variant, as its manifest entry records it ({} for a
    # tokenizer's default config; catalog.variants): `ruler report` pools replicates by it.
    # None: not recorded (older scores).
    variant: dict[str, int] | None = None
    # The benchmark of the scored config, the package a plug-in's comes from, and its axes'
    # values, as its manifest entry records them (`BuildEntry.benchmark_id`, `axis_codes`:
    # {"language": "en-ko"}; {} for a benchmark without axes): reports read them here, never
    # from a config's or task's name. None: not recorded (older scores; those of 5775704
    # recorded a `language`, kept in `extra`).
    benchmark: str | None = None
    benchmark_package: str | None = None
    axes: dict[str, str] | None = None
    # The suites built into the scored config (`catalog.suites`), as its manifest entry
    # records them: `ruler report` draws their panels. None: none (or older scores).
    suites: list[str] | None = None
    mode: str | None = None  # the prompt mode of a `ruler eval` run (None: not known)
    selection: Selection | None = None
    # `ruler score` refuses to overwrite the scores of other predictions with it.
    predictions: PredictionsRecord | None = None
    # How the prompts reached the model, where the run records it (run.json's `serving`), and
    # the answered rows whose server prompt count was checked / differed (eval.records.serving).
    serving: list[ServingRecord] | None = None
    prompt_check: PromptCheck | None = None
    # What the predictions show of how the run was set up (eval.metrics.health.HealthFacts).
    health: HealthFacts | None = None
    # The metric `ruler score --metric` asked for in the rows' own stead (None: their own);
    # each cell's `metric` says which scored it.
    metric_asked: str | None = None

    @property
    def incomplete_cells(self) -> list[str]:
        return [c.label for c in self.cells if not c.complete]

    @property
    def complete(self) -> bool:
        return not self.incomplete_cells

    @property
    def coverage(self) -> dict[str, Any]:
        return {"expected": sum(c.rows for c in self.cells),
                "done": sum(c.done for c in self.cells),
                "complete": self.complete, "incomplete_cells": self.incomplete_cells}

    @property
    def tied_to_build(self) -> TieTotals:
        """The scored rows, how many are tied to this build (by kind) and how many nothing
        ties to it (`unverified`)."""
        return TieTotals.of(self.cells)

    @property
    def ties_recorded(self) -> bool:
        """Whether the cells record their ties (scores before that did not)."""
        return any(c.unverified is not None for c in self.cells)

    @property
    def unverified(self) -> int:
        return self.tied_to_build.unverified

    @property
    def files(self) -> dict[str, str]:
        """The split files scored: "task/L" -> content_sha256."""
        return self.dataset.files

    def derived_json(self) -> dict[str, Any]:
        return {"format": SCORES_FORMAT, "coverage": self.coverage,
                "tied_to_build": self.tied_to_build.to_json()}


def scores_owner(path: Path) -> tuple[Any, Any] | None:
    """Which predictions the scores.json at `path` scores, as its `predictions` names them
    (path, sha256), read leniently: a file that is not JSON, or not ours, names none (None)."""
    from ruler.kernel import strict_json

    try:
        old = strict_json.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    owner = old.get("predictions") if isinstance(old, dict) else None
    return (owner.get("path"), owner.get("sha256")) if isinstance(owner, dict) else None
