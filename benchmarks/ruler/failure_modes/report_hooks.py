"""RULER's part of `ruler report`: why rows fail (the paper's Section 5 failure modes, labelled
by `ruler score`: `failure_modes`), with the no-context coincidence of QA answers; and the
fields report.json has for the benchmarks of the RULER family, which RULERv2's and ONERULER's
report hooks fill in (`RulerFamilyReport.json`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruler.benchmarks.ruler import suite_report
from ruler.benchmarks.ruler.failure_modes import report as failure_section
from ruler.catalog.benchmarks import Benchmark
from ruler.eval.records.scores_record import ScoresRecord
from ruler.eval.report.run import Report, ReportHooks


class RulerFamilyReport(ReportHooks):
    """The report hooks of RULER, and the base of RULERv2's and ONERULER's."""

    def prepare(self, r: Report, scores: ScoresRecord) -> None:
        r.failures = failure_section.failure_report(scores.cells)

    def sections(self, r: Report) -> list[str]:
        return suite_report.markdown(r, suite_report.panels(r))[:-1] if r.suites else []

    def figures(self, r: Report, out: Path) -> None:
        if r.suites:
            suite_report.figures(r, out, suite_report.panels(r))

    def tail(self, r: Report) -> list[str]:
        return failure_section.markdown(r.failures)[:-1] if r.failures else []

    def depth_note(self, r: Report) -> str:
        return ("Needle tasks count each queried needle at its own depth (found or not in the "
                "prediction); QA rows count once, at the mean depth of their gold documents, and "
                "vt rows at their chain's first line, with the row's score; cwe and fwe have no "
                "gold position.")

    def depth_group_rule(self, r: Report) -> bool:
        return True  # said whether or not a run has the group's table, as these reports did

    def names_weighted_averages(self, spec: Benchmark) -> bool:
        # RULER's; RULERv2's and ONERULER's reports, which have none, keep the sentence as
        # they said it (tests/eval/golden_scores)
        return True

    def json(self, r: Report) -> dict[str, Any]:
        return {"family_difficulty": None, "language": None, "metric": None,
                "failure_modes": failure_section.to_json(r.failures) if r.failures else None}

    def with_no_context(self, r: Report, scores: ScoresRecord, baseline: ScoresRecord,
                        where: str) -> None:
        if r.failures:
            r.failures = failure_section.with_no_context(r.failures, scores, baseline, where)


REPORT = RulerFamilyReport()
