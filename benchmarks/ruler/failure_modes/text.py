"""The matching conventions the failure modes share (`paper-analysis.md` §4.2, all ours):
cutting an answer into items, finding a known string with boundaries, SQuAD's answer
normalisation, and the common-prefix and common-substring measures."""

from __future__ import annotations

import os
import re
import string
from collections import Counter
from typing import Iterable, Sequence

#: What an item is stripped of (§4.2), besides whitespace.
_ITEM_STRIP = " \t\r\n.,;:'\"`()[]*"
_NUMBERED = re.compile(r"\d+\.\s")
_ENUMERATOR = re.compile(r"^\(?[A-Za-z][.)]\s+(?=\S)")  # "A. ", "b) ", "(c) " before an item
_SEPARATORS = re.compile(r"[,;\n]")
_WHITESPACE = re.compile(r"\s+")

#: Boundaries of a known string, per kind of value (§4.2): a match must not touch these.
BOUNDARY = {
    "numbers": "0-9",
    "uuids": "0-9a-fA-F",
    "words": "A-Za-z0-9-",
    "names": "A-Za-z",
}


def collapse(text: str) -> str:
    """Every whitespace run as one space."""
    return _WHITESPACE.sub(" ", text).strip()


def items(pred: str, phrases: Iterable[str] = ()) -> list[str]:
    """The answer cut into items (§4.2): on numbered markers ("1. ") where there are two or
    more, else on commas, semicolons and newlines where there are any, else on whitespace;
    each stripped of whitespace, a letter enumerator ("A. father") and quoting/list
    punctuation, empty ones dropped. `phrases` (a vocabulary's multi-word entries, "ad hoc")
    stay whole when splitting on whitespace."""
    return [s for s in (_ENUMERATOR.sub("", p.strip()).strip(_ITEM_STRIP)
                        for p in raw_items(pred, phrases)) if s]


def word_items(pred: str, phrases: Iterable[str] = (), cut: bool = False) -> list[str]:
    """`items` that hold a letter: a word list's items (a list number alone is no word).
    `cut`: the answer ended at its output budget, so its last item may be a word's start
    ("loaf 2", "spws"): it is not read where there are others."""
    words = [i for i in items(pred, phrases) if any(c.isalpha() for c in i)]
    return words[:-1] if cut and len(words) > 1 else words


def raw_items(pred: str, phrases: Iterable[str] = ()) -> list[str]:
    """`items` before stripping (fwe's noise token is a run of dots, which stripping drops)."""
    if len(_NUMBERED.findall(pred)) >= 2:
        return _NUMBERED.split(pred)
    if _SEPARATORS.search(pred):
        return _SEPARATORS.split(pred)
    kept = pred
    for phrase in phrases:
        if " " in phrase:
            kept = re.sub(re.escape(phrase), lambda m: m.group().replace(" ", "\0"), kept,
                          flags=re.I)
    return [p.replace("\0", " ") for p in kept.split()]


def is_numbered(pred: str) -> bool:
    """Whether `items` cuts this answer on numbered markers."""
    return len(_NUMBERED.findall(pred)) >= 2


def find_all(text: str, value: str, kind: str, ignore_case: bool = True) -> list[int]:
    """Start offsets of `value` in `text` where it does not touch a character of its kind's
    boundary class (a number inside a longer digit run is not that number)."""
    if (value.lower() not in text.lower()) if ignore_case else (value not in text):
        return []  # most values are not there at all: no pattern to compile
    b = BOUNDARY[kind]
    pattern = re.compile(f"(?<![{b}]){re.escape(value)}(?![{b}])", re.I if ignore_case else 0)
    return [m.start() for m in pattern.finditer(text)]


def contains(text: str, value: str, kind: str, ignore_case: bool = True) -> bool:
    """Whether `find_all` finds `value` (a plain substring test first: most values are not
    there at all, and a row can have thousands)."""
    return bool(value) and bool(find_all(text, value, kind, ignore_case))


def duplicates(values: Iterable[str]) -> bool:
    """Whether some value occurs twice or more (case-insensitively)."""
    return any(n > 1 for n in Counter(v.lower() for v in values).values())


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix, case-insensitively."""
    return len(os.path.commonprefix([a.lower(), b.lower()]))


_HEX = set(string.hexdigits)


def common_hex_run(a: str, b: str) -> int:
    """The most hex digits in a common substring of two short strings (a UUID corrupted in
    the middle keeps long runs of the gold's)."""
    a, b = a.lower(), b.lower()
    best = 0
    prev = [0] * (len(b) + 1)  # hex digits of the common substring ending at a[i-1], b[j-1]
    for i in range(1, len(a) + 1):
        cur = [0] * (len(b) + 1)
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                cur[j] = prev[j - 1] + (a[i - 1] in _HEX)
                best = max(best, cur[j])
        prev = cur
    return best


def shares_substring(pred: str, text: str, length: int) -> bool:
    """Whether `pred` and `text` share a substring of `length` characters (case as given).
    Any such substring contains one of `pred`'s aligned blocks of half that length, so only
    those blocks' occurrences in `text` are extended: fast on a long input."""
    if length <= 0:
        return True
    if len(pred) < length:
        return False
    step = max(1, length // 2)
    for k in range(0, len(pred) - step + 1, step):
        block = pred[k:k + step]
        at, tried = text.find(block), 0
        while at >= 0 and tried < 200:
            left = 0
            while k - left > 0 and at - left > 0 and pred[k - left - 1] == text[at - left - 1]:
                left += 1
            right = step
            while k + right < len(pred) and at + right < len(text) \
                    and pred[k + right] == text[at + right]:
                right += 1
            if left + right >= length:
                return True
            at, tried = text.find(block, at + 1), tried + 1
    return False


def mask_echo(pred: str, scaffold: str, least: int = 30) -> str:
    """`pred` with every stretch of `least`+ characters that the task's own text (`scaffold`:
    its answer prefix and question) also holds replaced by NULs: an answer restating "The
    special magic number for ... is" or "According to the chain(s) ... they are:" echoes the
    task, it does not copy the context ([ours], §4.6's echoed scaffolding)."""
    out = list(pred)
    i = 0
    while i + least <= len(pred):
        if pred[i:i + least] not in scaffold:
            i += 1
            continue
        j = i + least
        while j < len(pred) and pred[i:j + 1] in scaffold:
            j += 1
        out[i:j] = "\0" * (j - i)
        i = j
    return "".join(out)


# --- QA: SQuAD's answer normalisation and token F1 -------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = string.punctuation.encode()


def squad_norm(text: str) -> str:
    """SQuAD's normalisation: lower case, punctuation dropped, articles dropped, whitespace
    collapsed. (ASCII punctuation is deleted from the UTF-8 bytes, where its bytes never
    occur inside another character's: the same text as `str.translate`, several times faster
    on a long context.)"""
    bare = text.lower().encode().translate(None, _PUNCT).decode()
    return " ".join(_ARTICLES.sub(" ", bare).split())


def token_f1(a: str, b: str) -> float:
    """SQuAD's token F1 of two normalised answers."""
    ta, tb = a.split(), b.split()
    common = sum((Counter(ta) & Counter(tb)).values())
    if not ta or not tb or not common:
        return 0.0
    p, r = common / len(ta), common / len(tb)
    return 2 * p * r / (p + r)


def first_index(seq: Sequence[str], run: Sequence[str], starts: int | None = None) -> int:
    """The first position < `starts` (default: any) where `run` occurs in `seq` as a
    consecutive run, or -1."""
    n, m = len(seq), len(run)
    if not m:
        return -1
    last = n - m if starts is None else min(n - m, starts - 1)
    for i in range(0, last + 1):
        if list(seq[i:i + m]) == list(run):
            return i
    return -1
