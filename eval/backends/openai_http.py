"""HTTP for `--backend openai` with bounds on what a server can make it do: a reply is read up
to a size (a completion of a few tokens cannot need megabytes; a server sending 300 MB is cut
off, not stored), within a total time (httpx's read timeout restarts with every chunk, so a
server trickling bytes would never time out), and server text reaches a message only scrubbed
of the credentials and then cut (cutting first could leave the first characters of a key the
scrubber no longer recognises).
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ruler.eval.backends.openai_replies import parse_json
from ruler.kernel.scrub import scrub

#: Bytes read of a reply to a request that is not a completion (/v1/models, /props, ...): a
#: long model list (a hosted API's, with descriptions) is a few hundred kB.
INFO_MAX_BYTES = 16 << 20
#: A completion's reply: room for the JSON around it, and per token generated at most 1 KiB
#: (the longest tokens are a few hundred bytes, escaped as \\uXXXX at most x6).
COMPLETION_BASE_BYTES = 1 << 20
COMPLETION_BYTES_PER_TOKEN = 1 << 10
#: A completion's text: no tokenizer has tokens of more than a few hundred characters.
COMPLETION_BASE_CHARS = 1024
COMPLETION_CHARS_PER_TOKEN = 256


def completion_max_bytes(max_tokens: int) -> int:
    return COMPLETION_BASE_BYTES + COMPLETION_BYTES_PER_TOKEN * max(1, max_tokens)


def completion_max_chars(max_tokens: int) -> int:
    return COMPLETION_BASE_CHARS + COMPLETION_CHARS_PER_TOKEN * max(1, max_tokens)


@dataclass(frozen=True)
class Reply:
    """A server's reply, read up to `limit` bytes: `body` holds at most that; `over` is True
    when the server sent (or announced, by Content-Length) more, `declared` that announced
    length when it gave one."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    limit: int
    over: bool = False
    declared: int | None = None

    def json(self) -> Any:
        """The body's JSON (`openai_replies.Damaged` when it is none)."""
        return parse_json(self.body)

    def excerpt(self, limit: int) -> str:
        """The body as text for a message: scrubbed of credentials, then cut to `limit`."""
        return scrub(self.body.decode("utf-8", "replace"))[:limit]

    def message(self, limit: int = 300) -> str:
        """What an error reply says: its `error.message` (OpenAI's and llama.cpp's error
        shape) where it has one, else the body's start; scrubbed, then cut."""
        try:
            doc = self.json()
        except ValueError:
            return self.excerpt(limit)
        error = doc.get("error") if isinstance(doc, dict) else None
        text = error.get("message") if isinstance(error, dict) else None
        return scrub(text)[:limit] if isinstance(text, str) else self.excerpt(limit)


def fetch(httpx: Any, client: Any, method: str, url: str, *, timeout: float, max_bytes: int,
          body: Any = None) -> Reply:
    """One request, its reply read up to `max_bytes` and within `timeout` seconds in all
    (httpx's own exceptions for what fails on the way: connect, read timeouts, resets)."""
    deadline = time.monotonic() + timeout
    limits = httpx.Timeout(timeout, connect=min(30.0, timeout))
    with client.stream(method, url, json=body, timeout=limits) as resp:
        declared = _content_length(resp.headers)
        if declared is not None and declared > max_bytes:
            return Reply(resp.status_code, resp.headers, b"", max_bytes, True, declared)
        chunks, size = [], 0
        for chunk in resp.iter_bytes():
            if size + len(chunk) > max_bytes:
                chunks.append(chunk[:max_bytes - size])
                return Reply(resp.status_code, resp.headers, b"".join(chunks), max_bytes, True,
                             declared)
            chunks.append(chunk)
            size += len(chunk)
            if time.monotonic() > deadline:
                raise httpx.ReadTimeout(f"the reply took more than {timeout:g} s to arrive",
                                        request=resp.request)
        return Reply(resp.status_code, resp.headers, b"".join(chunks), max_bytes, False,
                     declared)


def _content_length(headers: Mapping[str, str]) -> int | None:
    try:
        return int(headers.get("content-length", ""))
    except ValueError:
        return None


def say(text: str) -> None:
    """A progress line for the user (stderr), scrubbed: server text may be in it."""
    print(scrub(text), file=sys.stderr, flush=True)


class Waiting:
    """While a start-up request is outstanding, say every `every` seconds (after the first
    `first`) what is waited for, so a slow server is never a silent hang."""

    def __init__(self, what: Callable[[float], str], first: float = 5.0, every: float = 15.0):
        self.what, self.first, self.every = what, first, every
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="ruler-openai-waiting")

    def _run(self) -> None:
        start, pause = time.monotonic(), self.first
        while not self._done.wait(pause):
            say(self.what(time.monotonic() - start))
            pause = self.every

    def __enter__(self) -> "Waiting":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._done.set()
        self._thread.join()
