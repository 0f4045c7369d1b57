"""Keep secrets out of every line ruler prints: server text can echo the request's headers.

A Hub-compatible server (a mirror, a proxy, a misconfigured endpoint) or an OpenAI-compatible
one may put the request's `Authorization: Bearer ...` header, or the token itself, into an
error body, a file name or a URL it hands back, and that text ends up in our messages, in
huggingface_hub's own log lines (its retry warnings name the URL) and progress bars. Two
layers: every message built from server text passes `scrub`, and the CLI runs each command
inside `scrubbed_output()`, which scrubs everything written to stdout and stderr, so a secret
is never shown whatever the path.
"""

from __future__ import annotations

import io
import logging
import os
import re
import sys
import threading
from contextlib import contextmanager, suppress
from typing import Iterator, TextIO

REDACTED = "<redacted>"
# Hub user and org tokens (hf_ + 30-odd letters and digits), and any bearer credential.
_HF_TOKEN = re.compile(r"hf_[A-Za-z0-9]{8,}")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\",;&]+")
# Where the process's credentials come from: the Hub client's and the OpenAI backend's.
_SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY")
_registered: set[str] = set()
# Shorter values are placeholders (OPENAI_API_KEY=EMPTY for a local vLLM), not secrets:
# replacing them would garble ordinary words in the output.
_MIN_SECRET = 8


def register_secret(value: str | None) -> None:
    """A credential this process holds that did not come from the environment (e.g. an API
    key passed in code): scrubbed from every message from now on."""
    if value and len(value) >= _MIN_SECRET:
        _registered.add(value)


def known_secrets() -> list[str]:
    """The secrets this process holds (environment, login, registered), longest first."""
    tokens = [os.environ.get(k) for k in _SECRET_ENV] + sorted(_registered)
    # no huggingface_hub, an unreadable token file: nothing more to hide
    with suppress(Exception):
        from huggingface_hub import get_token

        tokens.append(get_token())
    # longest first: a secret that contains another is replaced whole
    return sorted({t for t in tokens if t and len(t) >= _MIN_SECRET}, key=len, reverse=True)


def redact_known(text: str) -> str:
    """`text` with the known secrets replaced, and nothing else: for text that is data (a
    model's answer, a name a server gave), where `scrub`'s patterns would also change
    ordinary words ("bearer of ...")."""
    for token in known_secrets():
        text = text.replace(token, REDACTED)
    return text


def scrub(text: str, extra: tuple[str, ...] = ()) -> str:
    """`text` without the known secrets, any `hf_...`-shaped string or bearer credential."""
    for token in (*extra, *known_secrets()):
        text = text.replace(token, REDACTED)
    text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    return _HF_TOKEN.sub(REDACTED, text)


class _ScrubbingStream(io.TextIOBase):
    """A text stream that scrubs what it passes on to `target`, a line at a time.

    Text is held until a line ends ("\\n", or tqdm's "\\r") or the stream is flushed, so a
    secret written in pieces is still seen whole. Everything else (fileno, isatty, encoding,
    buffer) is the target's."""

    def __init__(self, target: TextIO):
        super().__init__()
        self._target = target
        self._pending = ""
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self._lock:
            self._pending += text
            cut = max(self._pending.rfind("\n"), self._pending.rfind("\r"))
            if cut >= 0:
                done, self._pending = self._pending[:cut + 1], self._pending[cut + 1:]
                self._target.write(scrub(done))
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                self._target.write(scrub(self._pending))
                self._pending = ""
        self._target.flush()

    def isatty(self) -> bool:
        return self._target.isatty()

    def fileno(self) -> int:
        return self._target.fileno()

    @property
    def encoding(self):  # type: ignore[override]
        return getattr(self._target, "encoding", "utf-8")

    @property
    def errors(self):  # type: ignore[override]
        return getattr(self._target, "errors", "strict")

    def __getattr__(self, name: str):
        return getattr(self._target, name)


def _stream_handlers() -> list[logging.StreamHandler]:
    loggers = [logging.getLogger()] + [lg for lg in logging.Logger.manager.loggerDict.values()
                                       if isinstance(lg, logging.Logger)]
    return [h for lg in loggers for h in lg.handlers
            if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)]


@contextmanager
def scrubbed_output() -> Iterator[None]:
    """Scrub everything this process prints meanwhile: `print`, warnings, progress bars, and
    log handlers that write to stdout/stderr (huggingface_hub's made its handler at import, so
    it holds the stream it found then; it is pointed at the scrubbing one for the duration).
    Streams and handlers created inside keep working after the block; they still scrub."""
    out, err = sys.stdout, sys.stderr
    if isinstance(out, _ScrubbingStream) and isinstance(err, _ScrubbingStream):
        yield  # nested (main() called from a command): already scrubbing
        return
    wrapped = {id(out): _ScrubbingStream(out), id(err): _ScrubbingStream(err)}
    moved = [(h, h.stream) for h in _stream_handlers() if id(h.stream) in wrapped]
    sys.stdout, sys.stderr = wrapped[id(out)], wrapped[id(err)]
    for handler, stream in moved:
        handler.setStream(wrapped[id(stream)])
    try:
        yield
    finally:
        for stream in wrapped.values():
            # a closed pipe: nothing more can be shown anyway
            with suppress(OSError, ValueError):
                stream.flush()
        sys.stdout, sys.stderr = out, err
        for handler, stream in moved:
            if handler.stream is wrapped[id(stream)]:
                handler.setStream(stream)
