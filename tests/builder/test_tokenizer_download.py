"""Registry tokenizers download from the Hub at the pinned revision and are hash-checked.

A loopback server speaks the part of the Hub protocol `hf_hub_download` uses (HEAD + GET on
`/<repo>/resolve/<revision>/<file>`), serving the pinned files from ../shared.
"""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path

import pytest

from helpers.paths import TOKENIZERS
from ruler.builder.tokenizer_registry import load_tokenizer, registry
from ruler.kernel.errors import RulerError

pytestmark = [pytest.mark.network]

COMMIT = "a09a35458c702b33eeacc393d103063234e8bc28"


@pytest.fixture()
def hub(monkeypatch):
    served: dict[str, bytes] = {}
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _respond(self, body: bool) -> None:
            requests.append(f"{self.command} {self.path}")
            data = served.get(self.path)
            if data is None:
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if body:
                self.wfile.write(data)

        def do_HEAD(self):
            self._respond(body=False)

        def do_GET(self):
            self._respond(body=True)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # A short poll interval: shutdown() waits for the next poll (0.5 s by default).
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                     daemon=True).start()
    import huggingface_hub.constants as hub_constants

    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.delenv("RULER_TOKENIZERS")
    yield served, requests
    server.shutdown()
    server.server_close()


def _serve_pinned(served, name: str, revision: str, tamper: str | None = None) -> None:
    entry = registry()[name]
    for f in entry.files:
        data = (TOKENIZERS / entry.dir / f).read_bytes()
        if f == tamper:
            data = data.replace(b'"', b"'", 1)
        served[f"/{entry.repo}/resolve/{revision}/{f}"] = data


def test_download_at_pinned_revision_then_offline_from_cache(hub, tmp_path, monkeypatch):
    """With no override, downloads land in the user cache, never in the installed package
    (which may be read-only)."""
    import ruler.tokenizers_cache

    served, requests = hub
    for var in ("RULER_TOKENIZER_CACHE", "RULER_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    package = Path(ruler.tokenizers_cache.__file__).parent
    before = sorted(package.iterdir())
    _serve_pinned(served, "qwen2.5", registry()["qwen2.5"].revision)
    tok = load_tokenizer("qwen2.5")
    assert tok.identity.origin == "hub" and tok.identity.pinned
    assert all(registry()["qwen2.5"].revision in r for r in requests)
    cached = tmp_path / "ruler" / "tokenizers" / "qwen2.5"
    assert sorted(p.name for p in cached.iterdir()) == ["tokenizer.json", "tokenizer_config.json"]
    assert sorted(package.iterdir()) == before
    served.clear()  # the server forgets everything: the cache alone must do
    again = load_tokenizer("qwen2.5")
    assert again.identity.origin == "cache"
    assert again.prompt_ids("Hi", " Answer:") == tok.prompt_ids("Hi", " Answer:")


def test_a_file_that_differs_from_the_pin_is_refused_and_not_cached(hub, tmp_path, monkeypatch):
    served, _ = hub
    monkeypatch.setenv("RULER_TOKENIZER_CACHE", str(tmp_path))
    _serve_pinned(served, "qwen2.5", registry()["qwen2.5"].revision,
                  tamper="tokenizer_config.json")
    with pytest.raises(RulerError, match="does not match the registry pin"):
        load_tokenizer("qwen2.5")
    assert not (tmp_path / "qwen2.5").exists()


def test_missing_file_on_the_hub_is_a_clear_error(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("RULER_TOKENIZER_CACHE", str(tmp_path))
    with pytest.raises(RulerError, match="could not download tokenizer files"):
        load_tokenizer("gemma-3")
    assert not any(tmp_path.iterdir())


def test_hub_id_with_revision_downloads_an_unregistered_tokenizer(hub, tmp_path, monkeypatch):
    served, _ = hub
    monkeypatch.setenv("RULER_TOKENIZER_CACHE", str(tmp_path))
    src = TOKENIZERS / "llama-3.1"
    for f in ("tokenizer.json", "tokenizer_config.json"):
        served[f"/someorg/some-model/resolve/{COMMIT}/{f}"] = (src / f).read_bytes()
    tok = load_tokenizer(f"someorg/some-model@{COMMIT}")
    assert tok.name == "someorg--some-model" and tok.identity.revision == COMMIT
    assert not tok.identity.pinned and tok.identity.repo == "someorg/some-model"
    # the files served are the registry's pinned llama-3.1 (loaded once a process)
    assert tok.count("Hello world") == load_tokenizer("llama-3.1", TOKENIZERS).count("Hello world")


def test_an_unreachable_hub_fails_at_once_without_retrying(tmp_path, monkeypatch, capsys):
    """Offline, the Hub client retries a failed connection for ~25 s before giving up; the
    first failed request is enough to say what to do."""
    import socket
    import struct

    from ruler.commands.main import main

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[int] = []

    def drop_every_connection():  # like a dead proxy: accept, then reset the connection
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(1)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    threading.Thread(target=drop_every_connection, daemon=True).start()
    import huggingface_hub.constants as hub_constants

    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{listener.getsockname()[1]}")
    monkeypatch.delenv("RULER_TOKENIZERS")
    monkeypatch.setenv("RULER_TOKENIZER_CACHE", str(tmp_path))
    try:
        code = main(["build", "--tokenizer", "qwen2.5", "--tasks", "vt", "--samples", "1",
                     "--out", str(tmp_path / "out"), "--no-progress"])
    finally:
        listener.close()
    err = capsys.readouterr().err
    assert code == 2 and "could not download tokenizer files" in err
    assert "RULER_TOKENIZERS" in err and "Traceback" not in err
    assert 1 <= len(accepted) <= 2  # one request (a connection may be retried once), no backoff
    assert not (tmp_path / "out").exists()


def test_a_hub_that_echoes_the_token_never_gets_it_into_the_error(tmp_path, monkeypatch):
    """A Hub-compatible server whose error reflects the request's Authorization header: the
    Hub client's own exception then holds the token; the download error never does."""
    import huggingface_hub
    import huggingface_hub.constants as hub_constants

    token = "hf_" + "Q7" * 17

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):
            self.send_response(500)
            self.send_header("X-Error-Message", f"cannot serve {self.headers['Authorization']}")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_HEAD

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                     daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.delenv("RULER_TOKENIZERS")
    monkeypatch.setenv("RULER_TOKENIZER_CACHE", str(tmp_path))
    try:
        url = huggingface_hub.hf_hub_url("Qwen/Qwen2.5-7B-Instruct", "tokenizer.json",
                                         endpoint=endpoint)
        with pytest.raises(Exception) as raw:
            huggingface_hub.get_hf_file_metadata(url, endpoint=endpoint)
        assert token in str(raw.value)  # the threat is real: the server's text comes back
        with pytest.raises(RulerError, match="could not download tokenizer files") as shown:
            load_tokenizer("qwen2.5")
        assert token not in str(shown.value) and "hf_" not in str(shown.value)
    finally:
        server.shutdown()
        server.server_close()
