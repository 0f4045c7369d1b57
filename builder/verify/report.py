"""The table `ruler verify` prints."""

from __future__ import annotations

from ruler.builder.findings import VerifyReport


def _mark(flag: bool) -> str:
    return "ok" if flag else "FAIL"


def format_report(report: VerifyReport) -> str:
    lines = [f"{'file':<52} {'rows':>6} {'bytes':>5} {'content':>7} {'rows':>5} "
             f"{'tokens':>6} {'gold':>5} {'answers':>7} {'regen':>5}"]
    for f in report.files:
        lines.append(f"{f.path:<52} {f.rows:>6} {_mark(f.bytes_ok):>5} {_mark(f.content_ok):>7} "
                     f"{_mark(f.rows_ok):>5} {f.retokenized:>6} {f.gold_checked:>5} "
                     f"{_mark(f.answers_ok):>7} {f.regenerated:>5}")
    if report.loads:
        lines += ["", f"{'load_dataset config':<52} {'split':>8} {'rows':>6} {'status':>6}"]
        for load in report.loads:
            lines.append(f"{load.config:<52} {load.split:>8} "
                         f"{'-' if load.rows is None else load.rows:>6} {_mark(load.ok):>6}")
    problems = report.all_problems()
    notes = sorted({f"{f.path}: {n}" for f in report.files for n in f.notes})
    if notes:
        lines += ["", *(f"note: {n}" for n in notes)]
    lines.append("")
    if problems:
        lines.append(f"FAILED: {len(problems)} problem(s)")
        lines += [f"  {p}" for p in problems]
    else:
        rows = sum(f.rows for f in report.files)
        lines.append(f"OK: {len(report.files)} files, {rows} rows, {len(report.loads)} "
                     f"config/split loads verified")
    return "\n".join(lines)
