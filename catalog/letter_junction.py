"""The letter junction: text cut after a letter, before a non-ASCII punctuation mark or symbol.

Chinese and Japanese text has no spaces, so none of the junctions builder.counting cuts at
(a space, a newline, a needle's hyphen) occurs inside a sentence. Some tokenizers have another
one there: "...说" | "。他..." or "...数字" | "：123". Their pre-tokenizer is one regular
expression (`REVIEWED_PATTERNS`) in which every alternative that matches a letter ends with a
run of letters (`[^\\r\\n\\p{L}\\p{N}]?\\p{L}+`; tekken's and o200k's runs also take marks
\\p{M}, and o200k's may end with a contraction "'s", whose apostrophe is ASCII), so no
pre-token holds a letter followed by a character that is neither a letter nor a mark: the
text after the letter is split as it is split alone (the pattern has no look-behind; its
look-aheads only follow whitespace), byte-level BPE merges stay inside a pre-token, and the
tokens of the whole are the tokens of the parts. That holds where nothing before the
pre-tokenizer joins the two sides: no normalizer, or NFC, which composes a character only with
a following mark or jamo (neither is an opener), and no added token whose text holds the
junction (added tokens are matched in the raw text first).

SentencePiece tokenizers (llama-2, gemma-3) have no such boundary: their merges run over the
whole text and their vocabularies hold pieces such as "的。" (tests/builder/test_counting.py
finds them), so they never get these cuts.

Which tokenizers qualify is read from the tokenizer itself (`hf_has_letter_junctions`,
`TiktokenTokenizer.letter_junctions`), and tests/builder/test_counting.py proves the
property for every registry tokenizer that qualifies, on Chinese and Japanese book text and
adversarial strings.
"""

from __future__ import annotations

import json
import unicodedata
from functools import lru_cache
from typing import Any, Iterable

#: Pre-tokenizer regular expressions whose letter alternatives end with a run of letters (and
#: marks) and never hold a letter followed by a non-letter, non-mark character: Llama 3's,
#: Qwen 2's (digits one by one), tekken's (Mistral Nemo), cl100k_base's and o200k_base's.
REVIEWED_PATTERNS = frozenset({
    # llama-3.1
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
    r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    # qwen2.5
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+",
    # mistral-nemo (tekken)
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    # cl100k_base (gpt-4)
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"
    r"\s++$|\s*[\r\n]|\s+(?!\S)|\s",
    # o200k_base (gpt-4o)
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
    r"[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
})

#: Normalizers that join nothing across such a junction (None: no normalizer).
_SAFE_NORMALIZERS = (None, {"type": "NFC"})


@lru_cache(maxsize=4096)
def opens_after_letter(ch: str) -> bool:
    """Whether `ch` may start the text after a letter junction: a non-ASCII punctuation mark
    or symbol (full-width and CJK punctuation, quotation marks, ...) that NFC leaves alone.
    ASCII is left out: added tokens ("[INST]", "<|eot_id|>") and contractions ("'s") are
    ASCII."""
    return (ch > "\x7f" and unicodedata.category(ch)[0] in "PS"
            and unicodedata.is_normalized("NFC", ch))


@lru_cache(maxsize=1 << 16)  # units are book sentences, drafted again for every probe
def last_letter_cut(text: str) -> int:
    """The last offset i of `text` with a letter at i - 1 and an opener at i; 0 if none."""
    for i in range(len(text) - 1, 0, -1):
        if opens_after_letter(text[i]) and text[i - 1].isalpha():
            return i
    return 0


def cut_units(head: str, units: Iterable[str], tail_first: str) -> list[str]:
    """`head + "".join(units) + tail_first` cut at each unit's last letter junction (a unit
    without one is glued to the piece before it): one piece per unit, mostly, as recurring
    as the units themselves."""
    pieces, current = [], head
    for unit in units:
        cut = last_letter_cut(unit)
        if cut:
            pieces.append(current + unit[:cut])
            current = unit[cut:]
        else:
            current += unit
    pieces.append(current + tail_first)
    return pieces


def hf_has_letter_junctions(backend: Any) -> bool:
    """Whether a `tokenizers.Tokenizer` is additive at letter junctions: a byte-level BPE
    whose pre-tokenizer is one reviewed pattern, split off as it is (Isolated), no normalizer
    or NFC, and no added token holding a junction."""
    if type(backend.model).__name__ != "BPE":
        return False
    normalizer = backend.normalizer
    if (json.loads(normalizer.__getstate__()) if normalizer is not None else None) \
            not in _SAFE_NORMALIZERS:
        return False
    pre = backend.pre_tokenizer
    state = json.loads(pre.__getstate__()) if pre is not None else {}
    steps = state.get("pretokenizers", []) if state.get("type") == "Sequence" else [state]
    if len(steps) != 2:
        return False
    split, byte_level = steps
    if not (split.get("type") == "Split" and split.get("behavior") == "Isolated"
            and not split.get("invert")
            and split.get("pattern", {}).get("Regex") in REVIEWED_PATTERNS
            and byte_level.get("type") == "ByteLevel" and not byte_level.get("use_regex")
            and not byte_level.get("add_prefix_space")):
        return False
    # an added token is matched in the raw text first: none may hold a junction, nor match
    # only as a single word (which depends on the character before it)
    return not any(last_letter_cut(t.content) or t.single_word
                   for t in backend.get_added_tokens_decoder().values())
