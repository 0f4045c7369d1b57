"""`--backend openai` at start-up: what the server says about itself (/props, /v1/models), and
the patience its start-up requests get.

A server may be up and not ready: llama.cpp's `llama-server` answers 503 ("Loading model")
while it loads the model, a gateway 502/504 while its backend starts, anyone 429 when busy.
Those are waited for, saying so, and so is a request that gets no answer — but only for
`--startup-timeout` seconds per phase (the server's description, then the probe), never the
rows' `--timeout` times `--retries` (an hour, with the defaults, in silence). A server that
cannot be connected to at all fails at once: nothing there is starting.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ruler.eval.backends.openai_http import INFO_MAX_BYTES, Reply, Waiting, fetch, say
from ruler.eval.backends.openai_replies import (
    Damaged,
    field_text,
    model_entries,
    served_context,
    total_slots,
)
from ruler.kernel.errors import RulerError
from ruler.kernel.scrub import scrub

#: Seconds a start-up phase may take by default: a server that is up answers at once.
STARTUP_TIMEOUT = 60.0
#: Statuses of a server that is starting, overloaded or behind a busy gateway: waited for.
#: Any other status on a start-up request is the server's answer.
WAIT_STATUSES = frozenset({429, 502, 503, 504})
#: Seconds between two tries while waiting (a loading model takes seconds to minutes).
WAIT_PAUSE = 1.0


@dataclass(frozen=True)
class ServerInfo:
    """What the server says about itself at start-up."""

    max_model_len: int | None = None
    context_source: str = ""  # which field max_model_len came from
    slots: int | None = None  # requests it runs at once (llama.cpp), where it says
    owned_by: str = ""  # /v1/models' owned_by: "vllm", "llamacpp", ...


class Startup:
    """The start-up requests to one server, each phase (`begin`) bounded by `limit` seconds."""

    def __init__(self, httpx: Any, client: Any, base: str, limit: float):
        self.httpx, self.client, self.base, self.limit = httpx, client, base, limit
        self._deadline = time.monotonic() + limit

    def begin(self) -> None:
        """A new phase: the next requests have `limit` seconds again."""
        self._deadline = time.monotonic() + self.limit

    @property
    def root(self) -> str:
        """The server's root, where llama.cpp and vLLM have their own routes beside /v1."""
        return self.base[:-3] if self.base.endswith("/v1") else self.base

    def request(self, method: str, url: str, what: str, body: Any = None,
                max_bytes: int = INFO_MAX_BYTES) -> Reply:
        """The server's reply to a start-up request, waiting (and saying so) while it answers
        that it is starting (WAIT_STATUSES) or does not answer, until the phase's deadline;
        `what` names the request in messages ("its model list")."""
        httpx, said, last = self.httpx, "", ""

        def waiting(seconds: float) -> str:
            return (f"waiting for the server at {self.base} to answer {what} "
                    f"({seconds:.0f} s; at most {self._left():.0f} s more, --startup-timeout)")

        with Waiting(waiting):
            while True:
                left = self._left()
                if left <= 0:
                    raise RulerError(scrub(
                        f"the server at {self.base} did not answer {what} within "
                        f"{self.limit:g} s{f' ({last})' if last else ''}: raise "
                        f"--startup-timeout for a server that takes longer to load its model, "
                        f"or check the server"))
                try:
                    reply = fetch(httpx, self.client, method, url, timeout=left,
                                  max_bytes=max_bytes, body=body)
                except httpx.ConnectError as e:
                    raise RulerError(scrub(f"cannot reach the OpenAI-compatible server at "
                                           f"{self.base}: {type(e).__name__}: {e}")) from None
                except httpx.TimeoutException:
                    last = "no answer"
                    continue
                except httpx.TransportError as e:  # reset, closed without a reply
                    last = f"{type(e).__name__}: {e}"
                else:
                    if reply.status not in WAIT_STATUSES:
                        return reply
                    last = f"HTTP {reply.status}: {reply.message(150)}"
                if last != said:  # say each new state once; the Waiting thread says the rest
                    say(f"waiting for the server at {self.base}: it answers {what} with "
                        f"{last}; trying again for up to {self._left():.0f} s more "
                        f"(--startup-timeout)")
                    said = last
                time.sleep(max(0.0, min(WAIT_PAUSE, self._left())))

    def _left(self) -> float:
        return self._deadline - time.monotonic()

    def server_info(self, model: str) -> ServerInfo:
        """The served model's context and the server's slots. /props first: llama-server
        answers /v1/models while loading, without the context it will have, and /props 503."""
        slots = self._slots()
        path = urlsplit(self.base).path + "/models"
        reply = self.request("GET", "/models", f"its model list (GET {path})")
        try:
            if reply.status != 200:
                raise Damaged(f"HTTP {reply.status}: {reply.message()}")
            if reply.over:
                raise Damaged(f"more than {INFO_MAX_BYTES} bytes")
            entries = model_entries(reply.json())
        except Damaged as e:
            raise RulerError(scrub(f"the server at {self.base} answers GET {path} with no "
                                   f"OpenAI-compatible model list ({e}): is --base-url the "
                                   f"server's /v1?")) from None
        names = [m.get("id") for m in entries]
        if names and model not in names:
            raise RulerError(scrub(f"the server at {self.base} does not serve {model!r}; "
                                   f"it serves: {', '.join(map(str, names))[:500]}"))
        served = next((m for m in entries if m.get("id") == model), {})
        length, source = served_context(served)
        return ServerInfo(length, source, slots, field_text(served, "owned_by") or "")

    def _slots(self) -> int | None:
        """llama.cpp's /props `total_slots` (at the server's root, beside /v1), else None."""
        reply = self.request("GET", f"{self.root}/props", "its properties (GET /props)")
        return self.document(reply, total_slots)

    def document(self, reply: Reply, read: Any) -> Any:
        """`read(json)` of a 200 reply within its bound; None for anything else (an optional
        route that this server does not have, or answers with something unusable)."""
        if reply.status != 200 or reply.over:
            return None
        try:
            return read(reply.json())
        except Damaged:
            return None
