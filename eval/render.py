"""One row to the exact token ids the model is given, stored compactly.

`Tokenizer.prompt_ids` — the function that defined each row's `length` — renders the prompt
(chat: template + pre-filled answer prefix; base: input + prefix; reasoning: template with a
generation prompt, no prefix). The ids are kept as a 4-byte unsigned `array` (4 bytes per
token against ~36 for a Python list of ints), which is also what crosses between processes.
"""

from __future__ import annotations

from array import array
from typing import Any, Mapping

from ruler.catalog.tokenizer import Tokenizer

TOKEN_TYPECODE = "I"
if array(TOKEN_TYPECODE).itemsize != 4:  # C unsigned int is 4 bytes on every supported platform
    TOKEN_TYPECODE = "L" if array("L").itemsize == 4 else "I"


def token_array(ids: Any = ()) -> array:
    return array(TOKEN_TYPECODE, ids)


class Renderer:
    """Renders rows for one tokenizer, prompt mode and set of chat-template variables.

    Picklable (the tokenizer travels as its load recipe), so a spawned render process can
    rebuild it; a forked one inherits it.
    """

    def __init__(self, tok: Tokenizer, mode: str,
                 template_kwargs: Mapping[str, Any] | None = None):
        self.tok, self.mode = tok, mode
        self.template_kwargs = dict(template_kwargs or {})

    def ids(self, input_text: str, answer_prefix: str) -> array:
        return token_array(self.tok.prompt_ids(input_text, answer_prefix, self.mode,
                                               self.template_kwargs))

    def prompt_text(self, input_text: str, answer_prefix: str = "") -> str | None:
        """The rendered prompt as text in reasoning mode (used to see what the template's
        generation prompt leaves open); else None. A tokenizer without a chat template raises
        the ValueError its `prompt_ids` would."""
        if self.mode != "reasoning":
            return None
        return self.tok.render_reasoning(input_text, self.template_kwargs)

    def is_special_token(self, text: str) -> bool:
        """Whether `text` is one special token, which decoders drop by default (a reasoning
        end marker that is one must be kept in the output to be found)."""
        hf = getattr(self.tok, "hf", None)
        if hf is None:
            return False
        added = getattr(hf, "added_tokens_decoder", {}) or {}
        if any(t.content == text and t.special for t in added.values()):
            return True
        return text in set(getattr(hf, "all_special_tokens", ()) or ())

    # --- the prompt as text, for servers that tokenize it themselves (openai's text and chat
    # APIs): what they are sent and the counts their reports are checked against ----------

    def text(self, input_text: str, answer_prefix: str) -> str:
        """The prompt `ids` renders, as text: tokenized without added special tokens (special
        tokens written in it read as such) it gives those ids. Chat and reasoning: the chat
        template's text (which writes its own BOS, if any); base: input + answer prefix after
        the BOS the tokenizer adds, written out (`bos_text`)."""
        if self.mode == "chat":
            return self.tok.render_chat(input_text, answer_prefix, self.template_kwargs)
        if self.mode == "reasoning":
            return self.tok.render_reasoning(input_text, self.template_kwargs)
        return (self.bos_text or "") + input_text + answer_prefix

    @property
    def bos_text(self) -> str | None:
        """The BOS token as text when the rendered prompts start with it, else None. A server
        given text adds a BOS of its own (as the tokenizer does by default), so a prompt sent
        as text is usually sent without this one."""
        if not hasattr(self, "_bos_text"):
            self._bos_text = self._find_bos_text()
        return self._bos_text

    def _find_bos_text(self) -> str | None:
        hf = getattr(self.tok, "hf", None)
        sp = getattr(self.tok, "sp", None)
        if hf is not None and hf.bos_token and hf.bos_token_id is not None:
            first = self.tok.prompt_ids("x", "", self.mode, self.template_kwargs)[:1]
            return hf.bos_token if first == [hf.bos_token_id] else None
        if sp is not None and getattr(self.tok, "add_bos", False) and self.mode == "base":
            return sp.id_to_piece(sp.bos_id())
        return None

    def user_turn_text(self, input_text: str, answer_prefix: str) -> str:
        """The chat template with one user turn, `input + answer_prefix`, and a generation
        prompt: the prompt upstream RULER's OpenAI client sends (its answer prefix at the end
        of the user's message), for a server that does not continue a pre-filled assistant
        turn. Chat mode only (its count is not the row's `length`)."""
        return self.tok.render_reasoning(input_text + answer_prefix, self.template_kwargs)

    def user_turn_ids(self, input_text: str, answer_prefix: str) -> list[int]:
        return self.tok.encode(self.user_turn_text(input_text, answer_prefix))

    def continued_prefix(self, input_text: str, answer_prefix: str) -> str:
        """The answer prefix as the chat template renders it at the end of the prompt: the
        text after the user turn and its generation prompt (Gemma's template, for one, trims
        it). A server that renders the rest itself and appends the pre-filled assistant turn
        as sent (llama.cpp) then sees exactly the build's text; one that renders the turn
        with the template (vLLM) renders it the same. The prefix itself when the rendering
        does not start with the user turn and generation prompt."""
        full = self.text(input_text, answer_prefix)
        opened = self.tok.render_reasoning(input_text, self.template_kwargs)
        return full[len(opened):] if full.startswith(opened) else answer_prefix
