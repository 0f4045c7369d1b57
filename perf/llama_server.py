"""A real model's OpenAI-compatible server on 127.0.0.1: llama.cpp's `llama-server`, or
llama-cpp-python's `python -m llama_cpp.server`. Started in its own process group on a free port,
up within a bounded time (or an error carrying the end of its log), stopped (TERM, then KILL) on
exit. Shared by the real-model benchmark and the tests marked `llama`.

    with LlamaServer(binary, gguf, log, alias="gemma-3-270m", context=4096) as server:
        server.url       # http://127.0.0.1:PORT/v1, what `ruler eval --base-url` takes
        server.metrics() # llama.cpp's Prometheus counters (started with --metrics)
    with LlamaCppPythonServer(python, gguf, log, alias="gemma-3-270m", context=4096) as server:
        ...
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

#: Seconds a server may take to load a small model and answer /health (~10 s when quiet).
START_TIMEOUT = 180.0


class ServerError(RuntimeError):
    """The server exited or did not become ready; the message ends with its log's tail."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """A server process answering `ready_path` once its model is loaded."""

    ready_path = "/v1/models"

    def __init__(self, command: list[str], port: int, log: Path,
                 start_timeout: float = START_TIMEOUT):
        self.command, self.port = command, port
        self.url = f"http://127.0.0.1:{port}/v1"
        self.log_path = Path(log)
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.command, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(f"{self.command[0]} exited with {self.proc.returncode}:\n"
                                  f"{self._tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{self.ready_path}",
                                            timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        raise ServerError(f"{self.command[0]} not ready after {self.start_timeout:.0f} s:\n"
                          f"{self._tail()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if hasattr(self, "_log"):
            self._log.close()



class LlamaServer(LocalServer):
    """llama.cpp's own server: token-id prompts, chat, its context in /v1/models, /metrics."""

    ready_path = "/health"

    def __init__(self, binary: Path, gguf: Path, log: Path, *extra: str, alias: str,
                 context: int, threads: int = 2, slots: int = 1,
                 start_timeout: float = START_TIMEOUT):
        port = free_port()
        # -cram 0: no prompt cache in RAM beyond the slot's own, so a row's cost does not
        # depend on which rows ran before it (the slot still reuses a shared prefix).
        super().__init__([str(binary), "-m", str(gguf), "-a", alias, "--host", "127.0.0.1",
                          "--port", str(port), "-c", str(context), "-np", str(slots),
                          "-t", str(threads), "-fa", "on", "-cram", "0", "--metrics", *extra],
                         port, log, start_timeout)

    def metrics(self) -> dict[str, float]:
        """llama.cpp's counters, e.g. prompt_tokens_total and prompt_seconds_total (tokens the
        server actually prefilled: a prefix reused from the slot's last prompt is not counted)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            text = r.read().decode()
        values = {}
        for line in text.splitlines():
            if line.startswith("llamacpp:"):
                name, _, value = line.partition(" ")
                values[name.removeprefix("llamacpp:")] = float(value)
        return values


class LlamaCppPythonServer(LocalServer):
    """llama-cpp-python's server (`pip install "llama-cpp-python[server]"`, run by `python`):
    text prompts and chat only (it refuses token ids), no context in /v1/models, one request
    at a time."""

    def __init__(self, python: Path, gguf: Path, log: Path, *extra: str, alias: str,
                 context: int, threads: int = 2, start_timeout: float = START_TIMEOUT):
        port = free_port()
        super().__init__([str(python), "-m", "llama_cpp.server", "--model", str(gguf),
                          "--model_alias", alias, "--host", "127.0.0.1", "--port", str(port),
                          "--n_ctx", str(context), "--n_threads", str(threads), *extra],
                         port, log, start_timeout)
