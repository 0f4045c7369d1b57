"""lm-evaluation-harness runs the exported tasks for real (pinned lm_eval, its `hf` model on CPU,
the tiny random Llama with the real qwen2.5 tokenizer): a few rows of three tasks, one of them qa.

- The completions equal `ruler eval --backend hf` on the same rows, through an export that reads
  the local build and through one that reads a release tag of a loopback Hub (fetched with the
  card's `hf download` command).
- lm-eval's reported scores equal `ruler score` on lm-eval's own samples files; with the random
  model they are zeros, so a stand-in model that answers part of the gold references shows the
  same on scores that are not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.builds import build, rows
from helpers.fake_hub import hub_for_this_process
from helpers.paths import TOKENIZERS
from ruler import release
from ruler.eval.integrations import lm_eval_export as ex
from ruler.eval.records.dataset import open_dataset
from ruler.eval.runner import EvalConfig, run_eval
from ruler.eval.scoring.score import score_file
from ruler.eval.tiny_model import build_tiny_llama

pytestmark = [pytest.mark.slow, pytest.mark.engines]
pytest.importorskip("lm_eval")
pytest.importorskip("torch")

CONFIG = "qwen2.5"
TASKS = ("niah_single_1", "vt", "qa_1")
L = 1024
LIMIT = 2
TOKEN = "hf_loopbackSecretToken123"
REPO = "ruler-org/ruler-lm-eval"
ENGINE_TIMEOUT = 900  # seconds for one lm_eval run (CPU, shared machine)


@pytest.fixture(scope="module")
def data(built_qwen_three) -> Path:
    return built_qwen_three  # CONFIG: TASKS x L x 3 samples (conftest; read only)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return build_tiny_llama(TOKENIZERS / CONFIG, tmp_path_factory.mktemp("tiny") / "model",
                            max_position_embeddings=L)


@pytest.fixture(scope="module")
def reference(data, model, tmp_path_factory) -> dict[tuple, str]:
    """`ruler eval --backend hf` on the first LIMIT rows of each task."""
    out = tmp_path_factory.mktemp("hf_results")
    run_eval(EvalConfig(model=str(model), data=str(data), tokenizer_config=CONFIG, out=out,
                        backend="hf", limit=LIMIT, progress=False))
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == len(TASKS) * LIMIT and all(p["status"] == "ok" for p in preds)
    return {(p["task"], p["index"]): p["prediction"] for p in preds}


def run_lm_eval(include_path: Path, model: Path, out: Path, env: dict | None = None) -> dict:
    """The card's command (hf model, chat template, max_length = L), as a user runs it."""
    cmd = [sys.executable, "-m", "lm_eval", "run", "--model", "hf",
           "--model_args", f"pretrained={model},dtype=float32,max_length={L}",
           "--apply_chat_template", "--include_path", str(include_path),
           "--tasks", ex.length_group(CONFIG, L), "--limit", str(LIMIT), "--batch_size", "1",
           "--device", "cpu", "--log_samples", "--output_path", str(out)]
    done = subprocess.run(cmd, env={**os.environ, **(env or {})}, capture_output=True,
                          text=True, timeout=ENGINE_TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Left truncation" not in done.stderr
    (results,) = out.rglob("results_*.json")
    return json.loads(results.read_text())


def completions(out: Path) -> dict[tuple, str]:
    got = {}
    for path in out.rglob("samples_*.jsonl"):
        for line in path.read_text().splitlines():
            s = json.loads(line)
            got[(s["doc"]["task"], s["doc"]["index"])] = s["filtered_resps"][0]
    return got


def assert_scores_equal_ruler_score(results: dict, out: Path, data_spec: str,
                                    revision: str | None = None) -> None:
    report = score_file(out, open_dataset(data_spec, revision, CONFIG))
    assert [c.task for c in report.cells] == list(TASKS)
    for c in report.cells:
        assert (c.scored, c.rows, c.missing) == (LIMIT, LIMIT, 0)
        assert results["results"][ex.task_name(CONFIG, c.task, L)]["score,none"] == c.score
    group = results["results"][ex.length_group(CONFIG, L)]["score,none"]
    assert group == pytest.approx(sum(c.score for c in report.cells) / len(report.cells))


def test_local_export_equals_ruler_eval_and_ruler_score(data, model, reference, tmp_path):
    tasks = ex.export_lm_eval(data, tmp_path / "tasks")
    results = run_lm_eval(tasks, model, tmp_path / "out", {"HF_HOME": str(tmp_path / "hf")})
    assert completions(tmp_path / "out") == reference
    assert_scores_equal_ruler_score(results, tmp_path / "out", str(data))


@pytest.fixture
def hub(tmp_path, monkeypatch):
    with hub_for_this_process(tmp_path, TOKEN, monkeypatch) as server:
        yield server


def test_hub_revision_export_equals_ruler_eval_and_ruler_score(data, model, reference, hub,
                                                               tmp_path):
    """`ruler release` uploads lm_eval/ in its one commit; the tasks read the tag's rows."""
    release.release(data, REPO, tag="v1", allow_unofficial=True, echo=lambda *a: None)
    commit = hub.repos[REPO].head
    assert {f"lm_eval/{ex.task_name(CONFIG, t, L)}.yaml" for t in TASKS} | {
        "lm_eval/utils.py"} <= set(commit.files)
    # a later commit on main must not change what the v1 tasks read
    hub.apply_commit(hub.repos[REPO], "later", {"README.md": b"moved on"}, ["data/"])
    env = {"HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0", "HF_ENDPOINT": hub.endpoint,
           "HF_TOKEN": TOKEN, "HF_HOME": str(tmp_path / "hf_home")}
    fetch = subprocess.run(  # the card's command
        [str(Path(sys.executable).parent / "hf"), "download", REPO, "--repo-type", "dataset",
         "--revision", "v1", "--include", f"{ex.EXPORT_DIR}/*",
         "--local-dir", str(tmp_path / "ruler-tasks")],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert fetch.returncode == 0, fetch.stderr[-2000:]
    tasks = tmp_path / "ruler-tasks" / ex.EXPORT_DIR
    assert "dataset_path: ruler-org/ruler-lm-eval" in \
        (tasks / f"{ex.task_name(CONFIG, 'vt', L)}.yaml").read_text()
    results = run_lm_eval(tasks, model, tmp_path / "out", env)
    assert completions(tmp_path / "out") == reference
    assert_scores_equal_ruler_score(results, tmp_path / "out", REPO, "v1")
    assert any(f"/resolve/{commit.sha}/data/{CONFIG}/qa_1/{L}.parquet" in p
               for _, p in hub.requests)


def test_lm_eval_scores_equal_ruler_score_on_mixed_answers(data, tmp_path):
    """A stand-in model answering with part of the gold references: lm-eval's task and group
    scores equal `ruler score` on the samples files lm-eval wrote."""
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    gold = {r["input"]: r["outputs"] for t in TASKS for r in rows(data, CONFIG, t, L)}

    class PartialGold(LM):
        def generate_until(self, requests):
            out = []
            for n, req in enumerate(requests):
                refs = next(v for k, v in gold.items() if k in req.args[0])
                out.append(" " + ", ".join(refs[: 1 + n % 3]))
            return out

        def loglikelihood(self, requests):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests):
            raise NotImplementedError

    tasks = ex.export_lm_eval(data, tmp_path / "tasks")
    tracker = EvaluationTracker(output_path=str(tmp_path / "out"))
    results = simple_evaluate(model=PartialGold(), tasks=[ex.config_group(CONFIG)],
                              task_manager=TaskManager(include_path=str(tasks),
                                                       include_defaults=False),
                              log_samples=True, evaluation_tracker=tracker)
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for name in results["configs"]:
        tracker.save_results_samples(task_name=name, samples=samples[name])
    report = score_file(tmp_path / "out", open_dataset(str(data)))
    scores = {c.task: c.score for c in report.cells}
    assert 0 < scores["vt"] < 100  # vt has several references: partial answers score between
    for task, score in scores.items():
        assert results["results"][ex.task_name(CONFIG, task, L)]["score,none"] == score
    mean = sum(scores.values()) / len(scores)
    for group in (ex.length_group(CONFIG, L), ex.config_group(CONFIG)):
        assert results["results"][group]["score,none"] == pytest.approx(mean)


def test_an_export_moved_with_its_build_still_runs(data, tmp_path):
    """`ruler export lm-eval OUT` writes OUT/lm_eval; the build folder moved elsewhere whole
    (the old path gone), lm-eval still loads every task's rows from it and scores them, and a
    task folder moved away from its build says where it looked."""
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.tasks import TaskManager

    shutil.copytree(data, tmp_path / "before" / "ruler")
    ex.export_lm_eval(tmp_path / "before" / "ruler")
    (tmp_path / "before").rename(tmp_path / "after")
    moved = tmp_path / "after" / "ruler"
    gold = {r["input"]: r["outputs"] for t in TASKS for r in rows(data, CONFIG, t, L)}

    class Gold(LM):
        def generate_until(self, requests):
            return [" " + ", ".join(next(v for k, v in gold.items() if k in req.args[0]))
                    for req in requests]

        def loglikelihood(self, requests):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests):
            raise NotImplementedError

    def run(include_path: Path) -> dict:
        return simple_evaluate(model=Gold(), tasks=[ex.length_group(CONFIG, L)], limit=LIMIT,
                               task_manager=TaskManager(include_path=str(include_path),
                                                        include_defaults=False))

    results = run(moved / ex.EXPORT_DIR)
    for task in TASKS:
        assert results["results"][ex.task_name(CONFIG, task, L)]["score,none"] == 100.0
    assert results["results"][ex.length_group(CONFIG, L)]["score,none"] == 100.0
    (moved / ex.EXPORT_DIR).rename(tmp_path / "alone")
    with pytest.raises(FileNotFoundError, match="run `ruler export lm-eval` again"):
        run(tmp_path / "alone")


@pytest.mark.parametrize("config", ["llama-3.1", "qwen2.5"])  # a BOS in the template, and none
def test_lm_eval_sends_the_token_ids_the_builder_counted(config, tmp_path):
    """lm-eval's own request path (task -> chat template -> hf model's tokenization) gives
    exactly `Tokenizer.prompt_ids` of each row: one BOS, nothing cut, the row's `length`."""
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager, get_task_dict

    from ruler.builder.tokenizer_registry import load_tokenizer

    out = tmp_path / "ruler"
    build(out, config, ("niah_single_1", "qa_1"), (L,), samples=2, workers=1)
    lm = HFLM(pretrained=str(build_tiny_llama(TOKENIZERS / config, tmp_path / "model", L)),
              dtype="float32", max_length=L, device="cpu", batch_size=1)
    tm = TaskManager(include_path=str(ex.export_lm_eval(out, tmp_path / "tasks")),
                     include_defaults=False)
    tok = load_tokenizer(config)
    bos = tok.hf.convert_tokens_to_ids("<|begin_of_text|>")
    checked = 0
    for task in get_task_dict([ex.task_name(config, t, L) for t in ("niah_single_1", "qa_1")],
                              tm).values():
        task.build_all_requests(apply_chat_template=True, chat_template=lm.apply_chat_template,
                                tokenizer_name=lm.tokenizer_name)
        for inst in task.instances:
            context, gen_kwargs = inst.args
            ids, _ = lm.tok_batch_encode([context],
                                         left_truncate_len=L - gen_kwargs["max_gen_toks"])
            want = tok.prompt_ids(inst.doc["input"], inst.doc["answer_prefix"], "chat")
            assert ids[0].tolist() == want
            assert len(want) + gen_kwargs["max_gen_toks"] == inst.doc["length"] <= L
            if config == "llama-3.1":  # its template opens with <|begin_of_text|>: once
                assert want[0] == bos and want.count(bos) == 1
            checked += 1
    assert checked == 4
