"""The parameters RULER's needle family (and ONERULER's) can build, checked when a task is
registered (`catalog.register_task`, `FamilySpec.params_problem`): a task the generator could
not build, or would build into rows `ruler verify` rejects, is refused then, in one line,
instead of failing (or writing such rows) in the middle of a build.

What the NIAH generator supports (`ruler.benchmarks.ruler.niah`):
- `type_haystack`: essay (the essay corpus, needles between sentences at depths of the
  40-point grid), noise (copies of one sentence) or needle (distractor needles), needles
  placed one per line;
- `type_needle_k`, `type_needle_v`: words (adjective-noun keys), numbers (7 digits) or uuids;
- `num_needle_k`, `num_needle_v`, `num_needle_q`: whole numbers >= 1 (k is raised to q, as
  upstream raises it); on an essay haystack each needle takes its own grid depth, so at most
  40 needles (k x v).
Any of these together builds, and every row's gold items are recorded in text order.
"""

from __future__ import annotations

from typing import Any, Mapping

from ruler.catalog.depths import DEPTHS

HAYSTACKS = ("essay", "noise", "needle")
NEEDLE_TYPES = ("words", "numbers", "uuids")
COUNTS = ("num_needle_k", "num_needle_v", "num_needle_q")


def _count_problem(params: Mapping[str, Any]) -> str | None:
    for name in COUNTS:
        value = params.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"{name} must be a whole number >= 1, got {value!r}"
    return None


def niah_params_problem(params: Mapping[str, Any]) -> str | None:
    """Why RULER's NIAH generator cannot build a task with `params`, or None."""
    haystack = params.get("type_haystack")
    if haystack not in HAYSTACKS:
        return f"type_haystack {haystack!r} is none of {', '.join(HAYSTACKS)}"
    for name in ("type_needle_k", "type_needle_v"):
        if params.get(name) not in NEEDLE_TYPES:
            return f"{name} {params.get(name)!r} is none of {', '.join(NEEDLE_TYPES)}"
    if problem := _count_problem(params):
        return problem
    needles = max(params["num_needle_k"], params["num_needle_q"]) * params["num_needle_v"]
    if haystack == "essay" and needles > len(DEPTHS):
        return (f"{needles} needles on an essay haystack: each takes its own depth of the "
                f"{len(DEPTHS)}-point grid, so at most {len(DEPTHS)} (num_needle_k x "
                f"num_needle_v)")
    return None


def oneruler_niah_params_problem(params: Mapping[str, Any]) -> str | None:
    """Why ONERULER's NIAH generator cannot build a task with `params`, or None: upstream's
    book haystack, word keys (the translated nouns), number values; no more keys asked than
    drawn; at most 40 needles (one grid depth each)."""
    wanted = {"type_haystack": "book", "type_needle_k": "words", "type_needle_v": "numbers"}
    wrong = [f"{k} {params.get(k)!r} (must be {v!r})" for k, v in wanted.items()
             if params.get(k) != v]
    if wrong:
        return "ONERULER's needle tasks have a book haystack, word keys and number values: " \
            + ", ".join(wrong)
    if problem := _count_problem(params):
        return problem
    if not isinstance(params.get("relevant_needle"), bool):
        return f"relevant_needle must be true or false, got {params.get('relevant_needle')!r}"
    if params["num_needle_q"] > params["num_needle_k"]:
        return (f"num_needle_q {params['num_needle_q']} > num_needle_k "
                f"{params['num_needle_k']}: the keys asked are drawn from the needles' keys "
                f"(upstream raises k to q before it calls the generator)")
    needles = params["num_needle_k"] * params["num_needle_v"]
    if needles > len(DEPTHS):
        return f"at most {len(DEPTHS)} needles (one grid depth each), got {needles}"
    return None
