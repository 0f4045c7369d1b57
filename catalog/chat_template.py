"""A Hugging Face chat template rendered as transformers renders it, without transformers.

`import transformers` and its loading of a tokenizer cost about 3 s of CPU at the start of
every build, verify and eval, most of a short build's wall time, for a tokenizer that needs
only the `tokenizers` backend and its Jinja template. Where the registry's pinned files make
transformers' tokenizer the `tokenizer.json` as it is (`tokenizer_registry.direct_files`),
the template is rendered here as `transformers.utils.chat_template_utils.render_jinja_template`
of the pinned transformers renders it: the same sandboxed environment and options, its own
`tojson`, `raise_exception` and `strftime_now`, the named special tokens of
`special_tokens_map` as variables, and its way of continuing a final assistant message (a
tag after the message, the text cut at the tag). tests/builder/test_chat_template.py renders
the registry's templates both ways on every task's prompts, in every mode, and requires the
same text; a template this module does not cover (`{% generation %}` blocks, several named
templates) is left to transformers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, Mapping, Sequence

#: transformers' named special tokens (`SPECIAL_TOKENS_ATTRIBUTES`), passed to the template.
SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                       "cls_token", "mask_token")
#: What transformers appends to the message it continues, then cuts the rendered text at.
_CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "
_GENERATION_BLOCK = re.compile(r"\{%-?\s*generation\s*-?%\}")


def renders_here(template: Any) -> bool:
    """Whether `template` (tokenizer_config.json's `chat_template`, or None) is one this
    module renders as transformers does: one template, without assistant-mask blocks."""
    return template is None or (isinstance(template, str)
                                and not _GENERATION_BLOCK.search(template))


def special_tokens(config: Mapping[str, Any]) -> dict[str, str]:
    """The named special tokens of a tokenizer_config.json, as transformers'
    `special_tokens_map` gives them to a template (a token written as an AddedToken record
    by its content)."""
    out = {}
    for name in SPECIAL_TOKEN_NAMES:
        value = config.get(name)
        if isinstance(value, Mapping):
            value = value.get("content")
        if isinstance(value, str):
            out[name] = value
    return out


@dataclass(frozen=True)
class ChatTemplate:
    source: str
    special_tokens: Mapping[str, str] = field(default_factory=dict)

    def render(self, messages: Sequence[Mapping[str, str]], *, add_generation_prompt: bool,
               continue_final_message: bool = False,
               template_kwargs: Mapping[str, Any] | None = None) -> str:
        """The text of `messages` (role, content); with `continue_final_message`, cut just
        after the last message's content, so the model continues it. Raises what transformers
        raises: jinja2's errors, ValueError where the template drops the continued message."""
        turns = [dict(m) for m in messages]
        final = turns[-1]["content"] if continue_final_message else ""
        if continue_final_message:
            if "content" not in self.source:
                raise ValueError('continue_final_message is set to "content" but this is not '
                                 'an accepted field in the chat_template')
            turns[-1]["content"] = final + _CONTINUE_TAG
        variables = {**self.special_tokens, **(template_kwargs or {})}
        rendered = _compiled(self.source).render(
            messages=turns, tools=None, documents=None,
            add_generation_prompt=add_generation_prompt, **variables)
        if not continue_final_message:
            return rendered
        tag = _CONTINUE_TAG.strip()
        if final.strip() not in rendered or tag not in rendered:
            raise ValueError(  # transformers' words
                "continue_final_message is set but the final message does not appear in the "
                "chat after applying the chat template! This can happen if the chat template "
                "deletes portions of the final message. Please verify the chat template and "
                "final message in your chat to ensure they are compatible."
                f"Final message to continue: {final.strip()}\nRendered chat:\n{rendered}")
        at = rendered.rindex(tag)
        if rendered[at:at + len(_CONTINUE_TAG)] == _CONTINUE_TAG:
            return rendered[:at]
        return rendered[:at].rstrip()  # the template trimmed the message's trailing space


@lru_cache(maxsize=16)
def _compiled(source: str):
    import jinja2.ext
    from jinja2.exceptions import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        # transformers' filter: no HTML escaping, and its options exposed
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)
