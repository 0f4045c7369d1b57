"""Mistral's Tekken tokenizer as shipped by the `mistral-common` package.

Lets a machine with only PyPI access build with `--tokenizer mistral-nemo`: the package ships
`tekken_240718.json`. It is the registry's `mistral-nemo`, whose pin is the Hugging Face
folder, so it must give exactly that folder's ids (tested for every task's prompt in every
prompt mode). mistral-common's own chat encoder does not: it strips the trailing spaces of an
assistant turn (an answer prefix may end "they are: "; RULER appends the prefix verbatim), and
it reads special-token text in a message ("</s>") as text, where the folder's tokenizer reads
it as the control token. So the package supplies the vocabulary, the BPE and the special
tokens, and the prompt is laid out as the folder's chat template lays out RULER's turns.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator, Mapping

from ruler.catalog.tokenizer import Tokenizer, TokenizerIdentity


class TekkenTokenizer(Tokenizer):
    def __init__(self, path: Path, identity: TokenizerIdentity, tekken: Any = None):
        # `tekken`: the package's Tekkenizer of `path`, already loaded (the registry shares
        # one per pinned file and process: loading takes seconds, and it is only read here).
        if tekken is None:
            from mistral_common.tokens.tokenizers.tekken import Tekkenizer

            tekken = Tekkenizer.from_file(path)
        self.tekken = tekken
        self.identity = identity
        self._byte_lengths: dict[int, int] = {}
        self._special = {self.tekken.id_to_piece(i): i
                         for i in range(self.tekken.num_special_tokens)}
        self._special_lengths = sorted({len(s) for s in self._special}, reverse=True)
        self._special_start = re.compile(
            "[" + re.escape("".join(sorted({s[0] for s in self._special}))) + "]")
        self._turn = (self.tekken.get_special_token("[INST]"),
                      self.tekken.get_special_token("[/INST]"))

    @property
    def has_chat_template(self) -> bool:
        return True

    def _segments(self, text: str) -> Iterator[tuple[int, str | int]]:
        """(character offset, plain text or a special token's id), in order: special-token
        text is matched leftmost-longest, as a Hugging Face tokenizer matches added tokens."""
        last = 0
        for m in self._special_start.finditer(text):
            at = m.start()
            if at < last:
                continue
            found = next((text[at:at + n] for n in self._special_lengths
                          if text[at:at + n] in self._special), None)
            if found is None:
                continue
            if at > last:
                yield last, text[last:at]
            yield at, self._special[found]
            last = at + len(found)
        if last < len(text):
            yield last, text[last:]

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for _, part in self._segments(text):
            if isinstance(part, int):
                ids.append(part)
            else:
                ids += self.tekken.encode(part, bos=False, eos=False)
        return ids

    def _byte_length(self, tid: int) -> int:
        # Memoised: a haystack repeats its tokens, and the package's lookup is slow.
        n = self._byte_lengths.get(tid)
        if n is None:
            n = self._byte_lengths[tid] = len(self.tekken.id_to_byte_piece(tid))
        return n

    def token_starts(self, text: str) -> list[int]:
        starts: list[int] = []
        for offset, part in self._segments(text):
            if isinstance(part, int):
                starts.append(offset)
                continue
            ids = self.tekken.encode(part, bos=False, eos=False)
            pos = 0
            if part.isascii():  # one byte per character: byte offsets are character offsets
                for tid in ids:
                    starts.append(offset + min(pos, len(part)))
                    pos += self._byte_length(tid)
                continue
            # A token can end inside a multi-byte character: walk bytes, map them to chars.
            byte_to_char = [i for i, ch in enumerate(part)
                            for _ in range(len(ch.encode("utf-8")))]
            byte_to_char.append(len(part))
            for tid in ids:
                starts.append(offset + byte_to_char[min(pos, len(byte_to_char) - 1)])
                pos += self._byte_length(tid)
        return starts

    def _chat_ids(self, input_text: str, answer_prefix: str,
                  template_kwargs: Mapping[str, Any]) -> list[int]:
        # The assistant turn continues with the prefix, verbatim; special tokens split the
        # folder's rendered text, so the prefix is encoded on its own there too.
        return self._reasoning_ids(input_text, template_kwargs) + self.encode(answer_prefix)

    def _reasoning_ids(self, input_text: str, template_kwargs: Mapping[str, Any]) -> list[int]:
        if template_kwargs:
            raise ValueError(f"tokenizer {self.name!r} (mistral-common) has no Jinja chat "
                             f"template to pass variables to: {sorted(template_kwargs)}")
        # <s>[INST]user[/INST]: the folder's template for one user turn (it has no generation
        # prompt beyond closing the turn).
        begin, end = self._turn
        return [self.tekken.bos_id, begin, *self.encode(input_text), end]

    def _base_ids(self, text: str) -> list[int]:
        return [self.tekken.bos_id, *self.encode(text)]
