"""Keep Hub tokens out of every message: server text can echo the request's headers.

A Hub-compatible server (a mirror, a proxy, a misconfigured endpoint) may put the request's
`Authorization: Bearer hf_...` header into its error body, and that body ends up in our error
messages. Every message that can carry server text passes `scrub`, and the CLI scrubs every
error it prints, so a token is never shown whatever the path.
"""

from __future__ import annotations

import os
import re

REDACTED = "<redacted>"
# Hub user and org tokens (hf_ + 30-odd letters and digits), and any bearer credential.
_HF_TOKEN = re.compile(r"hf_[A-Za-z0-9]{8,}")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\",;]+")


def _known_tokens() -> list[str]:
    """The token the Hub client would send, wherever it comes from (HF_TOKEN, the login)."""
    tokens = [os.environ.get(k) for k in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")]
    try:
        from huggingface_hub import get_token

        tokens.append(get_token())
    except Exception:  # no huggingface_hub, an unreadable token file: nothing more to hide
        pass
    return [t for t in tokens if t and len(t) >= 4]


def scrub(text: str, extra: tuple[str, ...] = ()) -> str:
    """`text` without the Hub token, any `hf_...`-shaped string or bearer credential."""
    for token in (*extra, *_known_tokens()):
        text = text.replace(token, REDACTED)
    text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    return _HF_TOKEN.sub(REDACTED, text)
