"""Mistral's Tekken tokenizer as shipped by the `mistral-common` package.

Lets a machine with only PyPI access build with `--tokenizer mistral-nemo`: the package ships
`tekken_240718.json`, and its instruct encoder renders the chat turn with a pre-filled
assistant prefix exactly like the Hugging Face folder's template (tested to equal ids).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ruler.builder.hashing import sha256_text
from ruler.builder.tokenizer import Tokenizer, TokenizerIdentity


class TekkenTokenizer(Tokenizer):
    def __init__(self, path: Path, identity: TokenizerIdentity):
        import mistral_common
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

        self.mistral = MistralTokenizer.from_file(str(path))
        self.tekken = self.mistral.instruct_tokenizer.tokenizer
        self.identity = identity
        object.__setattr__(self.identity, "chat_template_sha256", sha256_text(
            f"mistral-common {mistral_common.__version__} {type(self.mistral.instruct_tokenizer).__name__}"))

    @property
    def has_chat_template(self) -> bool:
        return True

    def encode(self, text: str) -> list[int]:
        return self.tekken.encode(text, bos=False, eos=False)

    def token_starts(self, text: str) -> list[int]:
        starts, pos = [], 0
        # Decoding token by token can split a multi-byte character; track bytes, map to chars.
        encoded = text.encode("utf-8")
        byte_to_char = [i for i, ch in enumerate(text) for _ in range(len(ch.encode("utf-8")))]
        byte_to_char.append(len(text))
        for tid in self.encode(text):
            starts.append(byte_to_char[min(pos, len(encoded))])
            pos += len(self.tekken.id_to_byte_piece(tid))
        return starts

    def _chat_ids(self, input_text: str, answer_prefix: str,
                  template_kwargs: Mapping[str, Any]) -> list[int]:
        from mistral_common.protocol.instruct.messages import AssistantMessage, UserMessage

        return self._encode([UserMessage(content=input_text),
                             AssistantMessage(content=answer_prefix, prefix=True)],
                            template_kwargs)

    def _reasoning_ids(self, input_text: str, template_kwargs: Mapping[str, Any]) -> list[int]:
        from mistral_common.protocol.instruct.messages import UserMessage

        # A request ending with the user turn: the encoder closes it ([/INST]), as a
        # generation prompt does.
        return self._encode([UserMessage(content=input_text)], template_kwargs)

    def _encode(self, messages: list, template_kwargs: Mapping[str, Any]) -> list[int]:
        from mistral_common.protocol.instruct.request import ChatCompletionRequest

        if template_kwargs:
            raise ValueError(f"tokenizer {self.name!r} (mistral-common) has no Jinja chat "
                             f"template to pass variables to: {sorted(template_kwargs)}")
        return self.mistral.encode_chat_completion(ChatCompletionRequest(messages=messages)).tokens

    def _base_ids(self, text: str) -> list[int]:
        return self.tekken.encode(text, bos=True, eos=False)
