"""Make `docs/depth_heatmap_synthetic.png`, the docs' example of `ruler report`'s heatmap.

The predictions are SYNTHETIC, not a model's: a simulated reader finds each needle with a
probability that drops in the middle of the context and with length ("lost in the middle"),
drawn deterministically from each row's key. Everything else is the real pipeline: a
depth-swept build (`--depths 10`), `ruler score`'s scoring and `ruler report`'s heatmap.

    RULER_TOKENIZERS=... RULER_SOURCES=... python docs/make_depth_heatmap.py [--work DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import shutil
import tempfile
from pathlib import Path

from ruler.benchmarks.ruler.niah import gold_values_in_order
from ruler.builder.pipeline import BuildConfig, run_build
from ruler.catalog.tasks import TASKS
from ruler.catalog.variants import DepthSweep
from ruler.eval.records.dataset import open_dataset
from ruler.eval.report.depth import HEATMAP_DIR, NIAH_HEATMAP
from ruler.eval.report.run import write_report
from ruler.eval.scoring.score import score_predictions, write_scores

LABEL = "SYNTHETIC predictions (simulated, not a model)"
IMAGE = Path(__file__).resolve().parent / "depth_heatmap_synthetic.png"
NIAH = tuple(t for t, spec in TASKS.items() if spec.family.name == "niah")


def found(key: str, depth: float, length: int) -> bool:
    """The simulated reader: a needle is missed more often mid-context and at longer lengths."""
    u = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64
    miss = (0.15 + 0.25 * math.log2(length / 4096)) * math.sin(math.pi * depth) ** 2
    return u >= miss


def predict(row: dict) -> str:
    values = gold_values_in_order(row) if len(row["gold_depths"]) > 1 else row["outputs"]
    key = f"{row['task']}/{row['max_seq_length']}/{row['index']}"
    hits = [v for n, (v, d) in enumerate(zip(values, sorted(row["gold_depths"])))
            if found(f"{key}/{n}", d, row["max_seq_length"])]
    return " ".join(hits) or "I could not find it."


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, default=None, help="build/results folder (temp)")
    p.add_argument("--tokenizer", default="llama-3.1")
    p.add_argument("--samples", type=int, default=50)
    args = p.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="ruler-depth-example-"))
    report = run_build(BuildConfig(tokenizer=args.tokenizer, tasks=NIAH,
                                   lengths=(4096, 8192, 16384, 32768), samples=args.samples,
                                   out=work / "data", variant=DepthSweep(10)))
    ds = open_dataset(str(work / "data"))
    records = {}
    for f in ds.files(report.config):
        for row in ds.rows(f):
            key = (report.config, row["task"], row["max_seq_length"], row["index"])
            records[key] = {"prediction": predict(row)}
    scores = score_predictions(ds, records, model=LABEL)
    results = work / "results"
    write_scores(results / "scores.json", scores)
    write_report(results)
    shutil.copyfile(results / HEATMAP_DIR / NIAH_HEATMAP, IMAGE)
    print(f"wrote {IMAGE} (from {results})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
