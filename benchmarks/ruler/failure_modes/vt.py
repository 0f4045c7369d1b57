"""Variable-tracking rows (`paper-analysis.md` §4.3 vt, §4.4 VT and copying modes).

The input is read as upstream writes it: the task's instruction opens the asked task (its
last occurrence; before it, the solved example, when there is one), `VAR X = ...` lines make
the chains, the question names the value. The asked chain, the other chains, the example's
names and its answer are all read off the row, so any number of chains and hops is read the
same way.

Names are matched with letter boundaries. The asked chain's names are matched in any case, as
the metric matches them; the other chains' and the example's case-sensitively (the example's
3-letter names are often English words in lower case: "the" is no name), and names the row
does not hold only as 5 capital letters ([ours]: §4.2 and §4.6 reconciled with §4.3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ruler.benchmarks.ruler.failure_modes.base import Answer, Found, LabelRow
from ruler.benchmarks.ruler.failure_modes.text import contains, duplicates, find_all
from ruler.benchmarks.ruler.tasks import VARIABLE_TRACKING

#: The task's first sentence (the catalog's template): the asked task starts at its last
#: occurrence, the example before it.
INSTRUCTION = VARIABLE_TRACKING.template.split("\n")[0]
STATEMENT = re.compile(r"VAR ([A-Z]+) = (?:VAR ([A-Z]+)|(\d+))")
QUERY = re.compile(r"assigned the value (\d+) in the text above")
UNKNOWN_NAME = re.compile(r"(?<![A-Za-z])[A-Z]{5}(?![A-Za-z])")


@dataclass(frozen=True)
class VtRow:
    asked: tuple[str, ...]  # T: the names whose chain holds the asked value
    others: tuple[str, ...]  # O: the names of the other chains of the asked task
    example: tuple[str, ...]  # I: the names of the example's statements
    example_answer: tuple[str, ...]  # I_ans: the names the example answers with


def chains(text: str) -> dict[str, str]:
    """Every name of `text`'s statements -> the value at its chain's root ("" when the chain
    is cut)."""
    parent: dict[str, str] = {}
    value: dict[str, str] = {}
    for m in STATEMENT.finditer(text):
        if m.group(3) is not None:
            value[m.group(1)] = m.group(3)
        else:
            parent[m.group(1)] = m.group(2)
    roots: dict[str, str] = {}
    for name in [*value, *parent]:
        seen, at = set(), name
        while at in parent and at not in seen:
            seen.add(at)
            at = parent[at]
        roots[name] = value.get(at, "")
    return roots


def read(text: str, outputs: tuple[str, ...]) -> VtRow:
    start = text.rfind(INSTRUCTION)
    icl, main = (text[:start], text[start:]) if start > 0 else ("", text)
    roots = chains(main)
    queries = QUERY.findall(main)
    query = queries[-1] if queries else ""
    asked = [n for n, v in roots.items() if v == query and query] or list(outputs)
    example = list(chains(icl))
    they_are = icl.rfind("they are:")
    answer = icl[they_are + len("they are:"):].split() if they_are >= 0 else []
    return VtRow(asked=tuple(dict.fromkeys(asked)),
                 others=tuple(n for n in roots if n not in asked),
                 example=tuple(example), example_answer=tuple(answer))


def label(row: LabelRow, ans: Answer, found: Found) -> None:
    vt = read(row.input, row.outputs)
    pred = ans.text
    asked = {n for n in vt.asked if contains(pred, n, "names")}
    asked_set = {n.upper() for n in vt.asked}
    others = {n for n in vt.others if n.upper() not in asked_set
              and contains(pred, n, "names", ignore_case=False)}
    example = {n for n in vt.example if n.upper() not in asked_set
               and contains(pred, n, "names", ignore_case=False)}
    known = set(vt.asked) | set(vt.others) | set(vt.example)
    unknown = [n for n in UNKNOWN_NAME.findall(pred) if n not in known and n != "VAR"]

    found.add("empty", not (asked or others or example or unknown))
    if vt.example:
        found.add("copy_oneshot", bool(example) and len(example) >= len(asked))
        found.add("copy_oneshot", _in_order(pred, vt.example_answer))
    found.add("other_chain", bool(others))
    found.add("incomplete_chain", bool(asked) and not (others or example or unknown)
              and 0 < ans.score < 1)
    found.add("hallucinated_name", bool(unknown))
    names = [pred[i:i + len(n)] for n in known for i in find_all(pred, n, "names",
                                                                   n.upper() in asked_set)]
    found.add("duplicated", duplicates(names + unknown))


def _in_order(pred: str, names: tuple[str, ...]) -> bool:
    """Whether every name of the example's answer is in `pred`, in that order."""
    if not names:
        return False
    at = 0
    for n in names:
        hits = [i for i in find_all(pred, n, "names", ignore_case=False) if i >= at]
        if not hits:
            return False
        at = hits[0] + len(n)
    return True
