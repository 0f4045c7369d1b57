"""Stored predictions of the three benchmarks, the scores and reports they made: what
tests/eval/test_golden_scores.py holds every later ruler to (issue 41: the same predictions
give the same scores, and a results folder of each benchmark reports as before).

`python tests/helpers/golden_scores.py` (from the repository root) rewrites the stored files
from the session builds' twins; run it only to accept a deliberate change of scores."""

from __future__ import annotations

import json
import re
from pathlib import Path

#: Stored cases: name -> (the session build fixture, its config, an asked --metric or None)
CASES = {
    "ruler_gpt4": ("built_gpt4_niah", "gpt-4", None),
    "ruler_qwen": ("built_qwen_three", "qwen2.5", None),
    "ruler2": ("built_llama_v2", "llama-3.1--v2", None),
    "oneruler_en": ("built_llama_oneruler", "llama-3.1--oneruler-en", None),
    "oneruler_ko": ("built_llama_oneruler", "llama-3.1--oneruler-ko", None),
    "oneruler_ko_corrected": ("built_llama_oneruler", "llama-3.1--oneruler-ko",
                              "oneruler_corrected"),
}

FOLDER = Path(__file__).resolve().parents[1] / "eval" / "golden_scores"


def answers(metric_gold, outputs: list[str], i: int, task: str) -> str:
    """A varied answer to a row, by its index and task: right, partly right, wrong, right in
    other words, right after a word holding "none", or its numbers with separators."""
    kind = (i + len(task)) % 6
    gold = metric_gold(outputs)
    if kind == 1:
        return f"The answer is {outputs[0]}."
    if kind == 2:
        return "I do not know."
    if kind == 3:
        return gold.upper() + " and more"
    if kind == 4:
        return f"nonetheless: {gold}"
    if kind == 5:
        return ", ".join(f"{int(o):,}" if o.isdigit() else o for o in outputs)
    return gold


def stored_predictions(data: Path, config: str) -> list[dict]:
    """Predictions for every row of `config` in build `data` (keys, data_sha256, answer)."""
    import pyarrow.parquet as pq

    from ruler.builder.manifest import Manifest
    from ruler.eval.metrics.specs import metric_spec

    manifest = Manifest.load(data)
    out = []
    for f in manifest.files_of(config):
        for r in pq.read_table(data / f.path).to_pylist():
            gold = metric_spec(r["metric"]).gold
            out.append({"tokenizer": config, "task": f.task, "max_seq_length": f.max_seq_length,
                        "index": r["index"], "data_sha256": f.content_sha256,
                        "prediction": answers(gold, list(r["outputs"]), r["index"], f.task)})
    return out


def normalised(text: str, data: Path, where: Path) -> str:
    """A report's text with the build's and the results' folders replaced by fixed names."""
    text = text.replace(str(where.resolve()), "RESULTS").replace(str(where), "RESULTS")
    text = text.replace(str(data.resolve()), "DATA").replace(str(data), "DATA")
    return re.sub(r"\n+$", "\n", text)


def score_and_report(data: Path, case: str, where: Path) -> dict[str, str]:
    """Score the stored predictions of `case` against `data` into `where` and report them:
    {file name: normalised text} of scores.json's cells, report.md and report.json."""
    from ruler.commands.main import main

    _, config, metric = CASES[case]
    preds = FOLDER / case / "predictions.jsonl"
    argv = ["score", "--predictions", str(preds), "--data", str(data), "--tokenizer-config",
            config, "--out", str(where), "--no-plots"] + (["--metric", metric] if metric else [])
    assert main(argv) == 0
    scores = json.loads((where / "scores.json").read_text())
    report = json.loads((where / "report.json").read_text())
    for key in ("dataset", "serving"):
        report.pop(key, None)
    return {"cells.json": json.dumps(scores["cells"], indent=1, sort_keys=True) + "\n",
            "report.md": normalised((where / "report.md").read_text(), data, where),
            "report.json": normalised(json.dumps(report, indent=1, sort_keys=True), data,
                                      where) + "\n"}
