"""One row to the exact token ids the model is given, stored compactly.

`Tokenizer.prompt_ids` — the function that defined each row's `length` — renders the prompt
(chat: template + pre-filled answer prefix; base: input + prefix; reasoning: template with a
generation prompt, no prefix). The ids are kept as a 4-byte unsigned `array` (4 bytes per
token against ~36 for a Python list of ints), which is also what crosses between processes.
"""

from __future__ import annotations

from array import array
from typing import Any, Mapping

from ruler.builder.tokenizer import Tokenizer

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
        """The rendered prompt as text, where the tokenizer renders through a Jinja template
        (used to see what the template's generation prompt leaves open); else None."""
        render = getattr(self.tok, "render_reasoning", None)
        if self.mode != "reasoning" or render is None:
            return None
        return render(input_text, self.template_kwargs)

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
