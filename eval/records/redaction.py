"""A model's answer holding a secret: kept out of what is written, never out of what is scored.

A server (or a model asked the wrong thing) may put the API key into its answer. The key is
never written (`ruler.kernel.scrub`: every known secret of 8+ characters becomes
`<redacted>`), but the answer is scored as the model wrote it: a key that is also a word of
the answer (a placeholder key `accommodation`, a gold word) must not turn a right answer
into a wrong one.

So a prediction whose stored text had to be redacted carries `redacted`: per secret removed,
where its `<redacted>` marks stand in the stored text and a salted, slow fingerprint of the
secret (PBKDF2, never the secret or a fast hash of it). Scoring restores the answer as
generated where the process holds a secret of that fingerprint (`ruler eval`'s own scoring
always does; `ruler score` where the same key is set) and scores that; where it holds none,
the row cannot be scored on what the model said: it is counted as failed, with the reason,
never scored on the redacted text. Reports count the rows scored on a restored answer.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
from dataclasses import dataclass
from typing import Any, Sequence

from ruler.kernel.scrub import REDACTED, known_secrets

#: How a fingerprint is made: PBKDF2-HMAC-SHA256 with a random salt, this many rounds.
ROUNDS = 100_000
SCHEME = "pbkdf2-sha256"


@dataclass(frozen=True)
class Redacted:
    """`text` with the known secrets replaced by REDACTED, and where (offset in `text`, the
    secret replaced there), in order."""

    text: str
    spans: tuple[tuple[int, str], ...] = ()


def redact(text: str, secrets: Sequence[str] | None = None) -> Redacted:
    """`text` with every occurrence of a known secret (`secrets`: default the process's)
    replaced, leftmost first and the longest where two start at one place, as
    `scrub.redact_known` replaces them."""
    secrets = sorted(set(known_secrets() if secrets is None else secrets), key=len,
                     reverse=True)
    out: list[str] = []
    spans: list[tuple[int, str]] = []
    pos = size = 0
    while True:
        found = [(at, -len(s), s) for s in secrets if (at := text.find(s, pos)) >= 0]
        if not found:
            break
        at, _, secret = min(found)
        out.append(text[pos:at])
        size += at - pos
        spans.append((size, secret))
        out.append(REDACTED)
        size += len(REDACTED)
        pos = at + len(secret)
    out.append(text[pos:])
    return Redacted("".join(out), tuple(spans))


def record(spans: Sequence[tuple[int, str]], salt: bytes) -> list[dict[str, Any]]:
    """The `redacted` field of a prediction: per secret, its fingerprint and the offsets of
    its marks in the stored text."""
    by_secret: dict[str, list[int]] = {}
    for at, secret in spans:
        by_secret.setdefault(secret, []).append(at)
    return [{"key": fingerprint(secret, salt), "at": at} for secret, at in by_secret.items()]


def new_salt() -> bytes:
    return os.urandom(16)


@functools.lru_cache(maxsize=64)
def fingerprint(secret: str, salt: bytes) -> str:
    digest = hashlib.pbkdf2_hmac("sha256", secret.encode("utf-8"), salt, ROUNDS)
    return f"{SCHEME}${ROUNDS}${salt.hex()}${digest.hex()}"


def _secret_of(print_: str) -> str | None:
    """The secret this process holds whose fingerprint is `print_` (None: none)."""
    try:
        scheme, rounds, salt, digest = print_.split("$")
        if scheme != SCHEME or int(rounds) != ROUNDS:
            return None
        salt_bytes = bytes.fromhex(salt)
    except ValueError:
        return None
    for secret in known_secrets():
        if hmac.compare_digest(fingerprint(secret, salt_bytes).rsplit("$", 1)[1], digest):
            return secret
    return None


def shape_problem(value: Any, text: Any) -> str:
    """What is wrong with a record's `redacted` field beside its stored `text` ("" when it
    is sound): a list of {"key": str, "at": [offsets of a REDACTED mark in the text]}."""
    if not isinstance(value, list) or not value:
        return "redacted is not a list of {key, at}"
    for entry in value:
        if not isinstance(entry, dict) or not isinstance(entry.get("key"), str) \
                or not isinstance(entry.get("at"), list) or not entry["at"]:
            return "redacted is not a list of {key, at}"
        for at in entry["at"]:
            if isinstance(at, bool) or not isinstance(at, int) or at < 0 \
                    or not isinstance(text, str) or text[at:at + len(REDACTED)] != REDACTED:
                return f"redacted names offset {at!r}, where the prediction has no {REDACTED}"
    return ""


def restore(text: str, value: list[dict[str, Any]]) -> str | None:
    """The answer as generated: `text` (stored, redacted) with each secret back at its marks;
    None when this process holds no secret of one of the fingerprints (another key, or none:
    the answer cannot be restored). `value` is sound (`shape_problem`)."""
    marks: list[tuple[int, str]] = []
    for entry in value:
        secret = _secret_of(entry["key"])
        if secret is None:
            return None
        marks += [(at, secret) for at in entry["at"]]
    for at, secret in sorted(marks, reverse=True):
        text = text[:at] + secret + text[at + len(REDACTED):]
    return text


#: A row whose answer could not be restored, as scores.json lists its reason.
UNRESTORED = (f"the stored answer had the API key replaced by {REDACTED} and this process "
              f"holds no key of its fingerprint to restore it: set the key the run used "
              f"(OPENAI_API_KEY) and score again")
