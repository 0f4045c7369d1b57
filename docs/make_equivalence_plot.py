"""Make `docs/gemma3_270m_4k_equivalence.png`, the docs' real-model result.

It reads `cards/real_model.json` (also the card's "Checked with a real model"), the `--json`
output of `python -m perf.upstream_equivalence summary` for Gemma 3 270M (base, Q4_K_M)
served by llama.cpp's llama-server: per task at 4K, the score on `ruler` rows (config
gemma-3--base), on upstream RULER's own rows for the same tokenizer, and on the no-context
config, with the 95 % interval of the difference (docs/real-model-study.md has the
commands).

    python docs/make_equivalence_plot.py
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after choosing the backend)
import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "cards" / "real_model.json"
IMAGE = HERE / "gemma3_270m_4k_equivalence.png"


def main() -> None:
    summary = json.loads(DATA.read_text(encoding="utf-8"))
    cells = summary["cells"]
    tasks = [c["task"] for c in cells]
    x = np.arange(len(tasks))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    width = 0.27
    top.bar(x - width, [c["ours"] for c in cells], width, label="ruler rows (gemma-3--base)")
    top.bar(x, [c["upstream"] for c in cells], width, label="upstream RULER's rows")
    top.bar(x + width, [c.get("no_context", 0.0) for c in cells], width,
            label="no context (gemma-3--nocontext)")
    top.set_ylabel("score")
    top.set_ylim(0, 105)
    top.legend(fontsize=8, loc="upper right")
    n = cells[0]["n"]
    top.set_title(f"Gemma 3 270M base (Q4_K_M, llama-server), 4K, {n} samples a task and side")
    diff = np.array([c["difference"] for c in cells])
    low = diff - np.array([c["ci95"][0] for c in cells])
    high = np.array([c["ci95"][1] for c in cells]) - diff
    bottom.errorbar(x, diff, yerr=[low, high], fmt="o", capsize=3)
    bottom.axhline(0, color="grey", linewidth=0.8)
    pooled = summary["pooled"]
    bottom.set_ylabel("ours - upstream\n(95 % interval)")
    bottom.set_title(f"pooled over {pooled['tasks']} tasks: {pooled['difference']:+.2f} points, "
                     f"95 % interval [{pooled['ci95'][0]:.2f}, {pooled['ci95'][1]:.2f}], "
                     f"permutation p = {pooled['permutation_p']:.2f}", fontsize=10)
    bottom.set_xticks(x, tasks, rotation=40, ha="right")
    fig.tight_layout()
    fig.savefig(IMAGE, dpi=90)
    print(IMAGE)


if __name__ == "__main__":
    main()
