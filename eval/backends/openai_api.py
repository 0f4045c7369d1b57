"""How `--backend openai` sends a row (`--api`), and how it learns what the server makes of it.

The three forms are docs/evaluating.md's ("Servers"); why each is as it is: `completions-ids`
sends the row's token ids, so the server neither re-tokenizes nor adds a second BOS.
`completions-text` sends the rendered prompt without the BOS it starts with, since the server
adds its own (kept when the probe shows it adds none). `chat` sends the answer prefix as the
build's template renders it at the end of the prompt (`Renderer.continued_prefix`): llama.cpp
appends a pre-filled turn verbatim, and Gemma's template, for one, trims the prefix's spaces;
llama.cpp's server also repeats a continued turn at the start of its reply, which is cut off.

The probe (`negotiate`): before the first row, one tiny request of the chosen form (two or
three where there is a choice to settle) with `max_tokens` 1, whose `usage.prompt_tokens` is
compared with the build's count of the same prompt. Equal counts do not prove equal prompts (a
space more or less may keep the count), so where a server shows its chat rendering without
generating (llama.cpp's /apply-template, vLLM's /tokenize) the probe's is compared whole.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from os.path import commonprefix
from typing import Any, Callable

from ruler.eval.backends.base import GenRequest, prompt_list
from ruler.eval.backends.openai_replies import (
    choice_text,
    finish_reason,
    first_choice,
    usage_count,
)
from ruler.kernel.errors import RulerError

APIS = ("completions-ids", "completions-text", "chat")
DEFAULT_API = "completions-ids"
PREFIX_TURNS = ("auto", "assistant", "user")
ENDPOINTS = {"completions-ids": "/completions", "completions-text": "/completions",
             "chat": "/chat/completions"}
#: vLLM's request fields that continue the final (assistant) message instead of opening a new
#: turn after it; servers that do not know them ignore them, or refuse them (400/422).
CONTINUE_FIELDS = {"continue_final_message": True, "add_generation_prompt": False}
#: The probe's conversation: short, plain, and with an answer prefix of several words, so that
#: a server repeating the pre-filled turn in its reply (llama.cpp) is told from one that does
#: not (vLLM) by a one-token reply.
PROBE_INPUT = "Which colour is the sky on a clear day? Answer in one word."
#: Spaces at both ends, as RULER's prefixes have: a template that trims the turn and a server
#: that does not (or the reverse) differ right there.
PROBE_PREFIX = " The colour of the sky on a clear day is: "

#: What other API to use when the server refuses one, said in the error.
INSTEAD = {
    "completions-ids": "if it takes text prompts only (llama-cpp-python's llama_cpp.server, "
                       "Ollama), use --api completions-text or --api chat",
    "completions-text": "if it has a chat endpoint only (hosted APIs), use --api chat",
    "chat": "use --api completions-ids (token ids) or --api completions-text",
}


class Rejected(Exception):
    """The server refused a request (an HTTP status that retrying will not change)."""

    def __init__(self, status: int, text: str):
        super().__init__(f"HTTP {status}: {text}")
        self.status, self.text = status, text


#: `send(endpoint, body)`: the server's 200 answer as JSON (retrying what is transient), or
#: `Rejected`.
Send = Callable[[str, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Wire:
    """How this run's rows are sent, as settled by the probe."""

    api: str
    prefix_turn: str | None = None  # chat: "assistant" (continued) | "user" (appended)
    continue_fields: bool = False  # chat, assistant: vLLM's CONTINUE_FIELDS are sent
    echoes_prefix: bool = False  # chat, assistant: the reply starts with the pre-filled text
    send_bos: bool = False  # text: the rendering's BOS stays in the text (the server adds none)
    checked: bool = True  # the server reports usage.prompt_tokens: every row is checked

    @property
    def endpoint(self) -> str:
        return ENDPOINTS[self.api]

    def body(self, r: GenRequest, renderer: Any) -> dict[str, Any]:
        """The request's prompt fields (`prompt`, or `messages` and the chat options)."""
        if self.api == "completions-ids":
            return {"prompt": prompt_list(r.prompt_ids)}
        if r.input_text is None or r.answer_prefix is None:
            raise RulerError(f"--api {self.api} sends the row's text, and the request for "
                             f"{r.key} carries none")
        if self.api == "completions-text":
            text = renderer.text(r.input_text, r.answer_prefix)
            bos = renderer.bos_text
            if bos and not self.send_bos and text.startswith(bos):
                text = text[len(bos):]
            return {"prompt": text}
        if not r.answer_prefix:  # the user turn alone, the server opens the reply
            messages = [{"role": "user", "content": r.input_text}]
        elif self.prefix_turn == "user":
            messages = [{"role": "user", "content": r.input_text + r.answer_prefix}]
        else:  # the prefix as the build's template renders it (trimmed, say)
            messages = [{"role": "user", "content": r.input_text},
                        {"role": "assistant",
                         "content": renderer.continued_prefix(r.input_text, r.answer_prefix)}]
        body: dict[str, Any] = {"messages": messages}
        if self.continue_fields and r.answer_prefix:
            body.update(CONTINUE_FIELDS)
        if renderer.template_kwargs:
            body["chat_template_kwargs"] = dict(renderer.template_kwargs)
        return body

    def answer(self, data: Any, body: dict[str, Any]) -> tuple[Any, str]:
        """(text, finish_reason) of a 200 answer to `body` (the text as sent: not a string
        when it is no answer); `openai_replies.Damaged` when the reply has no choice."""
        choice = first_choice(data)
        text = choice_text(choice, self.api == "chat")
        sent = prefilled(body)
        if self.echoes_prefix and isinstance(text, str) and sent and text.startswith(sent):
            text = text[len(sent):]  # the server repeated the pre-filled turn
        return text, finish_reason(choice)

    def expected_tokens(self, r: GenRequest, renderer: Any) -> int:
        """The prompt tokens the server must count for this request: the row's ids, or, with
        the answer prefix in the user turn, that rendering's (a few tokens more or less)."""
        if self.api == "chat" and self.prefix_turn == "user":
            return len(renderer.user_turn_ids(r.input_text, r.answer_prefix))
        return len(r.prompt_ids)

    def expected_text(self, r: GenRequest, renderer: Any) -> str:
        """The build's text of the prompt this request must become on the server."""
        if self.api == "chat" and self.prefix_turn == "user":
            return renderer.user_turn_text(r.input_text, r.answer_prefix)
        return renderer.text(r.input_text, r.answer_prefix)

    def describe(self) -> str:
        """How the prompt is sent, in a few words, for run.json and the report."""
        if self.api == "completions-ids":
            return "token ids, exactly the build's"
        if self.api == "completions-text":
            return ("the rendered prompt as text, with its BOS" if self.send_bos else
                    "the rendered prompt as text, its BOS left to the server")
        if self.prefix_turn == "user":
            return ("chat messages, the answer prefix at the end of the user's message "
                    "(as upstream RULER's API client sends it)")
        return ("chat messages, the answer prefix as a pre-filled assistant turn the server "
                "continues" + (" (continue_final_message sent, as vLLM wants it)"
                               if self.continue_fields else ""))

    def record(self) -> dict[str, Any]:
        return {"api": self.api, "prompt": self.describe(),
                "answer_prefix": {"chat": f"{self.prefix_turn} turn"}.get(self.api, "prompt"),
                "continue_final_message": self.continue_fields,
                "server_repeats_prefix": self.echoes_prefix,
                "bos_in_text": self.send_bos if self.api == "completions-text" else None,
                "prompt_tokens_checked": self.checked}


def prefilled(body: dict[str, Any]) -> str | None:
    """The pre-filled assistant turn a chat request ends with, if it does."""
    last = (body.get("messages") or [{}])[-1]
    return last.get("content") if last.get("role") == "assistant" else None


def prompt_tokens(data: Any) -> int | float | None:
    """The server's usage.prompt_tokens as a number, in whatever numeric form it came
    (`openai_replies.usage_count`), where it reports one."""
    return usage_count(data, "prompt_tokens").value


#: `server_render(body)`: the server's own rendering of a chat request, where it offers one
#: without generating (llama.cpp's /apply-template: ("text", prompt); vLLM's /tokenize:
#: ("ids", tokens)), else None.
ServerRender = Callable[[dict[str, Any]], "tuple[str, Any] | None"]


@dataclass
class Negotiated:
    wire: Wire
    mismatch: str = ""  # the probe's prompt differs from the build's rendering: how
    exact: str = ""  # the probe's prompt was compared whole, not only counted: how
    note: str = ""  # what else the probe found (a form the server refused)


def negotiate(api: str, prefix_turn: str, renderer: Any, send: Send,
              server_render: ServerRender = lambda body: None) -> Negotiated:
    """Settle `api` with the server through the probe (see the module's docstring). `api`
    and `prefix_turn` come from `OpenAIOptions`, which refused any other value."""
    probe = GenRequest("probe", renderer.ids(PROBE_INPUT, PROBE_PREFIX), 1,
                       input_text=PROBE_INPUT, answer_prefix=PROBE_PREFIX)
    if api == "chat":
        return _negotiate_chat(prefix_turn, renderer, probe, send, server_render)
    wire = Wire(api)
    if api == "completions-text" and renderer.bos_text is None:
        wire = replace(wire, send_bos=True)  # nothing to leave out
    got, want = _probe(wire, probe, renderer, send)
    if got is None:
        return Negotiated(replace(wire, checked=False))
    if api == "completions-text" and not wire.send_bos and got == want - 1:
        # The server added no BOS of its own: send the rendering's.
        with_bos = replace(wire, send_bos=True)
        again, _ = _probe(with_bos, probe, renderer, send)
        if again == want:
            return Negotiated(with_bos)
    if got != want:
        what = "token-id prompt" if api == "completions-ids" else "text prompt"
        return Negotiated(wire, f"for a probe {what} the server counted {got} prompt tokens, "
                                f"the build's tokenizer {want}")
    return Negotiated(wire)


def _negotiate_chat(prefix_turn: str, renderer: Any, probe: GenRequest, send: Send,
                    server_render: ServerRender) -> Negotiated:
    if renderer.mode != "chat":
        raise RulerError(f"--api chat sends chat messages, which the server renders with its "
                         f"chat template; --mode {renderer.mode} prompts are not chat turns "
                         f"(base: input + answer prefix; reasoning needs the whole output): "
                         f"use --api completions-ids or --api completions-text")
    tried: list[tuple[Wire, int | float | None, int]] = []
    refused: Rejected | None = None  # the pre-filled assistant turn, refused
    if prefix_turn in ("auto", "assistant"):
        try:
            wire, body, data = _send_prefilled(renderer, probe, send)
        except Rejected as e:
            if prefix_turn == "assistant":
                raise
            refused = e  # e.g. a template that refuses to end on an assistant turn
    if prefix_turn in ("auto", "assistant") and refused is None:
        text, _ = wire.answer(data, body)
        sent = prefilled(body)
        wire = replace(wire, echoes_prefix=bool(sent and isinstance(text, str)
                                                and text.startswith(sent)))
        got, want = prompt_tokens(data), wire.expected_tokens(probe, renderer)
        if got == want:
            return _compared(wire, probe, renderer, server_render)
        if got is None:
            if prefix_turn == "assistant":
                return Negotiated(replace(wire, checked=False))
            # Nothing tells whether the server continued the turn: put the prefix where
            # every server reads it, as upstream RULER's API client does.
            return Negotiated(Wire("chat", "user", checked=False))
        tried.append((wire, got, want))
    if prefix_turn in ("auto", "user"):
        user = Wire("chat", "user")
        try:
            got, want = _probe(user, probe, renderer, send)
        except Rejected as e:
            if refused is None:
                raise
            raise Rejected(e.status, f"{e.text[:150]} (and with the answer prefix as a "
                                     f"pre-filled assistant turn: HTTP {refused.status}: "
                                     f"{refused.text[:150]})") from None
        settled = None
        if got is None:
            settled = Negotiated(replace(user, checked=False))
        elif got == want:
            settled = _compared(user, probe, renderer, server_render)
        if settled is not None:
            if refused is not None:
                settled.note = (f"the server refused a pre-filled assistant turn (HTTP "
                                f"{refused.status}: {refused.text[:150]})")
            return settled
        tried.append((user, got, want))
    said = "; ".join(f"with the answer prefix {_WHERE[w.prefix_turn]} it counted {got} prompt "
                     f"tokens, the build's template {want}" for w, got, want in tried)
    # Neither placement renders like the build's template: keep the first tried (the build's
    # own rendering, where tried) if the user lets the run go on.
    return Negotiated(tried[0][0], f"the server's chat template does not render the build's "
                                   f"prompt: for a probe conversation, {said}")


def _send_prefilled(renderer: Any, probe: GenRequest,
                    send: Send) -> tuple[Wire, dict[str, Any], dict[str, Any]]:
    """The probe with its answer prefix as a pre-filled assistant turn, with vLLM's fields
    that continue it, or without them for a server that refuses them (400/422)."""
    wire = Wire("chat", "assistant", continue_fields=True)
    body = wire.body(probe, renderer)
    try:
        return wire, body, send(wire.endpoint, body)
    except Rejected as e:
        if e.status not in (400, 422):
            raise
    wire = replace(wire, continue_fields=False)
    body = wire.body(probe, renderer)
    return wire, body, send(wire.endpoint, body)


_WHERE: dict[str | None, str] = {"assistant": "as a pre-filled assistant turn",
                                 "user": "at the end of the user turn"}


def _compared(wire: Wire, probe: GenRequest, renderer: Any,
              server_render: ServerRender) -> Negotiated:
    """The counts agree; where the server shows its rendering, compare it whole (a template
    that differs in a space or a newline may well give the same count)."""
    body = wire.body(probe, renderer)
    shown = server_render(body)
    if shown is None:
        return Negotiated(wire)
    kind, value = shown
    if kind == "ids":
        want_ids = list(renderer.user_turn_ids(probe.input_text, probe.answer_prefix)
                        if wire.prefix_turn == "user" else probe.prompt_ids)
        if list(value) == want_ids:
            return Negotiated(wire, exact="the probe's token ids equal the build's")
        at = len(commonprefix([list(value), want_ids]))  # where they first differ
        return Negotiated(wire, f"the server renders the probe conversation to other token "
                                f"ids than the build's template (from position {at} on)")
    want_text, got_text = wire.expected_text(probe, renderer), str(value)
    bos = renderer.bos_text or ""
    if bos:  # a server tokenizing the text adds its BOS itself, and may leave it out here
        want_text, got_text = want_text.removeprefix(bos), got_text.removeprefix(bos)
    if got_text == want_text:
        return Negotiated(wire, exact="the probe's text equals the build's")
    at = len(commonprefix([got_text, want_text]))  # where they first differ
    return Negotiated(wire, f"the server renders the probe conversation otherwise than the "
                            f"build's template, from character {at} on: server "
                            f"{got_text[max(0, at - 20):at + 20]!r}, build "
                            f"{want_text[max(0, at - 20):at + 20]!r}")


def _probe(wire: Wire, probe: GenRequest, renderer: Any,
           send: Send) -> tuple[int | float | None, int]:
    """(the server's count, the build's) for the probe sent as `wire` sends rows."""
    data = send(wire.endpoint, wire.body(probe, renderer))
    return prompt_tokens(data), wire.expected_tokens(probe, renderer)
