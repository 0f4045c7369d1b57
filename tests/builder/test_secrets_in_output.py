"""No credential in anything a command prints or writes, when a server echoes it back.

Servers under test here put the caller's credential into their answers: an OpenAI-compatible
server into its error bodies and its list of model names, a Hub (and its CDN) into the
download URL it redirects to, which huggingface_hub's retry warning prints. Each command runs
in its own process, as a user runs it, so every line on stdout and stderr is seen (the Hub
client's log handler writes to the stream it found at import). `ruler release` is covered in
test_release.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import pytest

from helpers.builds import build
from helpers.paths import TOKENIZERS
from ruler.builder.tokenizer_registry import registry

OPENAI_KEY = "sk-loopbackKey-9f8e7d6c5b4a39281706"
HF_TOKEN = "hf_loopbackDownloadToken4711"
CONFIG = "qwen2.5"
MODEL = "served-model"


class Loopback:
    """A ThreadingHTTPServer on 127.0.0.1 with `handler`, started and stopped with `with`."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        handler.log_message = lambda *args: None
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "Loopback":
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def ruler(args: list[str], env: dict[str, str | None]) -> subprocess.CompletedProcess:
    """`ruler ARGS` in its own process; `env` entries set to None are removed."""
    full = {**os.environ, **env}
    return subprocess.run([sys.executable, "-m", "ruler", *args],
                          env={k: v for k, v in full.items() if v is not None},
                          capture_output=True, text=True, timeout=300)


def assert_never_shown(secret: str, *texts: str) -> None:
    for text in texts:
        assert secret not in text and not re.search(r"hf_[A-Za-z0-9]{8,}", text), text


def _reply(handler: BaseHTTPRequestHandler, status: int, payload: dict,
           headers: dict[str, str] | None = None) -> None:
    body = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.end_headers()
    handler.wfile.write(body)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("data")
    build(out, CONFIG, ("niah_single_1",), (1024,), samples=2, workers=1)
    return out


@pytest.mark.slow  # end to end: ruler evals in their own processes against a loopback server
@pytest.mark.build
@pytest.mark.network
@pytest.mark.subprocess
def test_an_openai_server_that_echoes_the_key_never_gets_it_shown_or_saved(data, tmp_path):
    """Every completion is refused with a body that holds the key and the Authorization
    header: the rows are errors (exit 1), and neither the output nor predictions.jsonl holds
    the key; the start-up probe refused the same way: one error line (exit 2), no key. A
    server that lists the key as a model name: one clear error line, no key."""
    key_as_model = {"on": False}
    probe_refused = {"on": False}

    class Echo(BaseHTTPRequestHandler):
        def do_GET(self):
            names = [OPENAI_KEY] if key_as_model["on"] else [MODEL]
            _reply(self, 200, {"data": [{"id": n, "max_model_len": 4096} for n in names]})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if body.get("max_tokens") == 1 and not probe_refused["on"]:  # the start-up probe
                _reply(self, 200, {"choices": [{"text": "x", "finish_reason": "length"}],
                                   "usage": {"prompt_tokens": len(body["prompt"]),
                                             "completion_tokens": 1}})
                return
            _reply(self, 400, {"error": {"message": f"key {OPENAI_KEY} is not allowed "
                                                    f"(Authorization: "
                                                    f"{self.headers['Authorization']})"}})

    env = {"OPENAI_API_KEY": OPENAI_KEY}
    out = tmp_path / "eval"
    with Loopback(Echo) as server:

        def evaluate(into: Path) -> subprocess.CompletedProcess:
            return ruler(["eval", "--model", MODEL, "--model-tokenizer", CONFIG, "--data",
                          str(data), "--tokenizer-config", CONFIG, "--backend", "openai",
                          "--base-url", f"{server.url}/v1", "--out", str(into),
                          "--no-progress", "--no-report", "--retries", "0"], env)

        refused = evaluate(out)
        probe_refused["on"] = True
        at_start = evaluate(tmp_path / "eval3")
        key_as_model["on"] = True
        listed = evaluate(tmp_path / "eval2")
    assert refused.returncode == 1, refused.stderr[-2000:]
    assert at_start.returncode == 2 and "refuses the first request" in at_start.stderr
    reasons = [json.loads(line)["reason"] for line in
               (out / "predictions.jsonl").read_text().splitlines()]
    assert len(reasons) == 2 and all(r.startswith("HTTP 400: ") and "<redacted>" in r
                                     for r in reasons)
    assert listed.returncode == 2 and "does not serve 'served-model'" in listed.stderr
    saved = [p.read_text() for p in out.rglob("*") if p.is_file()]
    assert_never_shown(OPENAI_KEY, refused.stdout, refused.stderr, listed.stdout,
                       listed.stderr, at_start.stdout, at_start.stderr, *saved)


def assert_no_piece(secret: str, *texts: str, piece: int = 10) -> None:
    """Not even a part of `secret` (any `piece` characters of it in a row): a message cut in
    the middle of the secret must not leave its first characters."""
    for text in texts:
        for at in range(len(secret) - piece + 1):
            assert secret[at:at + piece] not in text, (secret[at:at + piece], text[-3000:])


@pytest.mark.slow  # end to end: three ruler evals in their own processes against a loopback server
@pytest.mark.build
@pytest.mark.network
@pytest.mark.subprocess
def test_an_openai_server_that_cuts_or_answers_with_the_key_never_gets_any_of_it_saved(
        data, tmp_path):
    """A 401 whose body echoes the raw key (no "Bearer ") exactly where the backend cuts
    server text (the probe's message at 300 characters, a row's reason at 500): nothing of the
    key is shown or saved. A server that puts the key into its completions and names it as
    the model it answered as: every file of the results folder and every line printed are
    free of it, the rest of the answer kept."""
    mode = {"now": "refuse probe"}

    class Echo(BaseHTTPRequestHandler):
        def do_GET(self):
            _reply(self, 200, {"data": [{"id": MODEL, "max_model_len": 4096}]})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            probe = body.get("max_tokens") == 1
            if mode["now"] == "refuse probe" or (mode["now"] == "refuse rows" and not probe):
                # a copy of the key straddles character 290 of the body (300 of the probe's
                # message), another character 500 (a row's reason)
                text = "." * 270 + OPENAI_KEY + "." * 165 + OPENAI_KEY + "." * 40
                self.send_response(401)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text.encode())
                return
            text = "x" if probe else f"The key is {OPENAI_KEY}, the answer 42."
            _reply(self, 200, {"model": OPENAI_KEY,
                               "choices": [{"text": text, "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": len(body["prompt"]),
                                         "completion_tokens": 9}})

    env = {"OPENAI_API_KEY": OPENAI_KEY}
    runs = {}
    with Loopback(Echo) as server:
        for step in ("refuse probe", "refuse rows", "answer with the key"):
            mode["now"] = step
            runs[step] = ruler(["eval", "--model", MODEL, "--model-tokenizer", CONFIG,
                                "--data", str(data), "--tokenizer-config", CONFIG,
                                "--backend", "openai", "--base-url", f"{server.url}/v1",
                                "--out", str(tmp_path / step.replace(" ", "-")),
                                "--no-progress", "--retries", "0"], env)
    assert runs["refuse probe"].returncode == 2
    assert "refuses the first request" in runs["refuse probe"].stderr
    assert runs["refuse rows"].returncode == 1
    assert runs["answer with the key"].returncode == 0, runs["answer with the key"].stderr
    answered = [json.loads(line) for line in
                (tmp_path / "answer-with-the-key" / "predictions.jsonl").read_text()
                .splitlines()]
    assert [r["prediction"] for r in answered] == ["The key is <redacted>, the answer 42."] * 2
    assert all(r["server_model"] == "<redacted>" for r in answered)
    saved = [p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*")
             if p.is_file()]  # the report's figures too
    assert len(saved) >= 8  # predictions, run.json, scores.json, report.md of two runs
    assert_no_piece(OPENAI_KEY, *saved, *(r.stdout for r in runs.values()),
                    *(r.stderr for r in runs.values()))


@pytest.mark.slow  # end to end: ruler commands in their own processes
@pytest.mark.network
@pytest.mark.subprocess
def test_a_tokenizer_download_whose_redirect_echoes_the_token_never_shows_it(tmp_path):
    """The Hub redirects each tokenizer file to its CDN with the caller's token in the URL;
    the CDN asks the client to slow down once (429), so the download says it asks again
    (huggingface_hub's retry warning printed that URL). The build succeeds, and no line holds
    the token."""
    entry = registry()[CONFIG]
    files = {name: (TOKENIZERS / entry.dir / name).read_bytes() for name in entry.files}
    throttled: set[str] = set()

    class Cdn(BaseHTTPRequestHandler):
        def do_GET(self):
            name = self.path.split("?")[0].rsplit("/", 1)[-1]
            if name not in throttled:
                throttled.add(name)
                return _reply(self, 429, {"error": "slow down"}, {"Retry-After": "0"})
            self.send_response(200)
            self.send_header("Content-Length", str(len(files[name])))
            self.end_headers()
            self.wfile.write(files[name])

    with Loopback(Cdn) as cdn:

        class Hub(BaseHTTPRequestHandler):
            def do_HEAD(self):
                name = self.path.rsplit("/", 1)[-1]
                if name not in files:
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("Content-Length", "0")
                    return self.end_headers()
                credential = quote(self.headers.get("Authorization", ""))
                self.send_response(302)
                self.send_header("Location", f"{cdn.url}/cdn/{name}?credential={credential}")
                self.send_header("X-Repo-Commit", entry.revision)
                self.send_header("X-Linked-Etag",
                                 f'"{hashlib.sha256(files[name]).hexdigest()}"')
                self.send_header("X-Linked-Size", str(len(files[name])))
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_HEAD

        with Loopback(Hub) as hub:
            env = {"HF_ENDPOINT": hub.url, "HF_TOKEN": HF_TOKEN, "HF_HUB_OFFLINE": "0",
                   "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(tmp_path / "hf_home"),
                   "RULER_TOKENIZERS": None,
                   "RULER_TOKENIZER_CACHE": str(tmp_path / "cache")}
            done = ruler(["build", "--tokenizer", CONFIG, "--tasks", "vt", "--samples", "1",
                          "--lengths", "1024", "--out", str(tmp_path / "out"), "--no-progress"],
                         env)
    assert done.returncode == 0, done.stderr[-3000:]
    # the throttled request's line (ruler's bounded download asks again, as huggingface_hub's
    # did, and says so)
    assert "HTTP 429 Too Many Requests: asking again in 0 s (1 of 3)" in done.stderr
    assert_never_shown(HF_TOKEN, done.stdout, done.stderr)


def test_scrubbed_output_sees_a_secret_written_in_pieces_and_by_earlier_log_handlers(capsys,
                                                                                    monkeypatch):
    """The CLI's guard: a secret split over several writes is still seen whole, a log handler
    made before the block (as huggingface_hub's is, at import) writes through it, and both
    streams and the handler are given back afterwards."""
    import logging

    from ruler.kernel.scrub import scrubbed_output

    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    handler = logging.StreamHandler(sys.stderr)
    log = logging.getLogger("ruler-test-echo")
    log.addHandler(handler)
    try:
        out, err = sys.stdout, sys.stderr
        with scrubbed_output():
            print(OPENAI_KEY[:7], end="")
            print(OPENAI_KEY[7:], "and", HF_TOKEN)
            log.warning("retrying GET http://cdn/x?credential=%s", OPENAI_KEY)
            sys.stderr.write("\rprogress " + OPENAI_KEY)  # no newline: flushed at the end
        assert (sys.stdout, sys.stderr, handler.stream) == (out, err, err)
    finally:
        log.removeHandler(handler)
    captured = capsys.readouterr()
    assert captured.out == "<redacted> and <redacted>\n"
    assert captured.err == ("retrying GET http://cdn/x?credential=<redacted>\n"
                            "\rprogress <redacted>")
