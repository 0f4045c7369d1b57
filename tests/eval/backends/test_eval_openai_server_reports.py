"""What an OpenAI-compatible server reports about each answer, taken at its word only where it
can be: prompt counts in any numeric form (compared) or none (counted as unchecked, and said),
the model it answered as (recorded and shown), completion sizes and counts (bounded, nonsense
recorded as not reported), its slots (capped), and a start-up that never ends (bounded, the
wait said). Against the loopback server of helpers.fake_openai."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from helpers.fake_openai import MODEL, FakeServer, Unsized
from ruler.commands.main import main
from ruler.eval.backends.openai import MAX_CONCURRENCY, OpenAIBackend, OpenAIOptions

pytestmark = [pytest.mark.build]

CONFIG = "qwen2.5"


@pytest.fixture(scope="module")
def data(built_qwen_niah_vt) -> Path:
    return built_qwen_niah_vt  # CONFIG: niah_single_1, vt x 1024 x 4 samples (read only)


def _args(data: Path, url: str, out: Path, *extra: str) -> list[str]:
    return ["eval", "--model", MODEL, "--model-tokenizer", CONFIG, "--data", str(data),
            "--tokenizer-config", CONFIG, "--backend", "openai", "--base-url", url,
            "--out", str(out), "--no-progress", "--no-plots", *extra]


def _records(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]


class InOrder:
    """A `shape` that damages the rows' replies by the order they come in (one at a time):
    `damage[i](reply, n)` for the i-th row, n its prompt's token count; the probe untouched."""

    def __init__(self, *damage):
        self.damage, self.seen, self.lock = damage, [], threading.Lock()

    def __call__(self, body, reply):
        if body.get("max_tokens") == 1:
            return reply
        with self.lock:
            i = len(self.seen)
            self.seen.append(i)
        return self.damage[i % len(self.damage)](reply, len(body["prompt"]))


def _usage(**fields):
    def damage(reply, n):
        reply["usage"] = {k: (v(n) if callable(v) else v) for k, v in fields.items()}
        return reply
    return damage


# --- finding 2: a prompt count in any numeric form is compared; none is said -----------------

@pytest.mark.network
@pytest.mark.subprocess
def test_prompt_counts_in_any_numeric_form_are_compared_and_the_unchecked_ones_said(
        data, tmp_path, capsys):
    """A float or a string that equals the build's count is equal (the string recorded as
    given); rows without a usable count are counted apart, in the console, scores.json and the
    report, never under "checked"."""
    shape = InOrder(_usage(prompt_tokens=lambda n: n),
                    _usage(prompt_tokens=lambda n: float(n)),
                    _usage(prompt_tokens=lambda n: str(n)),
                    lambda reply, n: {k: v for k, v in reply.items() if k != "usage"},
                    _usage(completion_tokens=4),
                    _usage(prompt_tokens="many"),
                    _usage(prompt_tokens=True),
                    _usage(prompt_tokens=lambda n: n))
    out = tmp_path / "r"
    with FakeServer(shape=shape) as server:
        assert main(_args(data, server.url, out, "--concurrency", "1")) == 0
    console = capsys.readouterr().out
    records = _records(out)
    assert [r["status"] for r in records] == ["ok"] * 8
    checked = [r for r in records if "server_prompt_tokens" in r]
    assert len(checked) == 4 and all(r["server_prompt_tokens"] == r["prompt_tokens"]
                                     and "prompt_mismatch" not in r for r in checked)
    as_string = [r for r in records if "given as a string" in r.get("server_notes", "")]
    assert len(as_string) == 1 and f"'{as_string[0]['prompt_tokens']}'" in \
        as_string[0]["server_notes"]
    unchecked = [r["prompt_unchecked"] for r in records if "prompt_unchecked" in r]
    assert sorted(unchecked) == sorted([
        "the server reported no usage.prompt_tokens",
        "the server reported no usage.prompt_tokens",
        "usage.prompt_tokens 'many' is not a number",
        "usage.prompt_tokens True is not a number"])
    scores = json.loads((out / "scores.json").read_text())
    assert scores["prompt_check"] == {"checked": 4, "unchecked": 4, "differ": 0}
    line = ("Server prompt counts: 4 of 8 answered row(s) checked, all equal to the build's; "
            "4 not checked (the server reported no usage.prompt_tokens, or not as a number: "
            "`prompt_unchecked` in the predictions says which).")
    assert line in (out / "report.md").read_text()
    assert "server prompt counts: 4 of 8 answered row(s) checked, all equal to the build's; " \
           "4 not checked" in console
    assert "usage.prompt_tokens checked against the build's count" not in console


@pytest.mark.network
@pytest.mark.subprocess
@pytest.mark.parametrize("form", [float, str])
def test_a_prompt_count_that_differs_is_a_mismatch_whatever_its_type(form, data, tmp_path,
                                                                     capsys):
    shape = InOrder(_usage(prompt_tokens=lambda n: n),
                    _usage(prompt_tokens=lambda n: form(n + 7)))
    out = tmp_path / "r"
    with FakeServer(shape=shape) as server:
        assert main(_args(data, server.url, out, "--concurrency", "1", "--no-report")) == 2
        assert len(server.bodies) == 2  # stopped at the row that differed
    assert "the model saw another prompt than the build's" in capsys.readouterr().err
    second = _records(out)[1]
    assert second["status"] == "error" and second["reason"].startswith("prompt mismatch")
    assert second["server_prompt_tokens"] == second["prompt_tokens"] + 7


@pytest.mark.network
@pytest.mark.subprocess
def test_a_probe_count_given_as_a_float_that_differs_is_refused(data, tmp_path, capsys):
    def float_count(body):
        return 200, {"choices": [{"text": "x", "finish_reason": "length"}],
                     "usage": {"prompt_tokens": len(body["prompt"]) + 1.0}}

    with FakeServer(probe_policy=float_count) as server:
        assert main(_args(data, server.url, tmp_path / "r", "--no-report")) == 2
        assert server.bodies == []
    assert "does not see the build's prompt" in capsys.readouterr().err


# --- finding 4: the model the server says it answered as ------------------------------------

@pytest.mark.network
@pytest.mark.subprocess
def test_the_model_a_server_answers_as_is_recorded_and_shown(data, tmp_path, capsys):
    """Hosted APIs answer as a dated snapshot of the name asked for, proxies as the model they
    routed to: not refused, but recorded per row, in run.json's serving record, and shown."""
    def snapshot(body, reply):
        return {**reply, "model": "served-model-2024-08-06"}

    out = tmp_path / "r"
    with FakeServer(shape=snapshot) as server:
        assert main(_args(data, server.url, out)) == 0
    console = capsys.readouterr().out
    assert all(r["server_model"] == "served-model-2024-08-06" for r in _records(out))
    (serving,) = json.loads((out / "run.json").read_text())["serving"]
    assert serving["server_model"] == "served-model-2024-08-06"
    scores = json.loads((out / "scores.json").read_text())
    assert scores["prompt_check"]["answered_as"] == {"served-model-2024-08-06": 8}
    shown = "the server answered as model 'served-model-2024-08-06' (asked: 'served-model')"
    assert shown in (out / "report.md").read_text() and shown in console
    assert "Answers that name another model than asked: 'served-model-2024-08-06' (8 rows)." \
        in (out / "report.md").read_text()


@pytest.mark.network
@pytest.mark.subprocess
def test_a_server_that_echoes_the_model_asked_for_records_nothing_more(data, tmp_path):
    def echo(body, reply):
        return {**reply, "model": body["model"]}

    out = tmp_path / "r"
    with FakeServer(shape=echo) as server:
        assert main(_args(data, server.url, out, "--no-report")) == 0
    assert not any("server_model" in r for r in _records(out))
    (serving,) = json.loads((out / "run.json").read_text())["serving"]
    assert serving["server_model"] == MODEL
    assert "answered_as" not in json.loads((out / "scores.json").read_text())["prompt_check"]


# --- finding 9: slots, sizes and counts ------------------------------------------------------

@pytest.mark.network
def test_a_servers_slots_are_capped_and_a_larger_concurrency_refused(data, tmp_path, capsys):
    entry = {"id": MODEL, "owned_by": "llamacpp", "meta": {"n_ctx": 2048}}
    with FakeServer(models_entry=entry, props={"total_slots": 100000}) as server:
        backend = OpenAIBackend(OpenAIOptions(model=MODEL, base_url=server.url))
        try:
            assert backend.concurrency == MAX_CONCURRENCY == 256
            assert "capped" in backend.concurrency_source
        finally:
            backend.close()
    assert main(_args(data, "http://127.0.0.1:9/v1", tmp_path / "r", "--concurrency",
                      "100000")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ruler: error: --concurrency must be <= {MAX_CONCURRENCY}, got 100000"]


@pytest.mark.network
@pytest.mark.subprocess
def test_a_completion_far_beyond_max_tokens_is_refused_and_what_came_recorded(data,
                                                                             tmp_path):
    """Replies of 32 MiB, announced by Content-Length (not read) or not (read stops at the
    bound), and one under the byte bound whose text no max_tokens tokens could make, all
    saying completion_tokens 3: the rows fail (out of the score, retried on resume) with what
    was received; nothing of it is stored."""
    size = 32 << 20
    unsized = Unsized(b'{"choices": [{"finish_reason": "length", "text": "', size)
    replies = ["7" * size, unsized, "7" * 200_000]
    given: dict = {}

    def policy(prompt, attempt):
        key = tuple(prompt)
        if key not in given and len(given) < len(replies):
            given[key] = replies[len(given)]
        reply = given.get(key)
        if reply is None:
            return 200, {}, 0.0
        if isinstance(reply, Unsized):
            return 200, {}, 0.0, reply
        return 200, {}, 0.0, {"choices": [{"text": reply, "finish_reason": "length"}],
                              "usage": {"prompt_tokens": len(prompt), "completion_tokens": 3}}

    out = tmp_path / "r"
    with FakeServer(policy) as server:
        assert main(_args(data, server.url, out, "--no-report", "--retries", "0")) == 1
    assert (out / "predictions.jsonl").stat().st_size < 100_000
    assert unsized.sent < size  # the client hung up
    failed = sorted(r["reason"] for r in _records(out) if r["status"] == "error")
    assert len(failed) == 3
    bound = f"the server's reply is more than {(1 << 20) + 128 * 1024} bytes"
    announced, cut, wide = sorted(failed, key=lambda reason: ("Content-Length" not in reason,
                                                              "characters" in reason))
    assert announced.startswith(bound) and "by its Content-Length) for a completion of at " \
        "most 128 token(s) (max_tokens): refused, read no further" in announced
    assert int(announced[len(bound) + 2:].split()[0]) > size
    assert cut.startswith(bound + " for a completion of at most 128 token(s)")
    assert wide.startswith("the server's completion has 200000 characters, more than 128 "
                           "token(s) (max_tokens) can make")


@pytest.mark.network
@pytest.mark.subprocess
def test_nonsense_completion_counts_are_recorded_as_not_reported(data, tmp_path):
    shape = InOrder(_usage(prompt_tokens=lambda n: n, completion_tokens=-5),
                    _usage(prompt_tokens=lambda n: n, completion_tokens=2.5),
                    _usage(prompt_tokens=lambda n: n, completion_tokens="lots"),
                    _usage(prompt_tokens=lambda n: n, completion_tokens=4))
    out = tmp_path / "r"
    with FakeServer(shape=shape) as server:
        assert main(_args(data, server.url, out, "--no-report", "--concurrency", "1")) == 0
    records = _records(out)
    assert [r["output_tokens"] for r in records] == [0, 0, 0, 4] * 2
    notes = [r.get("server_notes", "") for r in records[:4]]
    assert "usage.completion_tokens -5 is not a token count: recorded as not reported" \
        in notes[0]
    assert "usage.completion_tokens 2.5 is not a token count" in notes[1]
    assert "usage.completion_tokens 'lots' is not a number" in notes[2]
    assert notes[3] == ""


# --- finding 8: a start-up that never ends --------------------------------------------------

@pytest.mark.network
@pytest.mark.subprocess
def test_a_probe_that_never_answers_is_bounded_and_says_what_it_waits_for(data, tmp_path,
                                                                         capsys):
    def silent(body):
        return 200, None, 3600.0

    started = time.monotonic()
    with FakeServer(probe_policy=silent) as server:
        code = main(_args(data, server.url, tmp_path / "r", "--startup-timeout", "1"))
        assert server.bodies == []
    took = time.monotonic() - started
    assert code == 2 and took < 30
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("ruler: error: the server at ") and \
        "did not answer a one-token request (the start-up probe) within 1 s" in err[-1]
    assert "--startup-timeout" in err[-1]
    assert not (tmp_path / "r" / "run.json").exists()


@pytest.mark.network
@pytest.mark.subprocess
def test_a_server_loading_its_model_is_waited_for_and_said(data, tmp_path, capsys):
    """llama-server answers 503 "Loading model" until its model is in memory (/props as well):
    waited for whatever --retries says, with a message, then its slots are used."""
    ready_at = time.monotonic() + 1.0
    loading = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}

    def probe(body):
        return (503, loading) if time.monotonic() < ready_at else (200, None)

    def props(body):
        return (503, loading) if time.monotonic() < ready_at else (200, {"total_slots": 2})

    entry = {"id": MODEL, "owned_by": "llamacpp", "meta": {"n_ctx": 2048}}
    out = tmp_path / "r"
    with FakeServer(models_entry=entry, probe_policy=probe, routes={"/props": props}) as server:
        assert main(_args(data, server.url, out, "--no-report", "--retries", "0")) == 0
    err = capsys.readouterr().err
    assert "waiting for the server at" in err and "HTTP 503" in err and "Loading model" in err
    (serving,) = json.loads((out / "run.json").read_text())["serving"]
    assert serving["concurrency"] == 2
    assert server.peak == 2


def test_the_startup_timeout_flag_is_explained_and_checked(data, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    assert "--startup-timeout" in capsys.readouterr().out
    assert main(_args(data, "http://127.0.0.1:9/v1", tmp_path / "r", "--startup-timeout",
                      "0")) == 2
    assert "--startup-timeout must be > 0" in capsys.readouterr().err
