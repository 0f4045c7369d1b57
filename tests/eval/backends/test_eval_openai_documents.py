"""Every document the openai backend reads from a server — /v1/models, /props, /tokenize,
/apply-template, completion and chat replies — damaged in shape: the backend either uses
what it can or stops in one clear line (a RulerError, exit 2 on the command line); a row's
damaged reply is a failed row. Never a traceback. Against helpers.fake_openai's server."""

from __future__ import annotations

import json

import pytest

from helpers.fake_openai import MODEL, FakeServer
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.commands.main import main
from ruler.eval.backends.base import GenRequest
from ruler.eval.backends.openai import MAX_CONCURRENCY, OpenAIBackend, OpenAIOptions
from ruler.eval.render import Renderer
from ruler.kernel.errors import RulerError

pytestmark = [pytest.mark.network]

CONFIG = "qwen2.5"
DEEP = b"[" * 100_000 + b"]" * 100_000  # json.loads: RecursionError
TRUNCATED = b'{"data": [{"id": "served-mo'

#: Shapes of JSON any document may arrive in instead of the expected object.
NOT_OBJECTS = ([], ["served-model"], "served-model", 5, None, True, DEEP, TRUNCATED,
               b"\xef\xbb\xbf{}", b"NaN", b"")


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(CONFIG)


def _one_line(e: RulerError) -> str:
    text = str(e)
    assert text and "\n" not in text and "Traceback" not in text
    return text


def _backend(url: str, **opts) -> OpenAIBackend:
    return OpenAIBackend(OpenAIOptions(model=MODEL, base_url=url, retry_backoff=0.01,
                                       startup_timeout=5.0, **opts))


MODELS = NOT_OBJECTS + (
    {"data": "served-model"}, {"data": {"id": MODEL}}, {"data": [MODEL]},
    {"data": [None, 3, [MODEL]]}, {"data": [{"id": [MODEL]}]}, {"data": [{"id": None}]},
    {"data": [{"id": MODEL, "meta": []}]}, {"data": [{"id": MODEL, "meta": "n_ctx=4096"}]},
    {"data": [{"id": MODEL, "meta": {"n_ctx": "4096"}}]},
    {"data": [{"id": MODEL, "max_model_len": -1}]}, {"data": [{"id": MODEL, "owned_by": []}]},
    {"data": [{"id": MODEL, "max_model_len": 1e300}]}, {"object": "list"},
)


@pytest.mark.parametrize("doc", MODELS, ids=lambda d: repr(d)[:40])
def test_a_damaged_model_list_is_used_where_it_can_be_or_one_line(doc):
    with FakeServer(routes={"/v1/models": lambda body: (200, doc)}) as server:
        try:
            backend = _backend(server.url, max_model_len=2048)
        except RulerError as e:
            assert "/v1/models" in _one_line(e) or "does not serve" in str(e)
            return
        backend.close()
    assert backend.max_model_len == 2048 and 1 <= backend.concurrency <= MAX_CONCURRENCY


@pytest.mark.build
@pytest.mark.subprocess
def test_a_model_list_that_is_not_one_is_one_line_on_the_command_line(built_qwen_niah, tmp_path,
                                                                      capsys):
    for doc in ([{"id": MODEL}], "served-model", {"data": [{"id": MODEL, "meta": [4096]}]}):
        with FakeServer(routes={"/v1/models": lambda body: (200, doc)}) as server:
            code = main(["eval", "--model", MODEL, "--model-tokenizer", CONFIG, "--data",
                         str(built_qwen_niah), "--backend", "openai", "--base-url", server.url,
                         "--out", str(tmp_path / "r"), "--no-progress"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and err[0].startswith("ruler: error: "), err
        assert not (tmp_path / "r" / "run.json").exists()


PROPS = NOT_OBJECTS + ({"total_slots": "2"}, {"total_slots": [2]}, {"total_slots": 2.0},
                       {"total_slots": -3}, {"total_slots": 10 ** 12}, {"total_slots": None})


@pytest.mark.parametrize("doc", PROPS, ids=lambda d: repr(d)[:40])
def test_damaged_props_leave_the_concurrency_bounded(doc):
    entry = {"id": MODEL, "owned_by": "llamacpp", "meta": {"n_ctx": 2048}}
    with FakeServer(models_entry=entry, routes={"/props": lambda body: (200, doc)}) as server:
        backend = _backend(server.url)
        backend.close()
    assert 1 <= backend.concurrency <= MAX_CONCURRENCY


#: Replies to a completion request (the probe's and the rows'): none is an answer.
COMPLETIONS = NOT_OBJECTS + (
    {"choices": "x"}, {"choices": {"0": {"text": "a"}}}, {"choices": [5]}, {"choices": [[]]},
    {"choices": [{"text": 5, "finish_reason": "stop"}]},
    {"choices": [{"text": ["a"], "finish_reason": "stop"}]},
    {"choices": [{"message": [], "finish_reason": "stop"}]},
    {"choices": [{"message": {"content": {"a": 1}}, "finish_reason": "stop"}]},
    {"choices": [{"text": "a", "finish_reason": "stop"}], "usage": []},
    {"choices": [{"text": "a", "finish_reason": "stop"}], "usage": "12"},
    {"choices": [{"text": "a", "finish_reason": "stop"}], "usage": {"prompt_tokens": {}}},
    {"choices": [{"text": "a", "finish_reason": "stop"}], "usage": {"prompt_tokens": [9]}},
    {"choices": [{"text": "a", "finish_reason": "stop"}],
     "usage": {"completion_tokens": {"n": 1}}},
    {"choices": [{"text": "a", "finish_reason": ["stop"]}]},
    {"choices": [{"text": "a", "finish_reason": "stop"}], "model": ["m"]},
    {"choices": [{"text": "a", "finish_reason": "stop"}], "model": {"id": "m"}},
)


def _ids(tok, text: str) -> list[int]:
    return list(Renderer(tok, "chat").ids(text, " Answer:"))


@pytest.mark.parametrize("api", ["completions-ids", "chat"])
@pytest.mark.parametrize("doc", COMPLETIONS, ids=lambda d: repr(d)[:40])
def test_a_damaged_probe_reply_is_one_line(doc, api, tok):
    with FakeServer(probe_policy=lambda body: (200, doc)) as server:
        backend = _backend(server.url, api=api, retries=0)
        try:
            backend.prepare(Renderer(tok, "chat"))
        except RulerError as e:
            _one_line(e)
        finally:
            backend.close()


@pytest.mark.parametrize("api", ["completions-ids", "chat"])
def test_damaged_row_replies_are_failed_rows(api, tok):
    """Each row gets one of the damaged replies; the probe is answered properly."""
    renderer = Renderer(tok, "chat")
    requests = [GenRequest(("t", i), _ids(tok, f"Row {i}."), 8, input_text=f"Row {i}.",
                           answer_prefix=" Answer:") for i in range(len(COMPLETIONS))]
    by_prompt = {json.dumps(list(r.prompt_ids)): doc for r, doc in zip(requests, COMPLETIONS)}
    by_text = {r.input_text: doc for r, doc in zip(requests, COMPLETIONS)}

    def damaged(body, reply):
        if body.get("max_tokens") == 1:
            return reply
        if "messages" in body:
            return by_text[body["messages"][0]["content"].removesuffix(" Answer:")]
        return by_prompt[json.dumps(body["prompt"])]

    def counted(body):  # the build's counts, so that the probe passes
        if "prompt" in body:
            return len(body["prompt"])
        return len(tok.encode(tok.hf.apply_chat_template(body["messages"], tokenize=False,
                                                         add_generation_prompt=True)))

    with FakeServer(shape=damaged, prompt_tokens=counted) as server:
        backend = _backend(server.url, api=api, retries=0, concurrency=4)
        try:
            backend.prepare(renderer)
            results = {r.key: r for r in backend.generate(requests)}
        finally:
            backend.close()
    assert len(results) == len(requests)
    for r, doc in zip(requests, COMPLETIONS):
        got = results[r.key]
        assert got.error or isinstance(got.text, str), (doc, got)
        assert "\n" not in got.error
        if isinstance(doc, (bytes, list, str, int, type(None))) or "choices" not in doc:
            assert got.error, doc  # not a completion at all


#: What vLLM's /tokenize and llama.cpp's /apply-template may send instead of their answer.
RENDERINGS = NOT_OBJECTS + ({"tokens": "1 2 3"}, {"tokens": [["x"]]}, {"tokens": [1, "a"]},
                            {"tokens": None}, {"prompt": 5}, {"prompt": ["a"]},
                            {"prompt": {"text": "a"}})


@pytest.mark.parametrize("server_kind", ["vllm", "llamacpp"])
@pytest.mark.parametrize("doc", RENDERINGS, ids=lambda d: repr(d)[:40])
def test_a_damaged_rendering_of_the_probe_is_used_or_one_line(doc, server_kind, tok):
    def template(body):
        return len(tok.encode(tok.hf.apply_chat_template(body["messages"], tokenize=False,
                                                         add_generation_prompt=True)))

    entry = {"id": MODEL, "owned_by": server_kind, "max_model_len": 2048}
    route = "/tokenize" if server_kind == "vllm" else "/apply-template"
    with FakeServer(models_entry=entry, prompt_tokens=template,
                    routes={route: lambda body: (200, doc)}) as server:
        backend = _backend(server.url, api="chat", answer_prefix_turn="user")
        try:
            backend.prepare(Renderer(tok, "chat"))
        except RulerError as e:
            assert "renders the probe conversation" in _one_line(e)
        finally:
            backend.close()
