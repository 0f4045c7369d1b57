"""ONERULER: our rows beside upstream's own generator output, language by language and task by
task.

    python -m perf.oneruler_reference --ours OUT --tokenizer llama-3.1 \\
        --reference ../shared/reference/oneruler/llama-3.1 [--length 8192] [--samples 20] \\
        [--languages en,zh,ru,ko,hi,sw] [--sources DIR] [--json FILE]

`--reference` holds upstream's files as `<lang>/<L>/<task>/validation.jsonl.gz` (or `.jsonl`);
`--ours` is a build folder with the configs `<tokenizer>--oneruler-<lang>`. Both sides' rows
are read with the language's prompt files (the `oneruler` source: `--sources`, else
$RULER_SOURCES):

- template: a row is template-identical when it is, character for character, the language's
  prompt parts joined by upstream's rule around a context and the asked key(s) (NIAH), or the
  whole cwe.txt around a numbered list (CWE); and every needle in its context is the
  language's needle form with a noun and a 7-digit value and its full stop;
- haystack: the sentences the context holds besides the needles, counted by matching them to
  the book's sentences from its start (upstream's rows: the splitter's, sentencex or, for sw
  and st, upstream's regex; ours: the haystack's, the splitter's with over-long segments cut,
  `oneruler_sentences`); "prefix" says whether that text is the book's first n sentences,
  joined as upstream joins them;
- side by side (ours | upstream): needles per row, answers per row, gold needle depth (its
  character offset in the context, 0..1), fill as upstream counts it (the raw prompt's tokens +
  30 for NIAH, + 0 for CWE, over L) and upstream's rows over L as the model reads them (the
  build's prompt mode + the answer budget), CWE distinct words and list items.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import pyarrow.parquet as pq

from ruler.benchmarks.oneruler.cwe import cwe_template
from ruler.benchmarks.oneruler.data import OnerulerData
from ruler.benchmarks.oneruler.languages import full_stop, joiner
from ruler.benchmarks.oneruler.niah import niah_template
from ruler.benchmarks.oneruler.sentences import bounded_segments, splitter_sentences
from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS
from ruler.benchmarks.oneruler.tasks import UPSTREAM_NAMES as ONERULER_UPSTREAM_NAMES
from ruler.benchmarks.ruler.common_words import parse_numbered
from ruler.builder.manifest import Manifest
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.catalog.sources import resolve
from ruler.catalog.tasks import get_task

#: Which side's rows a parse reads (their book sentences differ: `Language.sentences`).
OURS, UPSTREAM = "ours", "upstream"


@dataclass
class Parsed:
    """One row of either side."""

    template: bool  # the language's template, needles in its form
    needles: int = 0
    answers: int = 0
    gold_depths: list[float] = field(default_factory=list)
    haystack: int | None = None  # book sentences in the context (None: not the book's start)
    words: int = 0  # CWE: distinct words
    items: int = 0  # CWE: list items
    fill_raw: float = 0.0  # upstream's count / L
    over_as_read: bool = False  # length as the model reads it (+ budget) > L


def _alternatives(words) -> str:
    return "(" + "|".join(map(re.escape, sorted(set(words), key=len, reverse=True))) + ")"


def _pattern(template: str, **groups: str) -> str:
    out, pos = [], 0
    for m in re.finditer(r"\{(\w+)\}", template):
        out.append(re.escape(template[pos:m.start()]) + groups[m.group(1)])
        pos = m.end()
    return "".join(out) + re.escape(template[pos:])


class Language:
    """One language's prompt files, keys and book sentences, and how its rows are read."""

    def __init__(self, data: OnerulerData, lang: str):
        self.lang, self.sep = lang, joiner(lang)
        self.parts = data.niah_parts(lang)
        keys = _alternatives(data.nouns.keys(lang))
        self.needle = re.compile(_pattern(self.parts["needle_numbers"].rstrip(), key=keys,
                                          value=r"([0-9]{7})") + re.escape(full_stop(lang)))
        self.prompts = {q: re.compile(_pattern(niah_template(self.parts, lang, q),
                                               context="(.*)", query1=keys, query2=keys), re.S)
                        for q in (1, 2)}
        self.cwe = cwe_template(data.cwe_template(lang)).split("{context}")
        # upstream's rows: the splitter's sentences; ours: the haystack's (`split_sentences`)
        upstream = splitter_sentences(lang, data.book(lang))
        self.sentences = {UPSTREAM: upstream, OURS: bounded_segments(lang, upstream)}

    def book_prefix(self, text: str, side: str) -> int | None:
        """n when `text` is the book's first n sentences (cycling) as `side` splits the book,
        joined as upstream joins them, else None."""
        book, n, at = self.sentences[side], 0, 0
        while at < len(text):
            s = book[n % len(book)]
            if not text.startswith(s, at):
                return None
            at += len(s)
            n += 1
            if at < len(text):
                if not text.startswith(self.sep, at):
                    return None
                at += len(self.sep)
        return n

    def niah(self, task: str, text: str, outputs: list[str], side: str) -> Parsed:
        q = get_task(task).params["num_needle_q"]
        m = self.prompts[q].fullmatch(text)
        if m is None:
            return Parsed(template=False)
        start, end = m.span(1)
        context = text[start:end]
        asked = set(m.groups()[1:])
        needles = list(self.needle.finditer(context))
        gold = [n.start() / max(1, len(context)) for n in needles if n.group(1) in asked]
        rest, prev = [], 0
        for n in needles:
            rest.append(context[prev:n.start()])
            prev = n.end()
        rest.append(context[prev:])
        kept = [r.strip(" ") if self.sep else r for r in rest]
        spec = get_task(task).params
        return Parsed(template=len(needles) == spec["num_needle_k"] * spec["num_needle_v"],
                      needles=len(needles), answers=len(outputs), gold_depths=gold,
                      haystack=self.book_prefix(self.sep.join(k for k in kept if k), side))

    def cwe_row(self, text: str, outputs: list[str]) -> Parsed:
        head, tail = self.cwe
        if not text.startswith(head) or not text.endswith(tail.format(query="")):
            return Parsed(template=False)
        items = parse_numbered(text[len(head):len(text) - len(tail.format(query=""))]) or []
        return Parsed(template=bool(items), answers=len(outputs), words=len(set(items)),
                      items=len(items))


def read_reference(folder: Path, lang: str, L: int, task: str, samples: int) -> list[dict]:
    base = folder / lang / str(L) / ONERULER_UPSTREAM_NAMES[task]
    for name, opener in (("validation.jsonl.gz", gzip.open), ("validation.jsonl", open)):
        if (base / name).is_file():
            with opener(base / name, "rt", encoding="utf-8") as f:
                return [json.loads(line) for line in f][:samples]
    return []


def read_ours(out: Path, config: str, L: int, task: str, samples: int) -> list[dict]:
    path = out / "data" / config / task / f"{L}.parquet"
    return pq.read_table(path).to_pylist()[:samples] if path.is_file() else []


@dataclass
class Cell:
    lang: str
    task: str
    ours: list[Parsed]
    upstream: list[Parsed]

    @property
    def identical(self) -> bool:
        return bool(self.ours and self.upstream) and all(
            p.template for p in (*self.ours, *self.upstream))


BAR = "\\|"  # ours | upstream, inside a Markdown table cell


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def compare(ours: Path, tokenizer: str, reference: Path, languages: Sequence[str], L: int,
            samples: int, sources: str | None = None) -> list[Cell]:
    data = OnerulerData(resolve("oneruler", sources).path)
    tok = load_tokenizer(tokenizer)
    manifest = Manifest.load(ours)
    cells = []
    for lang in languages:
        config = f"{tokenizer}--oneruler-{lang}"
        build = manifest.build(config)
        mode = build.prompt_mode if build else tok.default_mode()
        language = Language(data, lang)
        for task in ONERULER_TASKS:
            budget = get_task(task).tokens_to_generate
            counted = budget if task.startswith("or_niah") else 0  # upstream's `length`

            def parse(text: str, outputs: list[str], side: str) -> Parsed:
                p = language.niah(task, text, outputs, side) if task.startswith("or_niah") \
                    else language.cwe_row(text, outputs)
                p.fill_raw = (tok.count(text) + counted) / L
                p.over_as_read = tok.prompt_length(text, "", mode) + budget > L
                return p

            mine = [parse(r["input"], list(r["outputs"]), OURS)
                    for r in read_ours(ours, config, L, task, samples)]
            theirs = [parse(r["input"], list(r["outputs"]), UPSTREAM)
                      for r in read_reference(reference, lang, L, task, samples)]
            if mine or theirs:
                cells.append(Cell(lang, task, mine, theirs))
    return cells


def _pair(cell: Cell, get, fmt: str = "{:.3f}") -> str:
    def side(rows: list[Parsed]) -> str:
        values = [v for r in rows for v in get(r)]
        return fmt.format(_mean(values)) if values else "—"
    return f"{side(cell.ours)} {BAR} {side(cell.upstream)}"


def _haystack(rows: list[Parsed]) -> str:
    if not rows or rows[0].needles == 0:
        return "—"
    sizes = [r.haystack for r in rows]
    if any(s is None for s in sizes):
        return f"not the book start in {sum(s is None for s in sizes)}/{len(sizes)}"
    return f"{min(sizes)}–{max(sizes)}"


def table(cells: Sequence[Cell]) -> str:
    head = ("| lang | task | template identical | needles/row | answers/row | "
            "gold depth | haystack sentences (book prefix) | fill, upstream's count | "
            "upstream rows > L as read | CWE words (items) |")
    lines = [head, "|" + "---|" * 10]
    for c in cells:
        cwe = c.task.startswith("or_cwe")
        words = (f"{_pair(c, lambda r: [r.words], '{:.0f}')} "
                 f"({_pair(c, lambda r: [r.items], '{:.0f}')})") if cwe else "—"
        over = sum(r.over_as_read for r in c.upstream)
        haystack = "—" if cwe else f"{_haystack(c.ours)} {BAR} {_haystack(c.upstream)}"
        lines.append(
            f"| {c.lang} | {ONERULER_UPSTREAM_NAMES[c.task]} | "
            f"{'yes' if c.identical else 'NO'} ({len(c.ours)} {BAR} {len(c.upstream)} rows) | "
            f"{'—' if cwe else _pair(c, lambda r: [r.needles], '{:.1f}')} | "
            f"{_pair(c, lambda r: [r.answers], '{:.1f}')} | "
            f"{'—' if cwe else _pair(c, lambda r: r.gold_depths, '{:.2f}')} | "
            f"{haystack} | "
            f"{_pair(c, lambda r: [r.fill_raw])} | {over}/{len(c.upstream)} | {words} |")
    return "\n".join(lines)


def summary(cells: Sequence[Cell]) -> dict:
    both = [c for c in cells if c.ours and c.upstream]
    return {"cells": len(both), "identical": sum(c.identical for c in both),
            "one_side_only": len(cells) - len(both),
            "upstream_over_L_as_read": sum(r.over_as_read for c in cells for r in c.upstream),
            "upstream_rows": sum(len(c.upstream) for c in cells),
            "ours_over_L_as_read": sum(r.over_as_read for c in cells for r in c.ours)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours", type=Path, required=True, help="a build folder")
    ap.add_argument("--tokenizer", default="llama-3.1",
                    help="the tokenizer of our configs and of upstream's files")
    ap.add_argument("--reference", type=Path, required=True,
                    help="upstream's files, <lang>/<L>/<task>/validation.jsonl[.gz]")
    ap.add_argument("--languages", default=None,
                    help="comma-separated (default: every language --reference holds)")
    ap.add_argument("--length", type=int, default=8192)
    ap.add_argument("--samples", type=int, default=20, help="rows per side and cell (first N)")
    ap.add_argument("--sources", default=None, help="the folder holding the oneruler source")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    languages = args.languages.split(",") if args.languages else sorted(
        p.name for p in args.reference.iterdir() if (p / str(args.length)).is_dir())
    cells = compare(args.ours, args.tokenizer, args.reference, languages, args.length,
                    args.samples, args.sources)
    print(table(cells))
    s = summary(cells)
    print(f"\n{s['identical']} of {s['cells']} cells template-identical; upstream rows over L "
          f"as the model reads them: {s['upstream_over_L_as_read']} of {s['upstream_rows']}; "
          f"ours: {s['ours_over_L_as_read']}"
          + (f"; {s['one_side_only']} cell(s) on one side only" if s["one_side_only"] else ""))
    if args.json:
        args.json.write_text(json.dumps({"summary": s, "cells": [
            {"lang": c.lang, "task": c.task, "identical": c.identical,
             "ours": [asdict(p) for p in c.ours], "upstream": [asdict(p) for p in c.upstream]}
            for c in cells]}, indent=1))
    return 0 if s["cells"] and s["identical"] == s["cells"] else 1


if __name__ == "__main__":
    sys.exit(main())
