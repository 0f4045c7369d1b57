"""RULERv2: our rows beside NeMo-Skills' own generator output, task by task and length by length.

    python -m perf.ruler2_reference --ours OUT --config llama-3.1--v2 \\
        --reference ../shared/reference/nemo-skills-ruler2/llama-3.1 [--lengths 4096,8192] \\
        [--samples 50] [--json FILE]

`--reference` holds upstream's files as `<L>/<task>/test.jsonl.gz` (or `test.jsonl`); `--ours`
is a build folder with the config. For every task x length both have, the rows of each side
are read into the same shape, and:

- template: each row's text with its variable parts abstracted (keys, values, ids, ordinals,
  answer letters, questions, documents), runs of like lines or paragraphs made one; the fixed
  strings left must be equal, character for character, on both sides ("identical" when every
  row of both sides gives one and the same skeleton);
- statistics side by side (ours | upstream): fill (upstream's count: the raw prompt's tokens,
  no chat template or BOS; ours also as the model reads it), haystack items, the depth of the
  gold item(s) among the items (0 = first, 1 = last), answers per row, few-shot examples,
  items per prompt, how many items share the asked id or key (the mv tasks' repetition);
- the defects our rows fix, counted on both sides: ids that name more than one item (or more
  than `num_order`), and (qa) a gold paragraph that appears twice under two ids.

The QA statistics need each row's own paragraphs, read from the HotpotQA source the build used
(`--sources`, else $RULER_SOURCES): row i of both sides is validation question i.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import pyarrow.parquet as pq

from ruler.benchmarks.ruler2.qa import read_hotpotqa
from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS
from ruler.builder.manifest import Manifest
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.catalog.sources import resolve
from ruler.catalog.tasks import get_task


@dataclass
class Parsed:
    """One row of either side, in one shape."""

    skeleton: str
    fill_raw: float  # raw prompt tokens / L, as upstream counts
    items: int  # needle lines, questions or documents in the context
    haystack: int  # items that are not the row's own (needles, the test question, its paragraphs)
    gold_depths: list[float]  # positions of the gold items among the items, 0..1
    answers: int
    fewshot: int = 0
    group: int = 0  # items that share the asked id (mv tasks) or key
    id_clash: bool = False  # an id names more items than upstream's rule allows
    gold_twice: bool = False  # a gold paragraph appears under two ids
    fill_read: float | None = None  # ours: the prompt as the model reads it


def collapse(parts: Sequence[str]) -> list[str]:
    """Runs of equal parts made one (the counts vary from row to row; the template does not)."""
    out: list[str] = []
    for p in parts:
        if not out or out[-1] != p:
            out.append(p)
    return out


# --- the three families ------------------------------------------------------------------------

_NEEDLE = re.compile(r"One of the special magic numbers for (.+?) is: ([0-9]+)\.")
_ASKED_KEY = re.compile(r"for (.+?) mentioned in the provided text\?")


def parse_niah(text: str, expected: list[str], task: str) -> Parsed:
    key = _ASKED_KEY.search(text).group(1)
    lines = text.split("\n")
    needles = [_NEEDLE.fullmatch(line) for line in lines]
    body = [m for m in needles if m]
    gold = [k for k, m in enumerate(body) if m.group(1) == key]
    skeleton = "\n".join(collapse([
        f"One of the special magic numbers for <KEY> is: <{len(m.group(2))} DIGITS>." if m
        else line for m, line in zip(needles, lines)]))
    skeleton = skeleton.replace(f" for {key} mentioned", " for <KEY> mentioned")
    # the asked key on more lines than it has values: a distractor drew it again
    return Parsed(skeleton, 0.0, len(body), len(body) - len(gold),
                  [k / max(1, len(body) - 1) for k in gold], len(expected),
                  group=len(gold), id_clash=len(gold) > len(expected))


_QUESTION = re.compile(r"^Question ([0-9]{7}): .*$", re.M)
# An MMLU question as upstream writes it (question, then its 4 choices, whitespace made one)
_CHOICES = re.compile(r"Question [0-9]{7}: (.*) A\. (.*) B\. (.*) C\. (.*) D\. (.*)")


def _abstract_question(m: re.Match) -> str:
    """The fixed parts of a question item: "Question <ID>: ", the choice letters, and the
    single spaces between its parts (no newline survives upstream's whitespace rule)."""
    if _CHOICES.fullmatch(m.group(0)) is None:
        return m.group(0)  # not upstream's format: left as it is, so the skeletons differ
    return "Question <ID>: <QUESTION> A. <CHOICE> B. <CHOICE> C. <CHOICE> D. <CHOICE>"
_ASKED_ID = re.compile(r"Question ([0-9]{7}) from the context")
_ORDINAL = re.compile(r"\b([0-9]+)(?:st|nd|rd|th) \(1 indexed\) ")
_EXAMPLES = "\n\nHere are some examples to help you understand the task:\n\n"


def parse_mmlu(text: str, expected: list[str], task: str) -> Parsed:
    params = get_task(task).params
    problem = text[text.rfind("\n\n") + 2:]
    asked = _ASKED_ID.search(problem).group(1)
    nth = _ORDINAL.search(problem)
    end = text.find(_EXAMPLES) if _EXAMPLES in text else text.rfind("\n\n")
    ids = [m.group(1) for m in _QUESTION.finditer(text, 0, end)]
    same = [k for k, i in enumerate(ids) if i == asked]
    gold = same if params["task_type"] == "niah" else \
        same[int(nth.group(1)) - 1:int(nth.group(1))] if nth else same[:1]
    skeleton = _QUESTION.sub(_abstract_question, text)
    skeleton = re.sub(r"\b[0-9]{7}\b", "<ID>", skeleton)
    skeleton = _ORDINAL.sub("<ORDINAL> (1 indexed) ", skeleton)
    skeleton = re.sub(r"\\boxed\{[ABCD]\}", r"\\boxed{<LETTER>}", skeleton)
    skeleton = "\n\n".join(collapse(skeleton.split("\n\n")))
    limit = max(1, params["num_order"])
    return Parsed(skeleton, 0.0, len(ids), len(ids) - 1,
                  [k / max(1, len(ids) - 1) for k in gold], len(expected),
                  fewshot=text.count("\nSolution: "), group=len(same),
                  id_clash=max(Counter(ids).values()) > limit)


_DOCUMENT = re.compile(r"Document ([0-9]{7}):\n(.*)", re.S)
# A HotpotQA paragraph as upstream writes it: its title, a newline, its sentences joined
_PARAGRAPH = re.compile(r"\ADocument [0-9]{7}:\n[^\n]*\n[^\n]*\Z")


def parse_qa(text: str, expected: list[str], task: str, own: tuple[tuple[str, ...],
                                                                  tuple[str, ...]]) -> Parsed:
    support, distractors = own
    paragraphs = text.split("\n\n")
    problem_at = next(k for k in range(len(paragraphs) - 1, -1, -1)
                      if paragraphs[k].startswith(("Text: ", "Question: ", "Please ")))
    if paragraphs[problem_at - 1].startswith("Please "):  # solve: "Please ...\n\nQuestion: "
        problem_at -= 1
    docs = [_DOCUMENT.fullmatch(p) for p in paragraphs[1:problem_at]]
    docs = [(m.group(1), m.group(2)) for m in docs if m]
    bodies = Counter(b for _, b in docs)
    gold_texts = support[:1] if get_task(task).params.get("query_type") == "doc" else support
    gold = [k for k, (_, b) in enumerate(docs) if b in gold_texts]
    skeleton_parts = [paragraphs[0]]
    skeleton_parts += [_PARAGRAPH.sub("Document <ID>:\n<TITLE>\n<SENTENCES>", p)
                       for p in paragraphs[1:problem_at]]
    for p in paragraphs[problem_at:]:
        p = re.sub(r"^Text: [^\n]*\n[^\n]*\nMost relevant document index:$",
                   "Text: <TITLE>\n<SENTENCES>\nMost relevant document index:", p)
        skeleton_parts.append(re.sub(r"^Question: .*$", "Question: <QUESTION>", p, flags=re.S))
    own_count = len(support) + len(distractors)
    return Parsed("\n\n".join(collapse(skeleton_parts)), 0.0, len(docs), len(docs) - own_count,
                  [k / max(1, len(docs) - 1) for k in gold], len(expected),
                  id_clash=max(Counter(i for i, _ in docs).values()) > 1,
                  gold_twice=any(bodies[b] > 1 for b in support))


# --- reading both sides ------------------------------------------------------------------------

def read_reference(folder: Path, L: int, task: str, samples: int) -> list[dict] | None:
    base = folder / str(L) / task
    for name, opener in (("test.jsonl.gz", gzip.open), ("test.jsonl", open)):
        if (base / name).is_file():
            with opener(base / name, "rt", encoding="utf-8") as f:
                return [json.loads(line) for _, line in zip(range(samples), f)]
    return None


def read_ours(out: Path, config: str, L: int, task: str, samples: int) -> list[dict] | None:
    path = out / "data" / config / task / f"{L}.parquet"
    if not path.is_file():
        return None
    return pq.read_table(path).to_pylist()[:samples]


def parse_row(task: str, text: str, expected: list[str], index: int,
              hotpot: Callable[[int], tuple]) -> Parsed:
    if task in ("mk_niah_basic", "mv_niah_basic"):
        return parse_niah(text, expected, task)
    if task.startswith("qa_"):
        return parse_qa(text, expected, task, hotpot(index))
    return parse_mmlu(text, expected, task)


@dataclass
class Side:
    rows: list[Parsed] = field(default_factory=list)

    def mean(self, get) -> float:
        values = [v for r in self.rows for v in _listed(get(r))]
        return statistics.fmean(values) if values else float("nan")

    def sd(self, get) -> float:
        values = [v for r in self.rows for v in _listed(get(r))]
        return statistics.pstdev(values) if len(values) > 1 else 0.0

    def share(self, get) -> float:
        return statistics.fmean(bool(get(r)) for r in self.rows) if self.rows else float("nan")


def _listed(v) -> list[float]:
    return list(v) if isinstance(v, list) else [v]


@dataclass
class Cell:
    task: str
    L: int
    ours: Side
    upstream: Side

    @property
    def identical(self) -> bool:
        skeletons = {r.skeleton for r in self.ours.rows} | {r.skeleton for r in self.upstream.rows}
        return len(skeletons) == 1

    def first_difference(self) -> str:
        a = self.ours.rows[0].skeleton
        b = next((r.skeleton for r in self.upstream.rows if r.skeleton != a), None)
        if b is None:
            b = next(r.skeleton for r in self.ours.rows if r.skeleton != a)
        k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return f"ours {a[max(0, k - 40):k + 60]!r} vs {b[max(0, k - 40):k + 60]!r}"


def compare(ours: Path, config: str, reference: Path, lengths: Sequence[int], samples: int,
            sources: str | None) -> list[Cell]:
    manifest = Manifest.load(ours)
    build = manifest.build(config)
    if build is None:
        raise SystemExit(f"{ours} has no build of config {config!r}")
    tok = load_tokenizer(build.tokenizer.name)
    mode = build.prompt_mode
    hotpot_data = []

    def hotpot(index: int) -> tuple:
        if not hotpot_data:
            hotpot_data.append(read_hotpotqa(resolve("hotpotqa_hub", sources)))
        q = hotpot_data[0].questions[index]
        return q.support, q.distractors

    cells = []
    for L in lengths:
        for task in RULER2_TASKS:
            ref = read_reference(reference, L, task, samples)
            mine = read_ours(ours, config, L, task, samples)
            if ref is None or mine is None:
                continue
            cell = Cell(task, L, Side(), Side())
            for i, row in enumerate(ref):
                expected = row["expected_answer"]
                p = parse_row(task, row["question"], expected if isinstance(expected, list)
                              else [expected], i, hotpot)
                p.fill_raw = row["length"] / L
                cell.upstream.rows.append(p)
            for row in mine:
                p = parse_row(task, row["input"], list(row["outputs"]), row["index"], hotpot)
                p.fill_raw = tok.count(row["input"]) / L
                p.fill_read = tok.prompt_length(row["input"], "", mode) / L
                cell.ours.rows.append(p)
            cells.append(cell)
    return cells


# --- the table ---------------------------------------------------------------------------------

COLUMNS = (
    ("fill raw", lambda r: r.fill_raw, "{:.3f}"),
    ("min fill raw", None, "{:.3f}"),
    ("haystack", lambda r: r.haystack, "{:.1f}"),
    ("items", lambda r: r.items, "{:.1f}"),
    ("gold depth", lambda r: r.gold_depths, "{:.2f}"),
    ("depth sd", "sd", "{:.2f}"),
    ("answers", lambda r: r.answers, "{:.2f}"),
    ("few-shot", lambda r: r.fewshot, "{:.1f}"),
    ("asked group", lambda r: r.group, "{:.2f}"),
    ("id clash", "share:id_clash", "{:.0%}"),
    ("gold twice", "share:gold_twice", "{:.0%}"),
)


def _value(side: Side, name: str, get) -> float:
    if name == "min fill raw":
        return min(r.fill_raw for r in side.rows)
    if get == "sd":
        return side.sd(lambda r: r.gold_depths)
    if isinstance(get, str) and get.startswith("share:"):
        attr = get.split(":", 1)[1]
        return side.share(lambda r: getattr(r, attr))
    return side.mean(get)


def table(cells: Sequence[Cell]) -> str:
    head = ["task", "L", "rows", "template", "fill read (ours)"] + [c[0] for c in COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in cells:
        vals = []
        for name, get, fmt in COLUMNS:
            a, b = _value(c.ours, name, get), _value(c.upstream, name, get)
            vals.append(f"{fmt.format(a)} \\| {fmt.format(b)}")
        read = statistics.fmean(r.fill_read for r in c.ours.rows)
        lines.append(f"| {c.task} | {c.L} | {len(c.ours.rows)} \\| {len(c.upstream.rows)} | "
                     f"{'identical' if c.identical else 'DIFFERENT'} | {read:.3f} | "
                     + " | ".join(vals) + " |")
    return "\n".join(lines)


def summary(cells: Sequence[Cell]) -> dict:
    out = {"cells": [], "template_identical": sum(c.identical for c in cells),
           "tasks": len({c.task for c in cells}),
           "tasks_identical": len({c.task for c in cells} - {c.task for c in cells
                                                              if not c.identical})}
    for c in cells:
        entry = {"task": c.task, "L": c.L, "template_identical": c.identical,
                 "fill_read_ours": statistics.fmean(r.fill_read for r in c.ours.rows)}
        for name, get, _ in COLUMNS:
            entry[name] = {"ours": _value(c.ours, name, get),
                           "upstream": _value(c.upstream, name, get)}
        out["cells"].append(entry)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours", type=Path, required=True, help="a build folder")
    ap.add_argument("--config", default="llama-3.1--v2", help="its RULERv2 config")
    ap.add_argument("--reference", type=Path, required=True,
                    help="upstream's output: <L>/<task>/test.jsonl[.gz]")
    ap.add_argument("--lengths", default="4096,8192")
    ap.add_argument("--samples", type=int, default=50, help="rows per side and cell (first N)")
    ap.add_argument("--sources", default=None, help="the sources the build used (HotpotQA)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    cells = compare(args.ours, args.config, args.reference,
                    [int(x) for x in args.lengths.split(",")], args.samples, args.sources)
    if not cells:
        print("no task x length is in both folders", file=sys.stderr)
        return 1
    print("Each cell: ours | upstream. fill raw = the raw prompt's tokens / L (no chat template "
          "or BOS, as upstream counts); fill read = ours as the model reads it.\n")
    print(table(cells))
    tasks = {c.task for c in cells}
    same = {c.task for c in cells if c.identical}
    print(f"\ntemplate identical: {len(same)}/{len(tasks)} tasks "
          f"({sum(c.identical for c in cells)}/{len(cells)} cells)")
    for c in cells:
        if not c.identical:
            print(f"  {c.task} @ {c.L}: {c.first_difference()}")
    if args.json:
        args.json.write_text(json.dumps(summary(cells), indent=2) + "\n", encoding="utf-8")
    return 0 if same == tasks else 1


if __name__ == "__main__":
    sys.exit(main())
