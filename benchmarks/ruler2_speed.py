"""RULERv2: our build against NeMo-Skills' own generator, the same tasks, lengths and samples,
side by side in one run, and the ratio.

    python -m benchmarks.ruler2_speed --upstream /path/to/NeMo-Skills --tokenizer llama-3.1 \\
        --lengths 4096,8192 --samples 50 [--tasks all] [--workers 2] [--reference DIR]
    python -m benchmarks.ruler2_speed --ours-only --lengths 131072 --samples 100

`--upstream` is a NeMo-Skills checkout, or any folder holding
`nemo_skills/dataset/ruler2/{prepare_niah,prepare_mmlu,prepare_qa,tokenizer}.py` (it is never
part of this repository). Upstream runs offline as the reference README describes: each task
is one process, `python -m nemo_skills.dataset.ruler2.<generator>` with the arguments
NeMo-Skills' `prepare_data.py` passes (read from our catalog's task parameters), and a shim
that makes `datasets.load_dataset("cais/mmlu", "all")` and `("hotpotqa/hotpot_qa",
"distractor")` return the Parquet files our source registry resolves (the stand-ins here),
and points NLTK at the pinned punkt_tab. Upstream's dependencies must be installed (inflect,
tenacity, wonderwords, nltk, datasets, transformers).

Both sides get the same cores: `--workers N` runs upstream's task processes N at a time
(prepare_data.py starts them all at once) and our build with N workers. Wall times include
start-up (Python, imports, tokenizer, datasets) on both sides, as a user pays it. Each side's
CPU seconds (its processes' user + system time) are printed too: on a machine that other work
shares, wall times stretch with the load while CPU seconds mostly do not.
`--reference DIR` also checks upstream's files against `DIR/SHA256SUMS.uncompressed` (byte for
byte; run with PYTHONHASHSEED=1 for the qa tasks), which shows the harness runs upstream as the
reference was made.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ruler.builder.selection import parse_lengths
from ruler.builder.sources import resolve
from ruler.builder.tasks.catalog import RULER2_TASKS, get_task

#: Run in upstream's process before its generator: datasets.load_dataset answers from the
#: Parquet files given in the environment, as the reference README's offline shim does.
SHIM = """
import os, runpy, sys
import datasets
_FILES = {("cais/mmlu", "all"): ("RULER2_MMLU_", ("test", "auxiliary_train")),
          ("hotpotqa/hotpot_qa", "distractor"): ("RULER2_HOTPOTQA_", ("train", "validation"))}
def load_dataset(path, name=None, *args, **kwargs):
    prefix, splits = _FILES[(path, name)]
    return datasets.DatasetDict({s: datasets.Dataset.from_parquet(
        os.environ[prefix + s.upper()].split(os.pathsep), cache_dir=os.environ["RULER2_CACHE"])
        for s in splits})
datasets.load_dataset = load_dataset
module = sys.argv[1]
sys.argv = [module] + sys.argv[2:]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def upstream_arguments(task: str) -> tuple[str, list[str]]:
    """The generator and task arguments NeMo-Skills' prepare_data.py passes for `task`."""
    spec = get_task(task)
    p = dict(spec.params)
    if spec.family.name == "ruler2_niah":
        args = ["--num_needle_k", p["num_needle_k"], "--num_needle_v", p["num_needle_v"],
                "--num_needle_q", p["num_needle_q"], "--type_haystack", p["type_haystack"],
                "--type_needle_k", p["type_needle_k"], "--type_needle_v", p["type_needle_v"],
                "--num_digits_v", p["num_digits_v"]]
        return "prepare_niah", [str(a) for a in args]
    if spec.family.name == "ruler2_qa":
        args = ["--dataset", p["dataset"], "--fewshot", p["fewshot"], "--prompt_type", "instruct",
                "--task_type", p["task_type"]]
        args += (["--query_type", p["query_type"]] if "query_type" in p
                 else ["--algo_type", p["algo_type"]])
        return "prepare_qa", [str(a) for a in args]
    args = ["--dataset", p["dataset"], "--fewshot", p["fewshot"], "--prompt_type", "instruct",
            "--num_order", p["num_order"], "--task_type", p["task_type"], "--algo_type",
            p["algo_type"]]
    return "prepare_mmlu", [str(a) for a in args]


def upstream_environment(upstream: Path, sources: str | None, work: Path) -> dict[str, str]:
    mmlu, hotpot = resolve("mmlu", sources), resolve("hotpotqa_hub", sources)
    punkt = resolve("punkt_tab", sources)
    nltk = work / "nltk_data" / "tokenizers"
    (nltk / "punkt").mkdir(parents=True, exist_ok=True)  # upstream only checks it exists
    if not (nltk / "punkt_tab").exists():
        (nltk / "punkt_tab").symlink_to(punkt.path.parent, target_is_directory=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(upstream),
                                                       os.environ.get("PYTHONPATH", "")]),
               NLTK_DATA=str(work / "nltk_data"), RULER2_CACHE=str(work / "datasets-cache"),
               HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    for prefix, source in (("RULER2_MMLU_", mmlu), ("RULER2_HOTPOTQA_", hotpot)):
        for split in source.files:
            env[prefix + split.upper()] = os.pathsep.join(
                str(source.path / rel) for rel in source.files[split])
    return env


def run_upstream(upstream: Path, tokenizer_path: Path, tasks, lengths, samples: int,
                 workers: int, out: Path, sources: str | None) -> tuple[float, dict]:
    """Every (task, length) as its own upstream process, `workers` at a time; the wall time
    and each process's own seconds."""
    env = upstream_environment(upstream, sources, out)

    def one(job: tuple[str, int]) -> tuple[tuple[str, int], float]:
        task, L = job
        generator, args = upstream_arguments(task)
        folder = out / str(L) / task
        folder.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-c", SHIM, f"nemo_skills.dataset.ruler2.{generator}",
               "--output_folder", str(folder), "--tokenizer_type", "hf", "--tokenizer_path",
               str(tokenizer_path), "--max_seq_length", str(L), "--num_samples", str(samples),
               "--random_seed", "42", *args]
        started = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"upstream {task} @ {L} failed:\n{done.stderr[-3000:]}")
        return job, time.perf_counter() - started

    jobs = [(t, L) for L in lengths for t in tasks]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        seconds = dict(pool.map(one, jobs))
    return time.perf_counter() - started, seconds


def children_cpu() -> float:
    """User + system seconds of this process's finished (waited-for) child processes."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_ours(tokenizer: str, tasks, lengths, samples: int, workers: int, out: Path
             ) -> tuple[float, dict]:
    """`ruler build --benchmark v2` in a fresh process (start-up included, as upstream's)."""
    cmd = [sys.executable, "-m", "ruler", "build", "--benchmark", "v2", "--tokenizer", tokenizer,
           "--tasks", ",".join(tasks), "--lengths", ",".join(map(str, lengths)),
           "--samples", str(samples), "--out", str(out), "--workers", str(workers),
           "--no-progress"]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"ruler build failed:\n{done.stderr[-3000:]}")
    seconds = {}
    for line in done.stdout.splitlines():  # "  data/<config>/<task>/<L>.parquet: ..., 1.2s, ..."
        if ".parquet:" in line:
            rel, rest = line.strip().split(": ", 1)
            _, _, task, name = rel.split("/")
            secs = next(p for p in rest.split(", ") if p.endswith("s") and p[:-1].replace(
                ".", "").isdigit())
            seconds[(task, int(name.split(".")[0]))] = float(secs[:-1])
    return wall, seconds


def check_reference(out: Path, reference: Path) -> tuple[int, int]:
    """(files equal to the reference, files compared), by the reference's own hashes."""
    sums = {}
    for line in (reference / "SHA256SUMS.uncompressed").read_text().splitlines():
        digest, rel = line.split(maxsplit=1)
        sums[rel.strip()] = digest
    equal = compared = 0
    for rel, digest in sums.items():
        path = out / rel
        if path.is_file():
            compared += 1
            equal += hashlib.sha256(path.read_bytes()).hexdigest() == digest
    return equal, compared


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", type=Path, help="NeMo-Skills checkout (or its ruler2 files)")
    ap.add_argument("--ours-only", action="store_true", help="time our build alone")
    ap.add_argument("--tokenizer", default="llama-3.1",
                    help="a registry tokenizer; upstream reads its folder under "
                         "$RULER_TOKENIZERS")
    ap.add_argument("--tasks", default="all")
    ap.add_argument("--lengths", default="4096,8192")
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--sources", default=None, help="the sources folder (else $RULER_SOURCES)")
    ap.add_argument("--reference", type=Path, default=None,
                    help="check upstream's files against this reference folder's hashes")
    ap.add_argument("--keep", type=Path, default=None, help="keep both outputs here")
    args = ap.parse_args(argv)
    tasks = RULER2_TASKS if args.tasks == "all" else tuple(args.tasks.split(","))
    lengths = parse_lengths(args.lengths)
    if not args.ours_only and args.upstream is None:
        ap.error("--upstream DIR is needed (or --ours-only)")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        cpu = children_cpu()
        ours_wall, ours = run_ours(args.tokenizer, tasks, lengths, args.samples, args.workers,
                                   work / "ours")
        ours_cpu, cpu = children_cpu() - cpu, children_cpu()
        rows = len(tasks) * len(lengths) * args.samples
        print(f"ours: ruler build --benchmark v2, {len(tasks)} tasks x {len(lengths)} "
              f"length(s) x {args.samples} samples = {rows} rows, {args.workers} worker(s): "
              f"{ours_wall:.1f} s wall, {ours_cpu:.1f} CPU s")
        if args.ours_only:
            return 0
        tok_folder = Path(os.environ.get("RULER_TOKENIZERS", "")) / args.tokenizer
        up_wall, up = run_upstream(args.upstream, tok_folder, tasks, lengths, args.samples,
                                   args.workers, work / "upstream", args.sources)
        up_cpu = children_cpu() - cpu
        print(f"upstream: NeMo-Skills generators, one process per task and length, "
              f"{args.workers} at a time: {up_wall:.1f} s wall, {up_cpu:.1f} CPU s\n")
        print("| task | L | upstream s (process) | ours s (file) |\n|---|---|---|---|")
        for L in lengths:
            for t in tasks:
                print(f"| {t} | {L} | {up[(t, L)]:.1f} | {ours.get((t, L), float('nan')):.2f} |")
        print(f"\nwall: upstream {up_wall:.1f} s, ours {ours_wall:.1f} s: ours is "
              f"{up_wall / ours_wall:.1f}x faster; CPU: upstream {up_cpu:.1f} s, ours "
              f"{ours_cpu:.1f} s: {up_cpu / ours_cpu:.1f}x")
        if args.reference is not None:
            equal, compared = check_reference(work / "upstream", args.reference)
            print(f"upstream's files equal to the reference: {equal}/{compared}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
