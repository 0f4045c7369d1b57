"""What counts as an answer, for every backend: an empty text with a normal finish ("stop",
"length") is a real answer (scored, usually wrong); no text, no output, or a finish reason
that says the engine gave up ("abort", "error") is a failed request, kept out of the score
and retried on resume. (The openai backend's version, against a loopback server, is in
test_eval_openai.py.)"""

from __future__ import annotations

import json

import pytest

from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.eval.backends import BackendSpec, register_backend, unregister_backend
from ruler.eval.backends.base import GenResult, finished_result
from ruler.eval.backends.fake import FakeBackend, FakeOptions
from ruler.eval.backends.hf import generation_result
from ruler.eval.runner import EvalConfig, run_eval

CONFIG = "qwen2.5"


def test_a_finished_generation_is_an_answer_only_when_it_has_text_and_a_normal_finish():
    assert finished_result("k", "", 0, "stop") == GenResult("k", "", 0, "stop")
    assert finished_result("k", "", 5, "length") == GenResult("k", "", 5, "length")
    for text, finish in ((None, "stop"), (None, None), ("42", "abort"), ("", "error")):
        r = finished_result("k", text, 3, finish)
        assert r.text is None and r.error, (text, finish)


def test_hf_generations_map_to_answers_with_the_finish_they_had():
    hf = load_tokenizer(CONFIG).hf
    eos = {hf.eos_token_id}
    # The model stopped at once: an empty answer, not a missing one.
    r = generation_result("k", [hf.eos_token_id], eos, hf.decode, True, 0.1)
    assert (r.text, r.finish_reason, r.output_tokens, r.error) == ("", "stop", 1, "")
    ids = hf.encode("Paris", add_special_tokens=False)
    r = generation_result("k", ids, eos, hf.decode, True, 0.1)
    assert (r.text, r.finish_reason, r.error) == ("Paris", "length", "")
    r = generation_result("k", ids + [hf.eos_token_id], eos, hf.decode, True, 0.1)
    assert (r.text, r.finish_reason) == ("Paris", "stop")


@pytest.mark.vllm
def test_vllm_request_outputs_without_an_answer_are_errors():
    from vllm.outputs import CompletionOutput, RequestOutput

    from ruler.eval.backends.vllm import _result

    def output(completions):
        return RequestOutput(request_id="0", prompt=None, prompt_token_ids=[1, 2, 3],
                             prompt_logprobs=None, outputs=completions, finished=True)

    def completion(text, finish, token_ids=(7,)):
        return CompletionOutput(index=0, text=text, token_ids=list(token_ids),
                                cumulative_logprob=None, logprobs=None, finish_reason=finish)

    ok = _result("k", output([completion("", "stop")]), 0.1)
    assert (ok.text, ok.finish_reason, ok.output_tokens, ok.error) == ("", "stop", 1, "")
    assert _result("k", output([completion("4", "length")]), 0.1).text == "4"
    for bad in (output([completion("partial", "abort")]), output([completion("", "error")]),
                output([completion(None, "stop")]), output([]), None):
        r = _result("k", bad, 0.1)
        assert r.text is None and r.error


class NoTextBackend(FakeBackend):
    """The fake engine, but every other result has no text and no error."""

    name = "no-text"

    def __init__(self, opts):
        super().__init__(FakeOptions(opts.model, answers="empty"))
        self.answered = 0

    def answer(self, request):
        self.answered += 1
        return GenResult(request.key, "x" if self.answered % 2 else None, 1, "stop")


@pytest.fixture
def no_text():
    spec = register_backend(BackendSpec(name="no-text", factory=NoTextBackend))
    yield spec.name
    unregister_backend(spec.name)


@pytest.mark.build
def test_a_result_without_text_from_any_backend_is_recorded_as_failed(no_text, tmp_path,
                                                                      built_qwen_niah):
    data = built_qwen_niah  # CONFIG: niah_single_1 x 1024 x 4 samples (conftest; read only)
    out = tmp_path / "res"
    outcome = run_eval(EvalConfig(model="/models/m", data=str(data), tokenizer_config=CONFIG,
                                  out=out, backend=no_text, model_tokenizer=CONFIG,
                                  progress=False, render_workers=0))
    assert (outcome.generated, outcome.errors) == (2, 2)
    records = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert sorted(r["status"] for r in records) == ["error", "error", "ok", "ok"]
