"""What a benchmark adds to `ruler report`: its own sections, figures and fields, and its table of
several runs (`Benchmark.report`, the address of a `ReportHooks` in its folder).

The report frame (`eval.report`) writes what every benchmark's report has: the head, the
headline numbers as the benchmark aggregates them (`Benchmark.aggregation`), the score of
every task x length with intervals, row counts and coverage, the set-up's health, notes and
score by depth. A benchmark's hooks add to it where each method says; every hook does nothing
by default, so a benchmark overrides only what it has.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from ruler.eval.config import ReportConfig
    from ruler.eval.report import Report
    from ruler.eval.scores_record import ScoresRecord


class ReportHooks:
    """A benchmark's part of a report (see the module docstring)."""

    def prepare(self, r: Report, scores: ScoresRecord) -> None:
        """Read what the hooks need of the scores into the report (`Report.extra`)."""

    def head(self, r: Report) -> list[str]:
        """Lines of the report's head, after what it covers (the run's facts: its language)."""
        return []

    def after_tasks(self, r: Report) -> list[str]:
        """Lines under the table of scores per task (a family x difficulty table)."""
        return []

    def sections(self, r: Report) -> list[str]:
        """Sections after the table of scores per task, in the full report (report.md)."""
        return []

    def tail(self, r: Report) -> list[str]:
        """Sections at the report's end (why rows fail)."""
        return []

    def json(self, r: Report) -> dict[str, Any]:
        """Fields report.json adds for the benchmark."""
        return {}

    def figures(self, r: Report, out: Path) -> None:
        """Write the benchmark's own figures into `out`."""

    def with_no_context(self, r: Report, scores: ScoresRecord, baseline: ScoresRecord,
                        where: str) -> None:
        """Take in the same model's run on the config's no-context variant (`--no-context`)."""

    def several(self, cfg: ReportConfig, runs: Sequence[tuple[str, Report]]) -> int | None:
        """`ruler report RUN RUN ...` of this benchmark's runs (name, report): the benchmark's
        own table of several runs, its exit status; None: the frame's (Table 3, replicates
        pooled)."""
        return None

    def reports_several(self) -> bool:
        """Whether the benchmark has its own table of several runs (overrides `several`)."""
        return type(self).several is not ReportHooks.several


#: The hooks of a benchmark that adds nothing.
NO_HOOKS = ReportHooks()
