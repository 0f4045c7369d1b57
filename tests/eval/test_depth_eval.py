"""`ruler eval` on a depth-swept config works as on any config: a real transformers run of the
tiny random Llama (with the real qwen2.5 tokenizer files) on `qwen2.5--depth2`, scored and
reported with the score-by-depth tables and heatmaps. Its predictions are noise; what is
checked is that the config is selected, keyed, scored and binned end to end."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers.builds import build
from ruler.catalog.variants import DepthSweep
from ruler.commands.main import main
from ruler.eval.report.depth import HEATMAP_DIR, NIAH_HEATMAP
from ruler.eval.tiny_model import build_tiny_llama

pytestmark = [pytest.mark.slow, pytest.mark.engines]
pytest.importorskip("torch")

TOKENIZER, BINS, SAMPLES, L = "qwen2.5", 2, 2, 512
TASKS = ("niah_single_1", "niah_multikey_2")
CONFIG = f"{TOKENIZER}--depth{BINS}"


def test_eval_score_and_report_on_a_depth_swept_config(tmp_path):
    data = tmp_path / "data"
    build(data, TOKENIZER, TASKS, (L,), SAMPLES, workers=1)  # the default config beside it
    build(data, TOKENIZER, TASKS, (L,), SAMPLES, workers=1, variant=DepthSweep(BINS))
    model = build_tiny_llama(Path(os.environ["RULER_TOKENIZERS"]) / TOKENIZER,
                             tmp_path / "model", max_position_embeddings=1024)
    out = tmp_path / "results"
    assert main(["eval", "--model", str(model), "--data", str(data), "--tokenizer-config",
                 CONFIG, "--backend", "hf", "--dtype", "float32", "--out", str(out),
                 "--no-progress"]) == 0

    preds = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert {p["tokenizer"] for p in preds} == {CONFIG} and len(preds) == len(TASKS) * SAMPLES
    assert all(p["status"] == "ok" for p in preds)
    scores = json.loads((out / "scores.json").read_text())
    assert scores["config"] == CONFIG and scores["depth_bins"] == BINS
    assert {k: len(v) for k, v in scores["depth_items"].items()} == \
        {f"{t}/{L}": SAMPLES for t in TASKS}
    depth = json.loads((out / "report.json").read_text())["depth"]
    assert depth["bins"] == BINS
    for t in TASKS:
        assert [c["n"] for c in depth["tasks"][t][str(L)]] == [SAMPLES // BINS] * BINS
    assert (out / HEATMAP_DIR / NIAH_HEATMAP).is_file()
    assert "## Score by depth" in (out / "report.md").read_text()
