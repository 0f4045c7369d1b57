"""A loopback OpenAI-compatible completions server for tests, misbehaving on request.

Its answers are a pure function of the prompt ids it receives (`answer`), so runs at any
concurrency must agree; a policy decides per request the status, extra headers, a delay and
optionally the whole 200 body.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "served-model"


def answer(prompt: list[int]) -> str:
    return f"n={len(prompt)} s={sum(prompt) % 9973}"


class FakeServer:
    """`policy(prompt, attempt)` -> (status, extra headers, delay seconds[, 200 body]) per
    request; without a body, a 200 answers `answer(prompt)`."""

    def __init__(self, policy=None, max_model_len=4096):
        self.policy = policy or (lambda prompt, attempt: (200, {}, 0.0))
        self.attempts: Counter = Counter()
        self.statuses: Counter = Counter()
        self.active = self.peak = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, body, headers=None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send(200, {"data": [{"id": MODEL, "max_model_len": max_model_len}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["prompt"]
                with server.lock:
                    attempt = server.attempts[tuple(prompt)]
                    server.attempts[tuple(prompt)] += 1
                    server.active += 1
                    server.peak = max(server.peak, server.active)
                counted = False
                try:
                    status, headers, delay, *body = server.policy(prompt, attempt)
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
                    self._send(200, body[0] if body else
                               {"choices": [{"text": answer(prompt), "finish_reason": "stop"}],
                                "usage": {"completion_tokens": 4}})
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) and retries
                finally:
                    if not counted:
                        with server.lock:
                            server.active -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
