"""Inspect runs the `ruler` task for real, offline: Inspect's mock model through the
`inspect eval ruler/ruler` command (the entry point), and in Python a model that echoes the
gold answers (score 100) or part of them; `ruler score` on each log gives Inspect's numbers."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.builds import rows
from helpers.paths import TOKENIZERS
from ruler.eval.records.dataset import open_dataset
from ruler.eval.scoring.score import score_file

pytestmark = [pytest.mark.slow, pytest.mark.engines]
pytest.importorskip("inspect_ai")

CONFIG = "qwen2.5"
TASKS = ("niah_single_1", "vt", "qa_1")
L = 1024
LIMIT = 2


@pytest.fixture(scope="module")
def data(built_qwen_three) -> Path:
    return built_qwen_three  # CONFIG: TASKS x L x 3 samples (conftest; read only)


@pytest.fixture(scope="module")
def tiktoken_cache(tmp_path_factory) -> Path:
    """mockllm counts tokens with tiktoken's o200k_base: seed tiktoken's cache offline."""
    from ruler.builder.tokenizer_registry import registry

    entry = registry()["gpt-4o"]
    cache = tmp_path_factory.mktemp("tiktoken")
    (cache / hashlib.sha1(entry.url.encode()).hexdigest()).write_bytes(
        (TOKENIZERS / entry.dir / next(iter(entry.files))).read_bytes())
    return cache


def _log_scores(log) -> dict[str, float]:
    (scores,) = log.results.scores
    return {name: m.value for name, m in scores.metrics.items()}


def _ruler_scores(log_path: Path, data: Path) -> dict[str, float]:
    report = score_file(log_path, open_dataset(str(data)))
    assert all((c.scored, c.rows, c.missing) == (LIMIT, LIMIT, 0) for c in report.cells)
    return {f"{c.task}/{c.max_seq_length}": c.score for c in report.cells}


def test_inspect_eval_command_with_the_mock_model(data, tiktoken_cache, tmp_path):
    from inspect_ai.log import read_eval_log

    cmd = [str(Path(sys.executable).parent / "inspect"), "eval", "ruler/ruler",
           "--model", "mockllm/model", "-T", f"data={data}", "-T", f"lengths={L}",
           "-T", f"limit={LIMIT}", "--log-dir", str(tmp_path / "logs"), "--display", "plain"]
    done = subprocess.run(cmd, env={**os.environ, "TIKTOKEN_CACHE_DIR": str(tiktoken_cache)},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success" and len(log.samples) == len(TASKS) * LIMIT
    for s in log.samples:
        # the prefilled assistant turn, then the mock's answer
        assert [m.role for m in s.messages] == ["user", "assistant", "assistant"]
        assert s.messages[1].text == s.metadata["answer_prefix"] and s.metadata["prefilled"]
    scores = _log_scores(log)
    assert scores == {**{f"{t}/{L}": 0.0 for t in TASKS}, "mean": 0.0}
    assert _ruler_scores(tmp_path / "logs", data) == {f"{t}/{L}": 0.0 for t in TASKS}


def _gold_model(data: Path, answer, seen: list):
    """Inspect's mockllm answering from the dataset's references, found by the prompt."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    gold = {r["input"]: r for t in TASKS for r in rows(data, CONFIG, t, L)}

    def respond(messages, tools, tool_choice, config):
        row = gold[messages[0].text]
        seen.append((row["task"], config.max_tokens, config.temperature,
                     [m.role for m in messages], messages[-1].text))
        out = ModelOutput.from_content("mockllm", answer(row))
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    return get_model("mockllm/model", custom_outputs=respond)


def test_a_model_echoing_the_gold_answers_scores_100(data, tmp_path):
    from inspect_ai import eval as inspect_eval

    from ruler.eval.inspect import ruler

    seen: list = []
    (log,) = inspect_eval(ruler(data=str(data), lengths=L, limit=LIMIT),
                          model=_gold_model(data, lambda r: " " + ", ".join(r["outputs"]), seen),
                          log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success"
    assert _log_scores(log) == {**{f"{t}/{L}": 100.0 for t in TASKS}, "mean": 100.0}
    assert _ruler_scores(Path(log.location), data) == {f"{t}/{L}": 100.0 for t in TASKS}
    budgets = {"niah_single_1": 128, "vt": 30, "qa_1": 32}  # upstream's, per row
    for task, max_tokens, temperature, roles, _last in seen:
        assert (max_tokens, temperature, roles) == (budgets[task], 0.0, ["user", "assistant"])
    assert {last for *_, last in seen} == {r["answer_prefix"] for t in TASKS
                                           for r in rows(data, CONFIG, t, L)[:LIMIT]}


def test_partial_answers_and_no_prefill_score_as_ruler_score_does(data, tmp_path):
    from inspect_ai import eval as inspect_eval

    from ruler.eval.inspect import ruler

    seen: list = []
    (log,) = inspect_eval(
        ruler(data=str(data), tokenizer_config=CONFIG, tasks="vt,qa_1", lengths=str(L),
              limit=LIMIT, prefill=False),
        model=_gold_model(data, lambda r: f"It is {r['outputs'][r['index'] % 2]}.", seen),
        log_dir=str(tmp_path / "logs"), display="none")
    assert all(roles == ["user"] for *_, roles, _ in seen)  # nothing pre-filled
    scores = _log_scores(log)
    assert 0 < scores[f"vt/{L}"] < 100  # one of vt's several references
    assert scores.pop("mean") == pytest.approx(sum(scores.values()) / len(scores))
    assert _ruler_scores(Path(log.location), data) == scores


def test_a_log_without_content_hashes_is_tied_to_its_build_by_the_prompt(data, tmp_path):
    """Issue 30.1: a log whose samples lost their data_sha256 (an older task, an edit) is still
    tied to its rows by the logged prompt (the sample's input is the row's `input`): scored
    against a rebuild of the config with another seed it is refused, naming the rows; against
    its own build every row is tied by its prompt."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log, write_eval_log

    from helpers.builds import build
    from ruler.eval.inspect import ruler
    from ruler.kernel.errors import RulerError

    (log,) = inspect_eval(ruler(data=str(data), lengths=L, limit=LIMIT),
                          model=_gold_model(data, lambda r: " " + ", ".join(r["outputs"]), []),
                          log_dir=str(tmp_path / "logs"), display="none")
    log = read_eval_log(log.location)
    for s in log.samples:
        del s.metadata["data_sha256"]
    stripped = tmp_path / "stripped.eval"
    write_eval_log(log, str(stripped))
    rebuilt = tmp_path / "rebuilt"
    build(rebuilt, CONFIG, TASKS, (L,), samples=3, workers=1, seed=7)
    with pytest.raises(RulerError, match=r"different revision of the dataset.*"
                                         r"its prompt differs from the row's"):
        score_file(stripped, open_dataset(str(rebuilt)))
    report = score_file(stripped, open_dataset(str(data)))
    assert [c.score for c in report.cells] == [100.0] * len(TASKS)
    assert report.tied_to_build.by == {"prompt": len(TASKS) * LIMIT}
    assert report.unverified == 0


def test_the_task_reads_a_release_tag_from_the_hub(data, tmp_path, monkeypatch):
    """`-T data=ORG/NAME -T revision=TAG`: the tag's rows, whatever main holds later."""
    from helpers.fake_hub import hub_for_this_process
    from ruler import release
    from ruler.eval.integrations.inspect_task import ruler_samples

    local, _ = ruler_samples(str(data), lengths=L, limit=LIMIT)
    with hub_for_this_process(tmp_path, "hf_loopbackSecretToken123", monkeypatch) as hub:
        release.release(data, "ruler-org/ruler-inspect", tag="v1", allow_unofficial=True,
                        echo=lambda *a: None)
        repo = hub.repos["ruler-org/ruler-inspect"]
        hub.apply_commit(repo, "later", {}, ["data/"])  # main moves on without the data
        remote, prov = ruler_samples("ruler-org/ruler-inspect", revision="v1", lengths=L,
                                     limit=LIMIT)
    assert prov["revision"] == repo.tags["v1"]
    assert [(s.id, s.input[0].content, s.target, s.metadata) for s in remote] == \
        [(s.id, s.input[0].content, s.target, s.metadata) for s in local]


def test_greedy_with_inspects_hf_provider_on_cpu(data, tmp_path):
    """Inspect's transformers provider (`hf/`) samples unless told otherwise and refuses
    temperature 0: the task still decodes greedily there, and every completion equals ruler's
    own greedy decoding (`--backend hf`) of the prompt that provider renders (the user turn and
    the generation prompt: it does not continue a pre-filled turn)."""
    pytest.importorskip("torch")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model
    from transformers import AutoTokenizer

    from ruler.eval.backends import GenRequest
    from ruler.eval.backends.hf import HFBackend, HFOptions
    from ruler.eval.inspect import ruler
    from ruler.eval.tiny_model import build_tiny_llama

    model = build_tiny_llama(TOKENIZERS / CONFIG, tmp_path / "model", max_position_embeddings=L)
    (log,) = inspect_eval(ruler(data=str(data), lengths=L, limit=1),
                          model=get_model("hf/tiny", model_path=str(model), device="cpu"),
                          max_connections=1,  # one prompt per batch: no padding
                          log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    assert len(log.samples) == len(TASKS)
    assert all(s.error is None and not s.metadata["prefilled"] for s in log.samples)
    tok = AutoTokenizer.from_pretrained(str(model))
    reference = HFBackend(HFOptions(model=str(model), dtype="float32"))
    for s in log.samples:
        chat = tok.apply_chat_template([{"role": "user", "content": s.input[0].text}],
                                       add_generation_prompt=True, tokenize=False)
        (want,) = reference.generate([GenRequest(s.id, tok(chat)["input_ids"],
                                                 s.metadata["tokens_to_generate"])])
        assert s.output.completion == want.text and want.output_tokens > 0
