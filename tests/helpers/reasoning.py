"""A real tokenizer folder whose chat template has a thinking section, for reasoning-mode tests.

The folder is a copy of the pinned qwen2.5 tokenizer (real vocabulary, real special tokens);
only its chat template is replaced by a Qwen3-style one: the generation prompt opens the
assistant turn with `<think>\\n` (the model thinks, closes with `</think>`, then answers), and
`enable_thinking=false` pre-fills an empty thinking section instead.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

THINKING_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- if enable_thinking is defined and enable_thinking is false -%}"
    "{{- '<think>\\n\\n</think>\\n\\n' -}}"
    "{%- else -%}"
    "{{- '<think>\\n' -}}"
    "{%- endif -%}"
    "{%- endif -%}"
)

#: What the template renders for one user turn (written out by hand, to check the renderer).
GENERATION_PROMPT = "<|im_start|>assistant\n<think>\n"
NO_THINKING_PROMPT = "<|im_start|>assistant\n<think>\n\n</think>\n\n"


def expected_prompt(user: str, enable_thinking: bool = True) -> str:
    return (f"<|im_start|>user\n{user}<|im_end|>\n"
            + (GENERATION_PROMPT if enable_thinking else NO_THINKING_PROMPT))


def thinking_tokenizer(source: Path, dest: Path) -> Path:
    """Copy the tokenizer folder `source` to `dest` with the thinking chat template."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "tokenizer.json", dest / "tokenizer.json")
    config = json.loads((source / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = THINKING_TEMPLATE
    (dest / "tokenizer_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return dest
