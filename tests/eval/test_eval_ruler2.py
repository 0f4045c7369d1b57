"""RULERv2 end to end on a real build: `ruler eval` (fake backend) -> scores -> report, and a
NeMo-Skills output file made from the same rows, scored by `ruler score`.

The fake backend's gold answer is what a right model writes (the references joined by
spaces; `\\boxed{X}` for the multiple-choice rows), so every task scores 100, and an empty
answer scores 0. The NeMo-Skills file has, per record, the fields `ns eval` writes
(nemo_skills/inference/generate.py @01462f39: the input row's `index`, `question`,
`expected_answer`, `length`, then `generation` and its statistics).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers.builds import build, rows
from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS
from ruler.builder.manifest import Manifest
from ruler.commands.main import main
from ruler.eval.integrations import lm_eval_export as ex
from ruler.eval.metrics.specs import METRIC_SPECS
from ruler.eval.records.dataset import open_dataset
from ruler.eval.scoring.score import score_file

pytestmark = pytest.mark.slow  # a 12-task build and three evaluations: ~1 min on 2 cores

TOKENIZER = "llama-3.1"  # its template differs between an empty pre-filled turn and an opened one
CONFIG = f"{TOKENIZER}--v2"
L = 4096


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("v2") / "ruler"
    build(out, TOKENIZER, RULER2_TASKS, (L,), samples=2, workers=1, benchmark="ruler2")
    return out


def _eval(data: Path, out: Path, *extra: str) -> int:
    return main(["eval", "--backend", "fake", "--model", TOKENIZER, "--data", str(data),
                 "--out", str(out), "--no-progress", *extra])


def _scores(out: Path) -> dict:
    return json.loads((out / "scores.json").read_text())


def test_gold_answers_score_100_on_every_task_and_empty_ones_0(data, tmp_path):
    assert _eval(data, tmp_path / "gold") == 0
    scores = _scores(tmp_path / "gold")
    assert scores["config"] == CONFIG
    assert {c["task"]: c["score"] for c in scores["cells"]} == {t: 100.0 for t in RULER2_TASKS}
    assert {c["task"]: c["metric"] for c in scores["cells"]}["mk_niah_medium"] == "multichoice"
    report = json.loads((tmp_path / "gold" / "report.json").read_text())
    assert report["benchmark"] == "ruler2" and report["mean_by_length"] == {str(L): 100.0}
    assert report["family_difficulty"][str(L)]["family_mean"] == {"mk": 100.0, "mv": 100.0,
                                                                 "qa": 100.0}
    md = (tmp_path / "gold" / "report.md").read_text()
    assert md.startswith("# RULERv2 results") and "## RULERv2: family x difficulty" in md
    # Each prediction ran on the prompt alone counted as `length`, with the whole budget.
    preds = [json.loads(line) for line in (tmp_path / "gold" / "predictions.jsonl").open()]
    length = {(r["task"], r["index"]): r["length"] for t in RULER2_TASKS
              for r in rows(data, CONFIG, t, L)}
    assert all(p["prompt_tokens"] == length[(p["task"], p["index"])] for p in preds)
    assert not any("output_budget" in p for p in preds)

    assert _eval(data, tmp_path / "empty", "--fake-answers", "empty") == 0
    assert {c["task"]: c["score"] for c in _scores(tmp_path / "empty")["cells"]} == \
        {t: 0.0 for t in RULER2_TASKS}


def test_reasoning_mode_and_a_context_that_cannot_hold_the_whole_budget(data, tmp_path):
    longest = max(r["length"] for t in RULER2_TASKS for r in rows(data, CONFIG, t, L))
    shortest = min(r["length"] for t in RULER2_TASKS for r in rows(data, CONFIG, t, L))
    limit = shortest + 100  # the shortest prompts fit with 100 tokens to spare
    assert _eval(data, tmp_path / "r", "--mode", "reasoning", "--max-model-len",
                 str(limit)) == 0
    scores = _scores(tmp_path / "r")
    assert scores["mode"] == "reasoning"
    preds = [json.loads(line) for line in (tmp_path / "r" / "predictions.jsonl").open()]
    ran = [p for p in preds if p["status"] == "ok"]
    skipped = [p for p in preds if p["status"] == "skipped"]
    # Rows whose prompt fits ran with the budget cut to the context left; the others, whose
    # prompt alone reaches the limit, are skipped with the reason.
    assert ran and all(p["output_budget"] == limit - p["prompt_tokens"] for p in ran)
    assert all(p["prompt_tokens"] >= limit and "leaves no room to generate" in p["reason"]
               for p in skipped)
    assert bool(skipped) == (longest >= limit)
    assert sum(c["budget_clamped"] for c in scores["cells"]) == len(ran)
    # The fake backend cuts a gold answer longer than its budget in words (a word standing
    # for a token) and says finish_reason "length", as an engine does: the cells without such
    # a row score as gold.
    cut = {p["task"] for p in ran if p.get("finish_reason") == "length"}
    assert all(c["score"] in (None, 100.0) for c in scores["cells"] if c["task"] not in cut)
    assert all(p["output_tokens"] == p["output_budget"] for p in ran
               if p.get("finish_reason") == "length")
    assert "ran with fewer output tokens than their tokens_to_generate" in \
        (tmp_path / "r" / "report.md").read_text()


def _nemo_record(row: dict, generation: str) -> dict:
    refs = list(row["outputs"])
    expected = refs[0] if row["metric"] == "multichoice" else refs  # upstream: a bare letter
    return {"generation": generation, "num_generated_tokens": 12, "generation_start_time": 0.0,
            "generation_end_time": 1.5, "generation_time": 1.5, "index": row["index"],
            "question": row["input"], "expected_answer": expected, "length": row["length"]}


def test_a_nemo_skills_output_file_of_our_rows_scores(data, tmp_path):
    results = tmp_path / "eval-results"
    for t in RULER2_TASKS:
        records = [_nemo_record(r, METRIC_SPECS[r["metric"]].gold(r["outputs"])
                                if r["index"] == 0 else "%%%")
                   for r in rows(data, CONFIG, t, L)]
        folder = results / f"ruler2.llama_4k.{t}"
        folder.mkdir(parents=True)
        (folder / "output.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    report = score_file(results, open_dataset(str(data)))
    assert report.config == CONFIG and report.complete and not report.unknown
    # Row 0 is answered right (1), row 1 with "%%%": no reference is in it and its one word
    # is at most one substitution from a one-word reference (WER >= 1): 0. Every task: 50.
    assert {c.task: (c.scored, c.score) for c in report.cells} == \
        {t: (2, 50.0) for t in RULER2_TASKS}
    assert main(["score", "--no-plots", "--predictions", str(results), "--data", str(data)]) == 0
    assert json.loads((results / "report.json").read_text())["mean_by_length"] == \
        {str(L): 50.0}


class _FunctionLoader(yaml.SafeLoader):
    """Reads lm-eval's `!function` tags as ("!function", name)."""


_FunctionLoader.add_constructor("!function", lambda loader, node: ("!function", node.value))


def test_the_lm_eval_export_of_a_ruler2_config(data):
    """Each RULERv2 task: greedy up to 16384 tokens, no answer prefix, its metric in utils.py
    aggregated as NeMo-Skills does (utils.aggregate_ruler2: the unrounded mean)."""
    files = ex.export_files(Manifest.load(data), ex.local_source(data))
    for t in RULER2_TASKS:
        cfg = yaml.load(files[f"ruler_{CONFIG}_{t}_{L}.yaml"], Loader=_FunctionLoader)
        assert cfg["generation_kwargs"]["max_gen_toks"] == 16384
        assert cfg["metric_list"][0]["aggregation"] == ("!function", "utils.aggregate_ruler2")
        built = rows(data, CONFIG, t, L)
        assert cfg["metadata"]["ruler"]["metric"] == built[0]["metric"]
        assert {r["answer_prefix"] for r in built} == {""}
