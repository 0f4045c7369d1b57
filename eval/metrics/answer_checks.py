"""What an answer shows of the set-up, checked against its own row: a copy of the prompt, or an
answer far longer than the row's output budget allows.

A server that echoes its input (a completions endpoint with `echo`, a proxy that returns
prompt + answer) or a base model continuing the context writes the haystack back: the needles
are in it, so upstream's metrics score such an answer as right (100 on RULER's NIAH tasks) or
partly right, though the model answered nothing. And predictions generated without the row's
budget as their cap (lm-eval's `max_gen_toks` raised, a server that ignores `max_tokens`) can
run to thousands of tokens against budgets of 30 to 128. The score stays upstream's; the
report's set-up health section counts these rows (`eval.metrics.health`), from marks `ruler
score` sets on the prediction records while it has the rows at hand (`eval.scoring.score`).
"""

from __future__ import annotations

from typing import Any, Mapping

#: Answers shorter than this (characters) are not checked for a copy: a stretch of the prompt
#: that short is a quoted needle or key, which a right answer holds.
COPY_MIN_CHARS = 200
#: Windows of this many characters, spread evenly over the answer, are looked up in the
#: prompt; the answer copies the prompt when most of them are found there verbatim.
COPY_WINDOW = 64
COPY_WINDOWS = 5
#: "Far past the budget": more than this many times the row's output budget.
PAST_BUDGET = 2
#: Where the predictions record no output token count, an answer's tokens are estimated from
#: its characters at this many per token: generous (English averages about 4), so that only
#: answers far longer than the budget are flagged.
CHARS_PER_TOKEN = 8

#: The marks `ruler score` sets on a prediction record it scored (read by `health_facts`).
BUDGET_MARK = "_budget"  # the row's own output budget (its tokens_to_generate, or the
#                          smaller `output_budget` it ran with)
COPY_MARK = "_copies_prompt"
PAST_MARK = "_past_budget"


def might_copy(answer: str) -> bool:
    """Whether an answer is long enough to be checked against its prompt."""
    return len(answer) >= COPY_MIN_CHARS


def copies_prompt(answer: str, prompt: str) -> bool:
    """Whether `answer` repeats long stretches of `prompt` verbatim: most of COPY_WINDOWS
    windows of COPY_WINDOW characters, spread over it, are found in the prompt."""
    if not might_copy(answer):
        return False
    last = len(answer) - COPY_WINDOW
    starts = {round(k * last / (COPY_WINDOWS - 1)) for k in range(COPY_WINDOWS)}
    found = sum(answer[s:s + COPY_WINDOW] in prompt for s in starts)
    return found * 2 > len(starts)


def past_budget(record: Mapping[str, Any], answer: str, budget: int) -> bool:
    """Whether an answer ran far past its row's output budget: its output tokens where the
    predictions count them, else its characters at CHARS_PER_TOKEN a token."""
    tokens = record.get("output_tokens")
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
        return tokens > PAST_BUDGET * budget
    return len(answer) > PAST_BUDGET * budget * CHARS_PER_TOKEN
