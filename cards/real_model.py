"""The card's "Checked with a real model" section: one real model scored on this generator's rows
and on upstream RULER's own rows, with the no-context baseline and the oracle.

The figures are `real_model.json` beside this module: the `--json` output of
`python -m perf.upstream_equivalence summary` (docs/real-model-study.md has the
commands that made it, and `docs/make_equivalence_plot.py` draws it). They are a measurement of
the generator, not of the rows in a given build, so every card shows the same text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA_PATH = Path(__file__).resolve().parent / "real_model.json"


def load() -> dict[str, Any]:
    return json.loads(DATA_PATH.read_text(encoding="utf-8"))


def _points(x: float) -> str:
    return f"{x:+.1f}"


def _interval(ci: list[float]) -> str:
    return f"[{ci[0]:+.1f}, {ci[1]:+.1f}]"


def card_section() -> str:
    summary = load()
    run, cells, pooled = summary["run"], summary["cells"], summary["pooled"]
    samples = sorted({c["n"] for c in cells})
    n = "-".join(map(str, (samples[0], samples[-1]) if len(samples) > 1 else samples))
    lines = [
        f"{run['model']} served by {run['server']}, evaluated as RULER evaluates "
        f"{run['mode']} models, at L = {', '.join(map(str, run['lengths']))}, {n} samples a "
        f"task on each side: this generator's rows (config `{run['config']}`) and upstream "
        f"RULER's own generator output for the same tokenizer ({run['upstream']}). The two "
        "sets are different samples of the same tasks, so each difference is a two-sample one "
        "(bootstrap over each side's rows, 95 %).",
        "",
        f"**Pooled over {pooled['tasks']} tasks: {_points(pooled['difference'])} points "
        f"{_interval(pooled['ci95'])}, permutation p = {pooled['permutation_p']:.2f}.**",
        "",
        "| task | L | n | these rows | upstream's rows | difference [95 %] | prompt tokens read "
        "(these / upstream's) | no context |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        mark = " \\*" if c["significant"] else ""
        tokens = c["prompt_tokens"]
        lines.append(
            f"| {c['task']} | {c['length']} | {c['n']} | {c['ours']:.1f} | {c['upstream']:.1f} "
            f"| {_points(c['difference'])} {_interval(c['ci95'])}{mark} "
            f"| {tokens['ours']} / {tokens['upstream']} "
            f"| {'-' if c.get('no_context') is None else format(c['no_context'], '.1f')} |")
    noise = [c["noise_floor"] for c in cells if c.get("noise_floor")]
    if noise:
        changed = sum(x["changed"] for x in noise)
        rows = sum(x["rows"] for x in noise)
        lines += ["", f"The same rows evaluated a second time (the noise floor): {changed} of "
                      f"{rows} rows scored differently."]
    blind = sorted({c["no_context_rows"] for c in cells if "no_context_rows" in c})
    first = f"the first {blind[-1]} of " if blind and blind[-1] < samples[-1] else ""
    lines += ["", f"No context: {first}the same rows with the haystack cut out (`ruler build "
              "--no-context`); the oracle (answering from the references) scores 100 on "
              "every task. " + run["finding"], "", f"Made with: `{run['command']}`."]
    return "\n".join(lines)
