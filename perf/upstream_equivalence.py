"""Score equivalence with upstream RULER: one real model on upstream's rows and on ours.

Upstream's own generator output (`validation.jsonl` per `<L>/<task>`, e.g. ../shared/reference/
upstream-gemma-3, made with `--model_template_type base`) is sent as upstream's client sends it:
the string `input + answer_prefix` to an OpenAI-compatible `/v1/completions`, greedy, at most the
task's `tokens_to_generate` tokens, the server adding BOS as its tokenizer does. Our side is
`ruler eval --backend openai --mode base` on a `ruler` build for the same tokenizer (BOS + input +
answer prefix as token ids). Both sides are scored with RULER's metrics
(`ruler.eval.metrics.specs`).

Rows of the two sets are different samples (each generator has its own randomness), so the
per-task difference is a two-sample one: its 95 % interval is a bootstrap over the rows of each
side (binary-metric tasks would also allow an exact test; the bootstrap covers all). A second
run of the same model on our rows gives the noise floor (llama.cpp is not bit-deterministic).

Subcommands (all resumable: finished rows are skipped):

    upstream  --reference DIR --base-url URL --model NAME --lengths 4096 --samples 30 --out F.jsonl
    summary   --upstream F.jsonl --ours RESULTS_DIR [--ours-again RESULTS_DIR2]
              [--no-context RESULTS_DIR3] [--samples N] [--json OUT]

The server: llama.cpp's `llama-server -m gemma-3-270m-q4_k_m.gguf -a gemma --host 127.0.0.1
--port 8091 -c 4608 -np 1 -t 2 -fa on -cram 0` (../shared/notes/real-models-on-cpu.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

from ruler.catalog.tasks import TASKS
from ruler.eval.metrics.specs import ROW_METRICS, postprocess_pred

BOOTSTRAP_DRAWS = 10_000
BOOTSTRAP_SEED = 20261124


def _reference_rows(reference: Path, length: int, task: str, samples: int) -> list[dict]:
    path = reference / str(length) / task / "validation.jsonl"
    with path.open(encoding="utf-8") as f:
        rows = [json.loads(line) for _, line in zip(range(samples), f)]
    # Upstream overwrites NIAH `index` with a character offset: the line number is the sample.
    return [dict(row, sample=i) for i, row in enumerate(rows)]


def _complete(base_url: str, model: str, prompt: str, max_tokens: int, timeout: float) -> dict:
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens,
                       "temperature": 0.0, "stream": False}).encode()
    request = urllib.request.Request(f"{base_url.rstrip('/')}/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def run_upstream(args: argparse.Namespace) -> int:
    out = Path(args.out)
    done = set()
    if out.exists():
        for line in out.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            done.add((r["task"], r["max_seq_length"], r["sample"]))
    tasks = args.tasks.split(",") if args.tasks else list(TASKS)
    with out.open("a", encoding="utf-8") as f:
        for length in (int(x) for x in args.lengths.split(",")):
            for task in tasks:
                spec = TASKS[task]
                for row in _reference_rows(Path(args.reference), length, task, args.samples):
                    if (task, length, row["sample"]) in done:
                        continue
                    started = time.monotonic()
                    answer = _complete(args.base_url, args.model,
                                       row["input"] + row["answer_prefix"],
                                       spec.tokens_to_generate, args.timeout)
                    choice = answer["choices"][0]
                    if choice.get("text") is None:
                        raise SystemExit(f"{task}/{length}/{row['sample']}: no text: {answer}")
                    record = {"task": task, "max_seq_length": length, "sample": row["sample"],
                              "prediction": choice["text"], "references": row["outputs"],
                              "metric": spec.metric, "length": row["length"],
                              "prompt_tokens": (answer.get("usage") or {}).get("prompt_tokens"),
                              "seconds": round(time.monotonic() - started, 3)}
                    f.write(json.dumps(record) + "\n")
                    f.flush()
                    print(f"{task}/{length}/{row['sample']}: {record['seconds']} s", flush=True)
    return 0


def _row_scores_upstream(path: Path) -> dict[tuple[str, int], dict[int, float]]:
    cells: dict[tuple[str, int], dict[int, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        value = ROW_METRICS[r["metric"]](postprocess_pred(r["prediction"]), r["references"])
        cells.setdefault((r["task"], r["max_seq_length"]), {})[int(r["sample"])] = value
    return cells


def _prompt_tokens_upstream(path: Path) -> dict[tuple[str, int], dict[int, int]]:
    """Prompt tokens the server counted for each upstream row (the context a model read)."""
    cells: dict[tuple[str, int], dict[int, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        cells.setdefault((r["task"], r["max_seq_length"]), {})[int(r["sample"])] = \
            int(r["prompt_tokens"])
    return cells


def _prompt_tokens_ours(results: Path) -> dict[tuple[str, int], dict[int, int]]:
    cells: dict[tuple[str, int], dict[int, int]] = {}
    for line in (results / "predictions.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r.get("status") == "ok" and r.get("prompt_tokens") is not None:
            cells.setdefault((r["task"], int(r["max_seq_length"])), {})[int(r["index"])] = \
                int(r["prompt_tokens"])
    return cells


def _row_scores_ours(results: Path) -> dict[tuple[str, int], dict[int, float]]:
    """Per-row values of a `ruler eval` results folder, by (task, length) and sample index:
    the `row_scores` its scores.json records (predictions records carry neither the metric
    nor the references; the scoring that wrote scores.json read them from the dataset)."""
    scores = json.loads((results / "scores.json").read_text(encoding="utf-8"))
    cells: dict[tuple[str, int], dict[int, float]] = {}
    for c in scores["cells"]:
        if "row_scores" not in c:
            raise SystemExit(f"{results}/scores.json has no per-row values (written by an older "
                             f"ruler): re-score it with `ruler score`")
        cells[(c["task"], int(c["max_seq_length"]))] = {int(i): float(v)
                                                        for i, v in c["row_scores"]}
    return cells


def _bootstrap_difference(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> tuple:
    """95 % percentile interval of mean(a) - mean(b), resampling each side's rows."""
    da = rng.choice(a, size=(BOOTSTRAP_DRAWS, a.size)).mean(axis=1)
    db = rng.choice(b, size=(BOOTSTRAP_DRAWS, b.size)).mean(axis=1)
    lo, hi = np.percentile((da - db) * 100, [2.5, 97.5])
    return float(lo), float(hi)


def _first(cell: dict[int, float], n: int) -> np.ndarray:
    """The values of samples 0..n-1 (both sides are cut to the samples both have run)."""
    return np.array([cell[i] for i in sorted(cell)[:n]])


def _pooled(pairs: list[tuple[np.ndarray, np.ndarray]], rng: np.random.Generator) -> dict:
    """One test over every task: the mean over tasks of (ours - upstream), its 95 % interval
    by a bootstrap stratified by task, and a two-sided permutation p-value that shuffles the
    side labels within each task (the null: within a task, both generators' rows give the
    model the same chance)."""
    observed = float(np.mean([a.mean() - b.mean() for a, b in pairs]) * 100)
    boot = np.zeros(BOOTSTRAP_DRAWS)
    perm = np.zeros(BOOTSTRAP_DRAWS)
    for a, b in pairs:
        boot += (rng.choice(a, size=(BOOTSTRAP_DRAWS, a.size)).mean(axis=1)
                 - rng.choice(b, size=(BOOTSTRAP_DRAWS, b.size)).mean(axis=1))
        both = np.concatenate([a, b])
        shuffled = rng.permuted(np.tile(both, (BOOTSTRAP_DRAWS, 1)), axis=1)
        perm += shuffled[:, :a.size].mean(axis=1) - shuffled[:, a.size:].mean(axis=1)
    boot, perm = boot / len(pairs) * 100, perm / len(pairs) * 100
    lo, hi = np.percentile(boot, [2.5, 97.5])
    p = (np.sum(np.abs(perm) >= abs(observed) - 1e-9) + 1) / (BOOTSTRAP_DRAWS + 1)
    return {"tasks": len(pairs), "difference": round(observed, 2),
            "ci95": [round(float(lo), 2), round(float(hi), 2)], "permutation_p": round(float(p), 4)}


def run_summary(args: argparse.Namespace) -> int:
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    upstream = _row_scores_upstream(Path(args.upstream))
    ours = _row_scores_ours(Path(args.ours))
    again = _row_scores_ours(Path(args.ours_again)) if args.ours_again else {}
    blind = _row_scores_ours(Path(args.no_context)) if args.no_context else {}
    read_up = _prompt_tokens_upstream(Path(args.upstream))
    read_ours = _prompt_tokens_ours(Path(args.ours))
    table, pairs = [], []
    for key in sorted(set(upstream) & set(ours), key=lambda k: (k[1], list(TASKS).index(k[0]))):
        n = min(len(ours[key]), len(upstream[key]), args.samples or 10**9)
        a, b = _first(ours[key], n), _first(upstream[key], n)
        lo, hi = _bootstrap_difference(a, b, rng)
        pairs.append((a, b))
        row = {"task": key[0], "length": key[1], "n": n, "ours": round(a.mean() * 100, 2),
               "upstream": round(b.mean() * 100, 2),
               "difference": round((a.mean() - b.mean()) * 100, 2),
               "ci95": [round(lo, 2), round(hi, 2)], "significant": not lo <= 0 <= hi}
        # the prompt tokens each side's model read: upstream leaves many rows short of L
        row["prompt_tokens"] = {side: round(float(_first(cells.get(key, {}), n).mean()))
                                if cells.get(key) else None
                                for side, cells in (("ours", read_ours), ("upstream", read_up))}
        if key in again:
            shared = sorted(set(ours[key]) & set(again[key]))[:n]
            x = np.array([ours[key][i] for i in shared])
            y = np.array([again[key][i] for i in shared])
            row["noise_floor"] = {"rows": len(shared), "changed": int((x != y).sum()),
                                  "difference": round(float((x - y).mean() * 100), 2)}
        if key in blind:
            row["no_context"] = round(float(_first(blind[key], n).mean() * 100), 2)
            row["no_context_rows"] = min(n, len(blind[key]))
        table.append(row)
    print(f"{'task':<16} {'L':>6} {'n':>3} {'ours':>7} {'upstream':>8} {'diff':>7}  "
          f"{'95% CI':<17} {'tokens ours/up':>14}  {'again: changed, diff':<21} "
          f"{'no context':>10}")
    for r in table:
        flag = " *" if r["significant"] else "  "
        nf = r.get("noise_floor")
        noise = f"{nf['changed']}/{nf['rows']}, {nf['difference']:+.2f}" if nf else "-"
        blind_score = f"{r['no_context']:.2f}" if "no_context" in r else "-"
        ci = f"[{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]{flag}"
        read = f"{r['prompt_tokens']['ours']}/{r['prompt_tokens']['upstream']}"
        print(f"{r['task']:<16} {r['length']:>6} {r['n']:>3} {r['ours']:>7.2f} "
              f"{r['upstream']:>8.2f} {r['difference']:>7.2f}  {ci:<17} {read:>14}  "
              f"{noise:<21} {blind_score:>10}")
    pooled = _pooled(pairs, rng) if pairs else None
    if pooled:
        print(f"pooled over {pooled['tasks']} task x length cells: mean difference "
              f"{pooled['difference']:+.2f} points, 95% CI [{pooled['ci95'][0]:.2f}, "
              f"{pooled['ci95'][1]:.2f}], permutation p = {pooled['permutation_p']:.4f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"cells": table, "pooled": pooled}, indent=1)
                                   + "\n", encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("upstream", help="predictions of a served model on upstream's rows")
    up.add_argument("--reference", required=True, help="folder <L>/<task>/validation.jsonl")
    up.add_argument("--base-url", required=True)
    up.add_argument("--model", required=True, help="the served model name")
    up.add_argument("--lengths", default="4096")
    up.add_argument("--tasks", help="comma-separated (default: all 13)")
    up.add_argument("--samples", type=int, default=30, help="first N rows of each file")
    up.add_argument("--timeout", type=float, default=600.0)
    up.add_argument("--out", required=True, help="predictions JSONL (appended, resumable)")
    up.set_defaults(func=run_upstream)
    s = sub.add_parser("summary", help="per task x length: both scores, difference, 95%% CI")
    s.add_argument("--upstream", required=True)
    s.add_argument("--ours", required=True, help="a `ruler eval` results folder")
    s.add_argument("--ours-again", help="a second run on the same rows (noise floor)")
    s.add_argument("--no-context", help="a `ruler eval` results folder on the build's "
                                        "--no-context config (the baseline column)")
    s.add_argument("--samples", type=int, default=None,
                   help="compare samples 0..N-1 only (default: all both sides have)")
    s.add_argument("--json")
    s.set_defaults(func=run_summary)
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
