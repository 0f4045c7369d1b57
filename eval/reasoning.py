"""Reasoning mode: the answer of a model that thinks first, and rows whose thinking never ended.

A reasoning model writes its thinking, closes it with an end marker (`</think>` for most open
models) and then answers. RULER's metrics are applied, unchanged, to the answer only: the text
after the first end marker (as vLLM's reasoning parsers split it). A row is in one of these
states, stored with its raw output so a result can always be re-read:

- `ended`: the end marker was found; the answer is the text after it.
- `budget_exhausted`: the model was still thinking when it hit the reserved output budget.
  Its answer is empty (a zero under RULER's metrics, as upstream scores an empty prediction),
  and the report counts these rows in a column of their own, so they are not a silent zero.
- `unterminated`: the model stopped (end of sequence) inside its thinking: empty answer.
- `no_reasoning`: no thinking at all (e.g. a template that switched it off); the whole output
  is the answer.

"Thinking" is known from the start marker (`<think>` for the end marker `</think>`): in the
output, or left open at the end of the prompt by a chat template that starts the thinking for
the model (DeepSeek-R1, Qwen3 thinking models). When no start marker is known, an output
without an end marker counts as thinking only when it ran into the budget.

With `--reasoning-parser NAME`, vLLM's own parser of that name splits reasoning from answer
instead (it needs vLLM installed and the tokenizer the parser expects).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

DEFAULT_END_MARKER = "</think>"


@dataclass(frozen=True)
class Extraction:
    answer: str
    state: str


def start_marker_for(end_marker: str) -> str | None:
    """`<think>` for `</think>` (any `</tag>`); None when the end marker has no such form."""
    m = re.fullmatch(r"</([^<>/\s]+)>", end_marker)
    return f"<{m.group(1)}>" if m else None


def opens_reasoning(prompt_text: str, end_marker: str = DEFAULT_END_MARKER) -> bool:
    """Whether a rendered prompt leaves a thinking section open for the model to continue
    (its last start marker comes after its last end marker)."""
    start = start_marker_for(end_marker)
    if start is None:
        return False
    opened = prompt_text.rfind(start)
    return opened >= 0 and opened > prompt_text.rfind(end_marker)


def extract_answer(raw: str, finish_reason: str, end_marker: str = DEFAULT_END_MARKER,
                   prompt_opens_reasoning: bool = False) -> Extraction:
    """Split a raw output into the answer RULER scores and the row's reasoning state."""
    _, found, answer = raw.partition(end_marker)
    if found:
        return Extraction(answer, "ended")
    start = start_marker_for(end_marker)
    thinking = prompt_opens_reasoning or start is None or start in raw
    if finish_reason == "length" and thinking:
        return Extraction("", "budget_exhausted")
    if thinking and start is not None:
        return Extraction("", "unterminated")
    return Extraction(raw, "no_reasoning")


def vllm_parser_extractor(name: str, tokenizer: Any,
                          template_kwargs: dict | None = None) -> Callable[[str, str], Extraction]:
    """An extractor built on vLLM's reasoning parser `name` (vLLM must be importable)."""
    from ruler.kernel.errors import RulerError

    try:
        from vllm.reasoning import ReasoningParserManager
        try:
            from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
        except ImportError:  # where older vLLM versions keep it
            from vllm.entrypoints.openai.protocol import ChatCompletionRequest
    except ImportError as e:
        raise RulerError(f"--reasoning-parser needs vLLM installed: {e}") from None
    try:
        parser = ReasoningParserManager.get_reasoning_parser(name)(tokenizer)
    except KeyError as e:
        raise RulerError(str(e).strip("'\"")) from None
    except Exception as e:  # e.g. the parser's marker tokens are not in this vocabulary
        raise RulerError(f"vLLM reasoning parser {name!r} does not fit this tokenizer: "
                         f"{type(e).__name__}: {e}") from None
    # Some parsers read the request (e.g. whether thinking was switched off).
    request = ChatCompletionRequest(messages=[{"role": "user", "content": ""}], model="ruler",
                                    chat_template_kwargs=dict(template_kwargs or {}))

    end = getattr(parser, "end_token", None) or getattr(parser, "reasoning_end_str", None)

    def extract(raw: str, finish_reason: str) -> Extraction:
        reasoning, content = parser.extract_reasoning(raw, request)
        if content is not None:
            return Extraction(content, "ended" if reasoning is not None else "no_reasoning")
        if reasoning is None:
            return Extraction("", "no_reasoning")
        if isinstance(end, str) and end and end in raw:  # ended, then nothing was answered
            return Extraction("", "ended")
        return Extraction("", "budget_exhausted" if finish_reason == "length"
                          else "unterminated")

    return extract
