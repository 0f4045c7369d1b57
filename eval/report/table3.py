"""`ruler report RUN RUN ... [--reference NAME ...]`: runs of different models as the RULER
paper's Table 3, in Markdown and LaTeX.

One row per model: claimed length (the registry's for its model, where one matches),
effective length, the score at every length, Avg., wAvg. (inc) and wAvg. (dec), each run's
numbers with their 95 % intervals; scores above the threshold underlined, as the paper does.
The first row is the threshold's own (Llama2 (7B) at 4K, 85.6, from the registry), as in the
paper; published rows named with `--reference` follow the run of their model, the others the
runs. Avg. and wAvg. average a row's own lengths: a row whose lengths are not all the table's
(a 4K-only run beside the published 4K..128K) has its averages marked §, since they do not
compare with the others'. Names are escaped in both formats (`ruler.kernel.markup`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from ruler.eval.metrics.aggregate import format_length
from ruler.eval.metrics.intervals import Interval
from ruler.eval.published_results import PublishedResult, Registry
from ruler.eval.report.intervals import format_interval
from ruler.eval.report.run import Report, benchmark_title
from ruler.kernel.errors import RulerError
from ruler.kernel.markup import latex_text, md_code, md_text

#: The registry entry of the paper's first row, whose 4K score is the threshold.
THRESHOLD_ROW = "ruler-readme/llama-2-7b-chat-hf"
AVERAGES = (("avg", "Avg."), ("wavg_inc", "wAvg. (inc)"), ("wavg_dec", "wAvg. (dec)"))
#: Marks an average over other lengths than the table's.
OTHER_LENGTHS = "§"

Value = tuple[float | None, Interval | None]


@dataclass
class TableRow:
    label: str
    kind: str  # "run", "published" or "threshold"
    claimed: str | None
    effective: str | None
    scores: dict[int, Value]
    averages: dict[str, Value]
    where: str  # the results folder, or the registry entry's name
    samples: str = ""  # samples per task and length
    model: str | None = None
    config: str | None = None  # a run's dataset config
    averaged_over: list[int] = field(default_factory=list)  # the lengths Avg. and wAvg. cover
    averages_comparable: bool = True  # over the table's lengths (else marked §)

    def to_json(self) -> dict[str, Any]:
        def j(v: Value) -> dict[str, Any]:
            return {"score": None if v[0] is None else round(v[0], 2),
                    "ci95": v[1].to_json() if v[1] else None}

        return {"label": self.label, "kind": self.kind, "model": self.model,
                "config": self.config, "claimed_length": self.claimed,
                "effective_length": self.effective, "where": self.where,
                "samples": self.samples, "averaged_over": self.averaged_over,
                "averages_comparable": self.averages_comparable,
                "scores": {str(L): j(v) for L, v in self.scores.items()},
                **{k: j(v) for k, v in self.averages.items()}}


@dataclass
class Table3:
    rows: list[TableRow]
    lengths: list[int]
    threshold: float
    notes: list[str] = field(default_factory=list)
    title: str = "RULER"  # the runs' benchmark, as reports name it
    underline: bool = True  # scores above the threshold (a benchmark with an effective length)

    def to_json(self) -> dict[str, Any]:
        return {"benchmark": self.title, "threshold": self.threshold if self.underline else None,
                "lengths": self.lengths,
                "rows": [r.to_json() for r in self.rows], "notes": self.notes}


def _run_row(where: str, r: Report, registry: Registry) -> TableRow:
    matches = registry.for_model(r.model)
    claimed = next((e.claimed_length for e in matches if e.claimed_length), None)
    ri = r.intervals
    scores = {L: (r.summary.by_length.get(L), ri.by_length.get(L) if ri else None)
              for L in r.lengths}
    averages = {k: (getattr(r.summary, k), getattr(ri, k) if ri else None)
                for k, _ in AVERAGES}
    rows = sorted({c.rows for c in r.cells.values()})
    over = list(r.lengths) if any(v[0] is not None for v in averages.values()) else []
    return TableRow(r.model or where, "run", claimed, r.summary.effective_label, scores,
                    averages, where, "/".join(map(str, rows)), model=r.model,
                    config=r.config, averaged_over=over)


def _published_row(e: PublishedResult, kind: str = "published") -> TableRow:
    scores: dict[int, Value] = {L: (e.score(L)[0], None) for L in e.lengths}
    averages: dict[str, Value] = {k: (getattr(e, k), None) for k, _ in AVERAGES}
    over = e.lengths if any(v[0] is not None for v in averages.values()) else []
    return TableRow(e.model, kind, e.claimed_length, e.effective_length, scores, averages,
                    e.name, str(e.samples_per_task or "not stated"), model=e.model,
                    averaged_over=over)


def _label_runs(rows: Sequence[TableRow]) -> None:
    """Each run's label: its model, with its config where another run has the same model, and
    its folder where another has the same config too (a label names one run)."""
    models = Counter(row.label for row in rows)
    configs = Counter((row.label, row.config) for row in rows)
    for row in rows:
        if models[row.label] > 1:
            run = f", run {row.where}" if configs[(row.label, row.config)] > 1 else ""
            row.label = f"{row.label} (config {row.config}{run})"


def _one_benchmark(runs: Sequence[tuple[str, Report]],
                   published: Sequence[PublishedResult]) -> str:
    """The benchmark all runs and published rows are of (a table of two would set one's
    numbers beside the other's as if they measured the same); a RulerError otherwise."""
    found: dict[str, list[str]] = {}
    for where, r in runs:
        found.setdefault(r.benchmark, []).append(where)
    for e in published:
        found.setdefault(e.benchmark, []).append(e.name)
    if len(found) > 1:
        shown = "; ".join(f"{benchmark_title(b)}: {', '.join(names[:3])}"
                          for b, names in sorted(found.items()))
        raise RulerError(f"the runs and published results are of different benchmarks "
                         f"({shown}): a table holds one benchmark's; report them apart")
    return next(iter(found))


def build_table(runs: Sequence[tuple[str, Report]], published: Sequence[PublishedResult],
                registry: Registry) -> Table3:
    """The table of the runs (where, report) and the published results, interleaved."""
    benchmark = _one_benchmark(runs, published)
    threshold = runs[0][1].summary.threshold
    # RULER's threshold row and underlining; a benchmark without an effective length has none
    ruled = runs[0][1].summary.has_effective_length
    rows: list[TableRow] = []
    if ruled and THRESHOLD_ROW in registry.entries:
        rows.append(_published_row(registry.entries[THRESHOLD_ROW], "threshold"))
    placed: set[str] = set()
    run_rows = [_run_row(where, r, registry) for where, r in runs]
    _label_runs(run_rows)
    for row, (_, r) in zip(run_rows, runs):
        rows.append(row)
        for e in published:
            if e.name not in placed and e.matches_model(r.model):
                rows.append(_published_row(e))
                placed.add(e.name)
    rows += [_published_row(e) for e in published if e.name not in placed]
    lengths = sorted({L for row in rows if row.kind != "threshold" for L in row.scores})
    notes = ["Runs: " + "; ".join(f"{md_text(row.label)}: config {md_code(row.config)}, run "
                                    f"{md_code(row.where)} ({row.samples} samples per task and "
                                    f"length)" for row in run_rows) + "."]
    for cited in [registry.entries.get(THRESHOLD_ROW) if ruled else None, *published]:
        if cited is not None:
            notes.append(f"{md_text(cited.model)} ({md_code(cited.name)}): "
                         f"{md_text(cited.source.cite())}; samples per task "
                         f"{cited.samples_per_task or 'not stated'}; reported by "
                         f"{md_text(cited.reported_by or 'not stated')}.")
    shown = ", ".join(map(format_length, lengths))
    for row in rows:
        if row.kind != "threshold" and row.averaged_over and row.averaged_over != lengths:
            row.averages_comparable = False
            notes.append(f"{OTHER_LENGTHS} Avg. and wAvg. of {md_text(row.label)} are over "
                         f"{_lengths_text(row.averaged_over)}, not the table's {shown}: they "
                         f"do not compare with the others'.")
    return Table3(rows, lengths, threshold, notes, title=benchmark_title(benchmark),
                  underline=ruled)


def _lengths_text(lengths: Sequence[int]) -> str:
    shown = ", ".join(map(format_length, lengths))
    return f"{shown} only" if len(lengths) == 1 else shown


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f}"


def _md_value(v: Value, threshold: float, underline: bool = True, mark: str = "") -> str:
    value, interval = v
    text = _num(value)
    if underline and value is not None and value > threshold:
        text = f"<ins>{text}</ins>"
    if mark and value is not None:
        text += f" {mark}"
    return text + (f" {format_interval(interval)}" if interval else "")


def _mark(row: TableRow) -> str:
    return "" if row.averages_comparable else OTHER_LENGTHS


def to_markdown(t: Table3) -> str:
    cols = [format_length(L) for L in t.lengths]
    above = (f"; scores above the threshold {t.threshold} (Llama2 (7B) at 4K) underlined"
             if t.underline else "")
    lines = [f"# {md_text(t.title)}: Table 3", "",
             f"Scores (%) per length: the mean over the tasks{above}; runs with their 95 % "
             f"intervals. Published rows are marked †"
             + (f"; averages over other lengths than the table's {OTHER_LENGTHS} (notes)"
                if any(not row.averages_comparable for row in t.rows) else "") + ".", "",
             "| Models | Claimed Length | Effective Length | " + " | ".join(cols)
             + " | " + " | ".join(name for _, name in AVERAGES) + " |",
             "|---" * (len(cols) + 6) + "|"]
    for row in t.rows:
        mark = " †" if row.kind == "published" else ""
        if row.kind == "threshold":
            cells = [_num(row.scores.get(L, (None, None))[0]) if L in row.scores else ""
                     for L in t.lengths]
            lines.append(f"| {md_text(row.label)}{mark} | {md_text(row.claimed or '')} | | "
                         + " | ".join(cells) + " | | | |")
            continue
        cells = [_md_value(row.scores[L], t.threshold, t.underline) if L in row.scores
                 else "—" for L in t.lengths]
        # a run's effective length is ours ("< 4K"); a published row's is its source's text
        effective = row.effective if row.kind == "run" else md_text(row.effective or "—")
        lines.append(f"| {md_text(row.label)}{mark} | {md_text(row.claimed or '—')} | "
                     f"{effective or '—'} | " + " | ".join(cells) + " | "
                     + " | ".join(_md_value(row.averages[k], t.threshold, underline=False,
                                            mark=_mark(row)) for k, _ in AVERAGES) + " |")
    return "\n".join(lines + [""] + [f"- {n}" for n in t.notes]) + "\n"


def _tex_value(v: Value, threshold: float, underline: bool = True, mark: str = "") -> str:
    value, interval = v
    text = _num(value)
    if underline and value is not None and value > threshold:
        text = rf"\underline{{{text}}}"
    if mark and value is not None:
        text += r"$^\S$"
    if interval:
        text += rf"\,{{\scriptsize[{interval.low:.1f}, {interval.high:.1f}]}}"
    return text


def to_latex(t: Table3) -> str:
    """The table as a LaTeX `table` environment (needs `\\usepackage{booktabs}`)."""
    n = len(t.lengths)
    head = (["Models", "Claimed Length", "Effective Length"]
            + [format_length(L) for L in t.lengths] + [name for _, name in AVERAGES])
    lines = [r"\begin{table}[t]", r"\centering", r"\small", r"\setlength{\tabcolsep}{3pt}",
             r"\begin{tabular}{l" + "c" * 2 + "r" * (n + 3) + "}", r"\toprule",
             " & ".join(latex_text(h) for h in head) + r" \\", r"\midrule"]
    for row in t.rows:
        label = latex_text(row.label) + (r"$^\dagger$" if row.kind == "published" else "")
        if row.kind == "threshold":
            cells = [_num(row.scores[L][0]) if L in row.scores else "" for L in t.lengths]
            lines += [" & ".join([label, latex_text(row.claimed or ""), ""] + cells
                                 + ["", "", ""]) + r" \\", r"\midrule"]
            continue
        cells = [_tex_value(row.scores[L], t.threshold, t.underline) if L in row.scores
                 else "--" for L in t.lengths]
        averages = [_tex_value(row.averages[k], t.threshold, underline=False,
                               mark=_mark(row)) for k, _ in AVERAGES]
        lines.append(" & ".join([label, latex_text(row.claimed or "--"),
                                 latex_text(row.effective or "--")] + cells + averages)
                     + r" \\")
    above = (f"; scores above the threshold {t.threshold} (Llama2 (7B) at 4K) are underlined"
             if t.underline else "")
    caption = (f"{latex_text(t.title)}: scores (\\%) per length: the mean over the tasks{above}; "
               f"runs with their 95\\,\\% intervals; $^\\dagger$ published results (sources in "
               f"the report)"
               + ("; $^\\S$ averages over other lengths than the table's (see the report)"
                  if any(not row.averages_comparable for row in t.rows) else "") + ".")
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{caption}}}",
              r"\label{tab:ruler}", r"\end{table}"]
    return "\n".join(lines) + "\n"
