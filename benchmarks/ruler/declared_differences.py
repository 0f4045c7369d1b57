"""Differences from upstream HEAD (NVIDIA/RULER c3f5e3b) of the declared tasks a folder holds:
configurations of the paper's Section 5 that HEAD cannot generate as the paper describes, built
here as the paper-era generator (4f6507e) did, and budgets grown where the answer cannot fit.
The card's differences add one row for each that applies to the folder's declared tasks (as
its manifest records them), with the effect measured on this builder's rows:

    ruler build --tokenizer T --suite section5 --lengths 4k,8k,16k,32k --samples 50 --out OUT
    python -m perf.suite_differences OUT

(llama-3.1 and qwen2.5, 200 rows per task and tokenizer; HEAD's behaviour as reproduced in
`../shared/notes/paper-analysis.md` §1.6.)
"""

from __future__ import annotations

from typing import Callable, Mapping

from ruler.benchmarks.ruler.task_args import NIAH_BUDGET, VT_BUDGET
from ruler.catalog.declared import DeclaredTask
from ruler.kernel.markup import md_code

Row = tuple[str, str, str]


def _int(rec: DeclaredTask, name: str, default: int) -> int:
    value = rec.args.get(name, default)
    return value if isinstance(value, int) else default


def _long_chains(rec: DeclaredTask) -> bool:
    return rec.task == "variable_tracking" and _int(rec, "num_hops", 4) >= 5


def _chains(rec: DeclaredTask) -> bool:
    return rec.task == "variable_tracking" and _int(rec, "num_chains", 1) > 1


def _vt_budget(rec: DeclaredTask) -> bool:
    return rec.task == "variable_tracking" and _int(rec, "tokens_to_generate", VT_BUDGET) \
        > VT_BUDGET


def _niah_budget(rec: DeclaredTask) -> bool:
    return rec.task == "niah" and _int(rec, "tokens_to_generate", NIAH_BUDGET) > NIAH_BUDGET


def _no_example(rec: DeclaredTask) -> bool:
    return rec.task == "common_words_extraction" and _int(rec, "num_fewshot", 1) == 0


def _other_count(rec: DeclaredTask) -> bool:
    return rec.task == "common_words_extraction" and _int(rec, "num_cw", 10) != 10


#: (applies to a declared task?, what differs, why, with the measured effect)
RULES: tuple[tuple[Callable[[DeclaredTask], bool], str, str], ...] = (
    (_long_chains,
     "variable tracking with 5 or more hops is built: the one-shot example's noise is sized "
     "from the chain's own line count up (each chain line before its own noise line), as for "
     "any chain",
     "upstream HEAD cannot build it: its example search starts from 5 noise lines, fewer "
     "than the chain's hops + 1 lines, and raises `ValueError: Sample larger than population` "
     "(reproduced for hops 5, 6 and 10), so Figure 3's hop = 6 and 10 lines have no HEAD rows; "
     "the paper-era code (4f6507e) built them by splitting the noise into sentence fragments. "
     "Measured here: every row follows its chain (verify's check), the example within its "
     "500 tokens"),
    (_chains,
     "variable tracking with more than one chain: each chain of the one-shot example has its "
     "own value, so the example's answer (the asked chain's names) is right",
     "upstream HEAD gives every example chain the same value (12345, then one shared draw) "
     "while its shown answer lists chain 0's names only: with c chains of h hops the "
     "demonstration leaves out (c - 1)(h + 1) names that hold the asked value (3, 9 and 21 for "
     "Figure 3's 2, 4 and 8 chains at 2 hops); the paper-era code gave each chain its own "
     "value. Measured here: no row's example has two chains with the asked value, and in "
     "every row the example's answer is the chain that holds it"),
    (_vt_budget,
     "variable tracking with more than 7 names to answer gets 6 tokens a name "
     "(`tokens_to_generate` 66 for 10 hops) instead of upstream's 30",
     "upstream keeps 30 whatever the answer: measured here, the 11 names of a 10-hop answer "
     "alone take {h10_llama} tokens with llama-3.1 and {h10_qwen} with qwen2.5, over 30 in "
     "{h10_over}, so a right answer would be cut before it is complete (7 names, 6 hops: "
     "{h6_spread}, within 30, which they keep)"),
    (_niah_budget,
     "needles whose answer holds several UUIDs get 40 tokens a UUID (`tokens_to_generate` "
     "above 128)",
     "upstream keeps 128: 8 UUIDs take 176-282 tokens with the Llama-3 and Qwen2 tokenizers "
     "(paper-analysis §1.6 item 10)"),
    (_other_count,
     "common words asking for another number of words than 10: the question and the answer "
     "prefix say that number (and the example shows that many), with 12 tokens of budget a "
     "word above 10",
     "upstream HEAD keeps \"the 10 most common words\" and \"The top 10 words\" whatever "
     "`num_cw` is, while its gold holds `num_cw` words (reproduced with 5): the question "
     "contradicts the answer it is scored on"),
    (_no_example,
     "common words without the one-shot example (`num_fewshot` 0, the paper's footnote 7): "
     "the prompt starts with the task's own instruction",
     "upstream HEAD's `num_fewshot: 0` leaves the example's separator, so its prompt starts "
     "with a stray newline; the paper-era code had no switch. Measured here: no prompt starts "
     "with a newline, none holds a solved example"),
)

#: What `perf.suite_differences` measured on the section5 build (see the module docstring).
MEASURED = {
    "h10_llama": "30-40 (median 34)",
    "h10_qwen": "31-39 (median 34)",
    "h10_over": "399 of the 400 rows",
    "h6_spread": "19-25 tokens",
}


def declared_differences(declared: Mapping[str, DeclaredTask]) -> list[Row]:
    """The differences that apply to `declared` (task name -> record), one row each, scoped
    to the tasks they concern."""
    rows = []
    for applies, what, why in RULES:
        names = sorted(n for n, rec in declared.items() if applies(rec))
        if names:
            rows.append((", ".join(md_code(n) for n in names), what, why.format(**MEASURED)))
    return rows
