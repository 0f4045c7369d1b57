"""Loopback HTTP servers that misbehave as servers do: endless or long bodies, bodies trickled a
byte at a time (headers included), redirects to another server, files served slowly. Each is
started by the test, answers within a bounded start-up, counts what it sent, and is torn down
with the test (a handler still streaming stops at the teardown)."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

#: The longest a test waits for its server to answer a first connection.
START_UP = 5.0


@dataclass
class Served:
    """What a server was asked and sent, and the switch that stops its streaming handlers."""

    url: str = ""
    paths: list[str] = field(default_factory=list)
    sent: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, n: int) -> None:
        with self.lock:
            self.sent += n


class Handler(http.server.BaseHTTPRequestHandler):
    """Base of the tests' handlers: `served` is the server's record; quiet."""

    served: Served
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def stream(self, chunk: bytes, total: int | None = None, every: float = 0.0) -> None:
        """Send `chunk` again and again (`total` bytes in all; None: until the client goes
        or the test ends), `every` seconds apart."""
        sent = 0
        try:
            while not self.served.stop.is_set() and (total is None or sent < total):
                piece = chunk if total is None else chunk[:total - sent]
                self.wfile.write(piece)
                self.wfile.flush()
                sent += len(piece)
                self.served.count(len(piece))
                if every:
                    time.sleep(every)
        except OSError:  # the client stopped reading: what a bounded download does
            pass
        self.close_connection = True


@contextmanager
def serve(handler: type[Handler], directory: Path | None = None) -> Iterator[Served]:
    """Run `handler` on 127.0.0.1 (a free port) until the block ends; yields its record, whose
    `url` is the server's base."""
    served = Served()
    attrs: dict[str, object] = {"served": served}
    if directory is not None:
        attrs["directory"] = str(directory)
    cls = type(handler.__name__, (handler,), attrs)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), cls)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    served.url = f"http://127.0.0.1:{server.server_address[1]}"
    _wait_until_up(server.server_address[1])
    try:
        yield served
    finally:
        served.stop.set()
        server.shutdown()
        server.server_close()


def _wait_until_up(port: int) -> None:
    deadline = time.monotonic() + START_UP
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the test server on port {port} did not start in "
                                   f"{START_UP:g} s") from None
            time.sleep(0.02)


def wait_for(condition: Callable[[], object], seconds: float, what: str) -> None:
    """Poll `condition` until it holds, or fail the test naming `what`."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {seconds:g} s")
        time.sleep(0.02)
