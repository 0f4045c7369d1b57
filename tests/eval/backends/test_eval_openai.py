"""The openai backend against a loopback completions server that misbehaves on purpose:
503 and 429 (with Retry-After) on first attempts, slow answers past the timeout, a 400 that
must not be retried. Its answers are a pure function of the prompt ids it receives, so runs
at any concurrency must agree. (The same backend against a real vLLM server, with the same
checks, is in test_eval_vllm.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.builds import rows
from helpers.fake_openai import MODEL, FakeServer
from ruler.commands.main import main
from ruler.eval.backends.openai import OpenAIBackend, OpenAIOptions, backoff_seconds
from ruler.eval.runner import EvalConfig, run_eval
from ruler.kernel.errors import RulerError

CONFIG = "qwen2.5"
TASKS = ("niah_single_1", "vt")


@pytest.fixture(scope="module")
def data(built_qwen_niah_vt) -> Path:
    return built_qwen_niah_vt  # CONFIG: TASKS x 1024 x 4 samples (conftest; read only)


def _eval(data: Path, out: Path, url: str, concurrency: int, **opts) -> tuple:
    backend = OpenAIBackend(OpenAIOptions(model=MODEL, base_url=url, concurrency=concurrency,
                                          retry_backoff=0.01, **opts))
    cfg = EvalConfig(model=MODEL, data=str(data), tokenizer_config=CONFIG, out=out,
                     backend="openai", model_tokenizer=CONFIG, progress=False, render_workers=0)
    try:
        outcome = run_eval(cfg, backend=backend)
    finally:
        backend.close()
    preds = {(p["task"], p["index"]): p
             for p in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())}
    return outcome, preds


@pytest.mark.build
@pytest.mark.network
def test_flaky_server_is_retried_and_concurrency_does_not_change_predictions(data, tmp_path):
    def flaky(prompt, attempt):
        if attempt == 0 and sum(prompt) % 3 == 0:
            return 503, {}, 0.0
        if attempt == 0 and sum(prompt) % 3 == 1:
            return 429, {"Retry-After": "0"}, 0.0
        return 200, {}, 0.0

    with FakeServer(flaky) as server:
        outcome, preds = _eval(data, tmp_path / "c4", server.url, concurrency=4)
    assert (outcome.generated, outcome.errors) == (8, 0)
    assert server.statuses[503] + server.statuses[429] >= 4 and server.statuses[200] == 8
    assert 1 < server.peak <= 4  # bounded, and really concurrent
    for p in preds.values():
        assert p["status"] == "ok" and p["prediction"].startswith(f"n={p['prompt_tokens']} ")

    with FakeServer() as steady:
        _, serial = _eval(data, tmp_path / "c1", steady.url, concurrency=1)
    assert steady.peak == 1
    assert {k: p["prediction"] for k, p in serial.items()} == \
        {k: p["prediction"] for k, p in preds.items()}


@pytest.mark.build
@pytest.mark.network
def test_a_slow_answer_times_out_and_is_retried(data, tmp_path):
    slow = {"first": None}

    def policy(prompt, attempt):
        if slow["first"] is None:
            slow["first"] = tuple(prompt)
        return 200, {}, (2.0 if attempt == 0 and tuple(prompt) == slow["first"] else 0.0)

    with FakeServer(policy) as server:
        outcome, preds = _eval(data, tmp_path / "r", server.url, concurrency=2, timeout=0.5)
    assert (outcome.generated, outcome.errors) == (8, 0)
    assert server.attempts[slow["first"]] == 2


@pytest.mark.build
@pytest.mark.network
@pytest.mark.subprocess
def test_a_rejected_request_is_not_retried_and_a_rerun_resumes(data, tmp_path, capsys):
    bad = set()

    def policy(prompt, attempt):
        if not bad:
            bad.add(tuple(prompt))
        return (400, {}, 0.0) if tuple(prompt) in bad else (200, {}, 0.0)

    out = tmp_path / "r"
    with FakeServer(policy) as server:
        args = ["eval", "--model", MODEL, "--model-tokenizer", CONFIG, "--data", str(data),
                "--tokenizer-config", CONFIG, "--backend", "openai", "--base-url", server.url,
                "--out", str(out), "--no-progress", "--no-report", "--concurrency", "3"]
        assert main(args) == 1  # a failed request: exit 1, with the rest saved
        assert server.attempts[next(iter(bad))] == 1  # a 400 is the request's fault
        failed = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()
                  if '"error"' in x]
        assert len(failed) == 1 and failed[0]["reason"].startswith("HTTP 400")
        bad.clear()
        bad.add(None)  # from now on every request succeeds
        assert main(args) == 0
    assert "1 request(s) failed" in capsys.readouterr().err
    lines = (out / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 9 and sum('"ok"' in x for x in lines) == 8


#: 200 answers that carry no completion: each is a failed request, never an empty answer.
NO_COMPLETION = (
    {"choices": [{"text": None, "finish_reason": "stop"}], "usage": {"completion_tokens": 0}},
    {"choices": [{"finish_reason": "stop", "index": 0}]},
    {"choices": [{"text": "", "finish_reason": "error"}], "usage": {"completion_tokens": 0}},
    {"choices": [{"text": "n=1", "finish_reason": "abort"}]},
)
#: An empty completion that ended normally is a real (wrong) answer.
EMPTY_ANSWER = {"choices": [{"text": "", "finish_reason": "stop"}],
                "usage": {"completion_tokens": 1}}


@pytest.mark.build
@pytest.mark.network
@pytest.mark.subprocess
def test_a_200_without_a_completion_is_a_failed_request_retried_on_resume(data, tmp_path,
                                                                          capsys):
    """`text: null`, no `text`, `finish_reason` "error" or "abort": recorded as errors (out
    of the score, listed, exit 1) and retried by the next run, which redoes exactly those."""
    given: dict[tuple, dict] = {}
    healthy = {"on": False}

    def policy(prompt, attempt):
        if healthy["on"]:
            return 200, {}, 0.0
        if tuple(prompt) not in given and len(given) <= len(NO_COMPLETION):
            given[tuple(prompt)] = (NO_COMPLETION + (EMPTY_ANSWER,))[len(given)]
        body = given.get(tuple(prompt))
        return (200, {}, 0.0, body) if body else (200, {}, 0.0)

    out = tmp_path / "r"
    with FakeServer(policy) as server:
        args = ["eval", "--model", MODEL, "--model-tokenizer", CONFIG, "--data", str(data),
                "--tokenizer-config", CONFIG, "--backend", "openai", "--base-url", server.url,
                "--out", str(out), "--no-progress", "--no-report", "--concurrency", "2",
                "--retries", "0"]
        assert main(args) == 1
        assert "4 request(s) failed" in capsys.readouterr().err
        records = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
        assert len(records) == 8
        failed = [r for r in records if r["status"] == "error"]
        assert len(failed) == 4 and all(r["prediction"] is None and r["reason"] for r in failed)
        empty = [r for r in records if r["status"] == "ok" and r["prediction"] == ""]
        assert len(empty) == 1 and empty[0]["finish_reason"] == "stop"
        cells = json.loads((out / "scores.json").read_text())["cells"]
        assert sum(c["errors"] for c in cells) == 4 and sum(c["scored"] for c in cells) == 4

        healthy["on"] = True
        assert main(args) == 0
    bad = [p for p, body in given.items() if body is not EMPTY_ANSWER]
    assert len(bad) == 4
    # The re-run asked again for exactly the four failed rows, nothing else.
    assert all(server.attempts[p] == 2 for p in bad)
    assert sum(server.attempts.values()) == 8 + 4
    last = {}
    for r in map(json.loads, (out / "predictions.jsonl").read_text().splitlines()):
        last[(r["task"], r["index"])] = r
    assert len(last) == 8 and all(r["status"] == "ok" for r in last.values())
    assert sum(r["prediction"] == "" for r in last.values()) == 1  # the empty answer stays
    cells = json.loads((out / "scores.json").read_text())["cells"]
    assert sum(c["errors"] for c in cells) == 0 and sum(c["scored"] for c in cells) == 8


@pytest.mark.network
def test_an_unreachable_server_is_one_clear_error():
    with pytest.raises(RulerError, match="cannot reach the OpenAI-compatible server"):
        OpenAIBackend(OpenAIOptions(model=MODEL, base_url="http://127.0.0.1:9/v1"))


def test_backoff_doubles_with_jitter_and_honours_retry_after():
    import random

    rng = random.Random(0)
    waits = [backoff_seconds(a, 1.0, None, rng) for a in range(4)]
    assert all(0.5 * 2 ** a <= w <= 1.5 * 2 ** a for a, w in enumerate(waits))
    assert backoff_seconds(3, 1.0, "2", rng) == 2.0
    assert backoff_seconds(0, 1.0, "600", rng) == 60.0


# --- what the server makes of the prompt: the probe, every row's count, --api ---------------

def _args(data: Path, url: str, out: Path, *extra: str) -> list[str]:
    return ["eval", "--model", MODEL, "--model-tokenizer", CONFIG, "--data", str(data),
            "--tokenizer-config", CONFIG, "--backend", "openai", "--base-url", url,
            "--out", str(out), "--no-progress", "--no-plots", *extra]


def _records(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]


@pytest.mark.build
@pytest.mark.network
@pytest.mark.subprocess
def test_a_server_that_counts_the_prompt_otherwise_is_refused_before_any_row(data, tmp_path,
                                                                          capsys):
    """A server that adds a token to every token-id prompt (a BOS of its own, say) shows on
    the probe: the run stops before any row is sent and leaves no run.json. Allowed, every
    row is kept and flagged, and the report says so."""
    def one_more(body):
        return len(body["prompt"]) + 1

    out = tmp_path / "r"
    with FakeServer(prompt_tokens=one_more) as server:
        assert main(_args(data, server.url, out, "--no-report")) == 2
        assert len(server.probes) == 1 and server.bodies == []
    err = capsys.readouterr().err
    assert "does not see the build's prompt (--api completions-ids): for a probe token-id " \
           "prompt the server counted" in err and "--allow-prompt-mismatch" in err
    assert not (out / "run.json").exists()

    with FakeServer(prompt_tokens=one_more) as server:
        assert main(_args(data, server.url, out, "--allow-prompt-mismatch")) == 0
    records = _records(out)
    assert len(records) == 8 and all(
        r["status"] == "ok" and r["server_prompt_tokens"] == r["prompt_tokens"] + 1
        and r["prompt_mismatch"].startswith("the server counted") for r in records)
    scores = json.loads((out / "scores.json").read_text())
    assert scores["prompt_check"] == {"checked": 8, "unchecked": 0, "differ": 8}
    (serving,) = scores["serving"]
    assert serving["api"] == "completions-ids" and serving["probe_mismatch"]
    report = (out / "report.md").read_text()
    assert "**8 differ from the build's prompt**" in report and "PROMPT MISMATCH allowed" in report


@pytest.mark.build
@pytest.mark.network
@pytest.mark.subprocess
def test_a_server_that_refuses_token_ids_fails_at_once_naming_the_api_to_use(data, tmp_path,
                                                                             capsys):
    """llama-cpp-python's server answers a token-id prompt with HTTP 500 (its schema takes
    strings): not retried five times, one line that names --api completions-text."""
    def refuse(body):
        return 500, {"error": {"message": "3 validation errors: 'loc': ('body', 'prompt', "
                                          "'str'), 'msg': 'Input should be a valid string'"}}

    with FakeServer(probe_policy=refuse) as server:
        assert main(_args(data, server.url, tmp_path / "r")) == 2
        assert len(server.probes) == 1 and server.bodies == []
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "refuses the first request (--api completions-ids: " \
                             "/v1/completions): HTTP 500" in err[0]
    assert "use --api completions-text or --api chat" in err[0]


@pytest.mark.build
@pytest.mark.network
@pytest.mark.subprocess
def test_a_base_url_without_v1_that_reaches_a_native_route_says_so(data, tmp_path, capsys):
    """llama.cpp answers /completions at its root in its own format (no `choices`): a
    --base-url without /v1 gets there, and the one line says which URL was meant."""
    def native(body):  # llama-server's own /completion reply
        return 200, {"index": 0, "content": "\n", "tokens": [], "stop": True}

    with FakeServer(probe_policy=native) as server:
        root = server.url.removesuffix("/v1")
        assert main(_args(data, root, tmp_path / "r", "--retries", "1")) == 2
        assert server.bodies == []
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a completion" in err[0]
    assert f"did you mean --base-url {root}/v1?" in err[0]
    with FakeServer(probe_policy=native) as server:
        assert main(_args(data, server.url, tmp_path / "r2", "--retries", "1")) == 2
    assert "did you mean" not in capsys.readouterr().err


@pytest.mark.build
@pytest.mark.network
@pytest.mark.subprocess
def test_a_row_the_server_counts_otherwise_stops_the_run_and_is_redone_on_resume(data,
                                                                                tmp_path,
                                                                                capsys):
    order: list = []  # the rows' prompts, in the order they came (one at a time)
    wrong = {"on": True}

    def third_differs(body):
        prompt = tuple(body["prompt"])
        if body["max_tokens"] != 1 and prompt not in order:
            order.append(prompt)
        off = wrong["on"] and len(order) >= 3 and prompt == order[2]
        return len(prompt) + (3 if off else 0)

    out = tmp_path / "r"
    args = _args(data, "", out, "--no-report", "--concurrency", "1")
    with FakeServer(prompt_tokens=third_differs) as server:
        args[args.index("--base-url") + 1] = server.url
        assert main(args) == 2
        assert len(server.bodies) == 3  # nothing after the row that differed
        records = _records(out)
        assert [r["status"] for r in records] == ["ok", "ok", "error"]
        assert records[2]["reason"].startswith("prompt mismatch: the server counted") \
            and records[2]["server_prompt_tokens"] == records[2]["prompt_tokens"] + 3
        assert "the model saw another prompt than the build's" in capsys.readouterr().err
        wrong["on"] = False
        assert main(args) == 0
    final = {(r["task"], r["index"]): r for r in _records(out)}
    assert len(final) == 8 and all(r["status"] == "ok" and "prompt_mismatch" not in r
                                   for r in final.values())


@pytest.mark.build
@pytest.mark.network
@pytest.mark.subprocess
def test_the_servers_context_and_slots_are_used(data, tmp_path):
    """llama.cpp reports its context per slot (/v1/models meta.n_ctx) and its slots (/props):
    no --max-model-len needed, and never more requests in flight than slots."""
    entry = {"id": MODEL, "owned_by": "llamacpp", "meta": {"n_ctx": 2048}}
    out = tmp_path / "r"
    with FakeServer(models_entry=entry, props={"total_slots": 2}) as server:
        assert main(_args(data, server.url, out, "--no-report", "--concurrency", "8")) == 0
    assert server.peak == 2
    (serving,) = json.loads((out / "run.json").read_text())["serving"]
    assert (serving["max_model_len"], serving["max_model_len_source"]) == \
        (2048, "the server's meta.n_ctx")
    assert serving["concurrency"] == 2 and "lowered" in serving["concurrency_source"]
    # A server that says nothing of its slots nor batches (llama-cpp-python's): one at a time.
    with FakeServer(models_entry={"id": MODEL, "max_model_len": 4096}) as server:
        assert main(_args(data, server.url, tmp_path / "r1", "--no-report")) == 0
    assert server.peak == 1


@pytest.mark.build
@pytest.mark.network
@pytest.mark.subprocess
def test_text_api_sends_the_rendered_prompt_and_checks_its_count(data, tmp_path):
    from ruler.builder.tokenizer_registry import load_tokenizer

    tok = load_tokenizer(CONFIG)

    def counted(body):  # a server with the same tokenizer (Qwen: no BOS to add)
        return len(tok.encode(body["prompt"])) if isinstance(body.get("prompt"), str) else None

    out = tmp_path / "r"
    with FakeServer(prompt_tokens=counted) as server:
        assert main(_args(data, server.url, out, "--api", "completions-text")) == 0
    row = next(r for r in rows(data, CONFIG, TASKS[0], 1024) if r["index"] == 0)
    assert server.bodies[0]["prompt"] == tok.render_chat(row["input"], row["answer_prefix"])
    assert json.loads((out / "scores.json").read_text())["prompt_check"] == \
        {"checked": 8, "unchecked": 0, "differ": 0}


@pytest.mark.build
@pytest.mark.network
@pytest.mark.subprocess
def test_chat_api_puts_the_prefix_in_the_user_turn_where_the_server_does_not_continue_it(
        data, tmp_path):
    """A server that renders a pre-filled assistant turn as a finished one and opens a new
    turn after it: the probe sees the extra tokens, the prefix goes to the end of the user's
    message (upstream RULER's API client), and every row is counted against that rendering."""
    from ruler.builder.tokenizer_registry import load_tokenizer

    tok = load_tokenizer(CONFIG)

    def template(body):  # the model's own template, always with a generation prompt
        return len(tok.encode(tok.hf.apply_chat_template(body["messages"], tokenize=False,
                                                         add_generation_prompt=True)))

    out = tmp_path / "r"
    with FakeServer(prompt_tokens=template) as server:
        assert main(_args(data, server.url, out, "--api", "chat")) == 0
    assert [len(p["messages"]) for p in server.probes] == [2, 1]
    row = next(r for r in rows(data, CONFIG, TASKS[0], 1024) if r["index"] == 0)
    assert server.bodies[0]["messages"] == [
        {"role": "user", "content": row["input"] + row["answer_prefix"]}]
    scores = json.loads((out / "scores.json").read_text())
    assert scores["prompt_check"] == {"checked": 8, "unchecked": 0, "differ": 0}
    assert scores["serving"][0]["answer_prefix"] == "user turn"
    assert "the answer prefix at the end of the user's message" in \
        (out / "report.md").read_text()


@pytest.mark.parametrize("prefix_turn", ["assistant", "user"])
def test_chat_api_sends_a_row_without_answer_prefix_as_the_user_turn_alone(prefix_turn):
    """RULERv2's rows have no answer prefix: the request is the user message alone, without
    vLLM's continue fields, so the server renders its generation prompt (as NeMo-Skills sends
    it); the count it must report is the row's own (the generation-prompt rendering)."""
    from ruler.builder.tokenizer_registry import load_tokenizer
    from ruler.eval.backends.base import GenRequest
    from ruler.eval.backends.openai_api import Wire
    from ruler.eval.render import Renderer

    tok = load_tokenizer("llama-3.1")
    renderer = Renderer(tok, "chat")
    ids = renderer.ids("Question?", "")
    wire = Wire("chat", prefix_turn=prefix_turn, continue_fields=True)
    request = GenRequest(("c", "mk_niah_basic", 8192, 0), ids, 16384, True, "Question?", "")
    assert wire.body(request, renderer) == {"messages": [{"role": "user",
                                                          "content": "Question?"}]}
    assert wire.expected_tokens(request, renderer) == len(ids) == len(tok.encode(
        tok.hf.apply_chat_template([{"role": "user", "content": "Question?"}], tokenize=False,
                                   add_generation_prompt=True)))


def test_clients_share_one_tls_context_that_verifies_certificates_and_hostnames(monkeypatch):
    import ssl

    import httpx

    from ruler.eval.backends.openai import tls_context

    made = []
    real = httpx.create_ssl_context
    monkeypatch.setattr(httpx, "create_ssl_context", lambda *a, **k: made.append(1) or real())
    tls_context.cache_clear()
    try:
        first, second = tls_context(httpx), tls_context(httpx)
        assert first is second and len(made) == 1
        assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname
        assert first.cert_store_stats()["x509_ca"] > 0  # the CA bundle is loaded
    finally:
        tls_context.cache_clear()
