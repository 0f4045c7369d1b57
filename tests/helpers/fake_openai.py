"""A loopback OpenAI-compatible server for tests, misbehaving on request.

Its answers are a pure function of the prompt it receives (`answer`), so runs at any
concurrency must agree; a policy decides per request the status, extra headers, a delay and
optionally the whole 200 body. Requests with `max_tokens` 1 are the backend's start-up probe:
answered at once (by `probe_policy`, default 200), kept apart (`probes`) from the rows'
counters. `usage.prompt_tokens` is `prompt_tokens(body)` (default: the number of ids of a
token-id prompt, nothing for text). /v1/models serves `models_entry`; /props `props` (404 when
None), as llama.cpp's server does.

To misbehave further: `routes` answers paths ("/v1/models", "/props", "/tokenize", ...) with
`route(request body or None)` -> (status, body) instead (a body of bytes is sent as it is:
truncated or nested JSON; an `Unsized` body goes without a Content-Length, in pieces, until the
client stops reading); `shape(body, reply)` -> the 200 reply to send instead of the
completion `reply` made for `body` (probe and rows: another `model`, damaged `usage`, ...); a
probe policy may return a third element, seconds to wait before answering (a server that
never answers).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "served-model"


class Unsized:
    """A reply body sent without a Content-Length (ended by closing the connection), `size`
    bytes of `fill` in 1 MiB pieces; `sent` counts what the client took before it hung up."""

    def __init__(self, head: bytes, size: int, fill: bytes = b"7"):
        self.head, self.size, self.fill, self.sent = head, size, fill, 0

    def write(self, wfile) -> None:
        wfile.write(self.head)
        piece = self.fill * (1 << 20)
        while self.sent < self.size:
            wfile.write(piece)
            self.sent += len(piece)


def answer(prompt) -> str:
    if isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
        return f"n={len(prompt)} s={sum(prompt) % 9973}"
    return f"chars={len(json.dumps(prompt))}"


def prompt_of(body: dict):
    """What a request asks about: its `prompt` (ids or text), or its chat messages."""
    return body["prompt"] if "prompt" in body else body.get("messages")


def hashable(prompt):
    return tuple(prompt) if isinstance(prompt, list) and all(
        isinstance(t, int) for t in prompt) else json.dumps(prompt)


def ids_count(body: dict) -> int | None:
    prompt = body.get("prompt")
    return len(prompt) if isinstance(prompt, list) else None


class FakeServer:
    """`policy(prompt, attempt)` -> (status, extra headers, delay seconds[, 200 body]) per
    request; without a body, a 200 answers `answer(prompt)`."""

    def __init__(self, policy=None, max_model_len=4096, prompt_tokens=ids_count,
                 models_entry=None, props=None, probe_policy=None, routes=None,
                 shape=None):
        self.policy = policy or (lambda prompt, attempt: (200, {}, 0.0))
        self.probe_policy = probe_policy or (lambda body: (200, None))
        self.attempts: Counter = Counter()
        self.statuses: Counter = Counter()
        self.probes: list[dict] = []  # the probe request bodies, in order
        self.bodies: list[dict] = []  # the rows' request bodies, in order
        self.active = self.peak = 0
        self.lock = threading.Lock()
        self.closing = threading.Event()  # ends the waits of requests left hanging
        routes = routes or {}
        shape = shape or (lambda body, reply: reply)
        entry = models_entry if models_entry is not None else \
            {"id": MODEL, "max_model_len": max_model_len}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, body, headers=None):
                if isinstance(body, Unsized):
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.close_connection = True
                    try:
                        body.write(self.wfile)
                    except (BrokenPipeError, ConnectionResetError):
                        pass  # the client stopped reading
                    return
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                route = routes.get(self.path.rstrip("/"))
                if route is not None:
                    self._send(*route(None))
                    return
                if self.path.rstrip("/").endswith("/props"):
                    if props is None:
                        self._send(404, {"error": {"message": "File Not Found"}})
                    else:
                        self._send(200, props)
                    return
                self._send(200, {"data": [entry]})

            def _completion(self, body, prompt, text):
                usage = {"completion_tokens": 4}
                counted = prompt_tokens(body)
                if counted is not None:
                    usage["prompt_tokens"] = counted
                if "messages" in body:
                    return shape(body, {"choices": [{"message": {"role": "assistant",
                                                                 "content": text},
                                                     "finish_reason": "stop"}],
                                        "usage": usage})
                return shape(body, {"choices": [{"text": text, "finish_reason": "stop"}],
                                    "usage": usage})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                route = routes.get(self.path.rstrip("/"))
                if route is not None:
                    self._send(*route(body))
                    return
                prompt = prompt_of(body)
                if body.get("max_tokens") == 1:  # the start-up probe
                    with server.lock:
                        server.probes.append(body)
                    status, reply, *delay = server.probe_policy(body)
                    if delay and server.closing.wait(delay[0]):
                        return  # the server is shutting down: no answer at all
                    if status != 200:
                        self._send(status, reply or {"error": {"message": f"status {status}"}})
                    else:
                        self._send(200, reply or self._completion(body, prompt, "x"))
                    return
                with server.lock:
                    attempt = server.attempts[hashable(prompt)]
                    server.attempts[hashable(prompt)] += 1
                    server.bodies.append(body)
                    server.active += 1
                    server.peak = max(server.peak, server.active)
                counted = False
                try:
                    status, headers, delay, *reply = server.policy(prompt, attempt)
                    time.sleep(0.02 + delay)  # lets requests overlap
                    with server.lock:
                        server.statuses[status] += 1
                        # No longer active once the answer is decided: the client may send
                        # its next request the moment it reads this one's answer.
                        server.active -= 1
                        counted = True
                    if status != 200:
                        self._send(status, {"error": {"message": f"status {status}"}}, headers)
                        return
                    self._send(200, reply[0] if reply else
                               self._completion(body, prompt, answer(prompt)))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) and retries
                finally:
                    if not counted:
                        with server.lock:
                            server.active -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        # polled often: every test stops a server, and the default 0.5 s adds up
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()
