"""RULERv2: our build against NeMo-Skills' own generator, the same tasks, lengths and samples,
side by side in one run, and the ratio.

    python -m perf.ruler2_speed --upstream /path/to/NeMo-Skills --tokenizer llama-3.1 \\
        --lengths 4096,8192 --samples 50 [--tasks all] [--workers 2] [--reference DIR] \\
        [--upstream-python /path/to/nemo-skills-env/bin/python]
    python -m perf.ruler2_speed --ours-only --lengths 131072 --samples 100

`--upstream` is a NeMo-Skills checkout, or any folder holding
`nemo_skills/dataset/ruler2/{prepare_niah,prepare_mmlu,prepare_qa,tokenizer}.py` (it is never
part of this repository). Upstream runs offline as the reference README describes: each task
is one process, `python -m nemo_skills.dataset.ruler2.<generator>` with the arguments
NeMo-Skills' `prepare_data.py` passes (read from our catalog's task parameters), and a shim
that makes `datasets.load_dataset("cais/mmlu", "all")` and `("hotpotqa/hotpot_qa",
"distractor")` return the Parquet files our source registry resolves (the stand-ins here),
and points NLTK at the pinned punkt_tab. Upstream runs under `--upstream-python` (its own
environment, as NeMo-Skills' users run it; default: this interpreter), which must import
upstream's dependencies (inflect, tenacity, wonderwords, nltk, datasets, transformers): they
are checked first, and a missing one is said in one line.

Both sides get the same cores: `--workers N` runs upstream's task processes N at a time
(prepare_data.py starts them all at once) and our build with N workers. Wall times include
start-up (Python, imports, tokenizer, datasets) on both sides, as a user pays it. Each side's
CPU seconds (its whole process tree's user + system time) and the load around it are printed,
with the wall and CPU ratios: on a machine that other work shares, wall times stretch with the
load while CPU seconds mostly do not (perf/side_by_side.py).
`--reference DIR` also checks upstream's files against `DIR/SHA256SUMS.uncompressed` (byte for
byte; run with PYTHONHASHSEED=1 for the qa tasks), which shows the harness runs upstream as the
reference was made.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from perf.side_by_side import (
    Side,
    add_upstream_python,
    check_imports,
    print_ratios,
    run_ours,
    timed,
)
from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS
from ruler.builder.selection import parse_lengths
from ruler.catalog.sources import resolve
from ruler.catalog.tasks import get_task

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

#: What NeMo-Skills' ruler2 generators import (besides the standard library).
MODULES = ("inflect", "tenacity", "wonderwords", "nltk", "datasets", "transformers")


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


def run_upstream(python: str, env: dict[str, str], tokenizer_path: Path, tasks, lengths,
                 samples: int, workers: int, out: Path) -> Side:
    """Every (task, length) as its own upstream process under `python` (in `env`:
    `upstream_environment`), `workers` at a time; the side's wall and CPU seconds and each
    process's own seconds."""
    side = Side(f"upstream (NeMo-Skills' generators under {python}, {workers} at a time)")

    def one(job: tuple[str, int]) -> tuple[tuple[str, int], float]:
        task, L = job
        generator, args = upstream_arguments(task)
        folder = out / str(L) / task
        folder.mkdir(parents=True, exist_ok=True)
        cmd = [python, "-c", SHIM, f"nemo_skills.dataset.ruler2.{generator}",
               "--output_folder", str(folder), "--tokenizer_type", "hf", "--tokenizer_path",
               str(tokenizer_path), "--max_seq_length", str(L), "--num_samples", str(samples),
               "--random_seed", "42", *args]
        started = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"upstream {task} @ {L} failed:\n{done.stderr[-3000:]}")
        return job, time.perf_counter() - started

    jobs = [(t, L) for L in lengths for t in tasks]
    with timed(side), ThreadPoolExecutor(max_workers=workers) as pool:
        side.files = dict(pool.map(one, jobs))
    return side


def ours_arguments(tokenizer: str, tasks, lengths, samples: int, workers: int) -> list[str]:
    """`ruler build --benchmark v2` for the same tasks, lengths, samples and cores."""
    return ["--benchmark", "v2", "--tokenizer", tokenizer, "--tasks", ",".join(tasks),
            "--lengths", ",".join(map(str, lengths)), "--samples", str(samples),
            "--workers", str(workers)]


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
    add_upstream_python(ap)
    args = ap.parse_args(argv)
    tasks = RULER2_TASKS if args.tasks == "all" else tuple(args.tasks.split(","))
    lengths = parse_lengths(args.lengths)
    if not args.ours_only and args.upstream is None:
        ap.error("--upstream DIR is needed (or --ours-only)")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        env = None
        if not args.ours_only:  # upstream's imports, checked before anything is timed
            env = upstream_environment(args.upstream, args.sources, work / "upstream")
            check_imports(args.upstream_python, MODULES, env)
        ours = run_ours(ours_arguments(args.tokenizer, tasks, lengths, args.samples,
                                       args.workers), work / "ours")
        rows = len(tasks) * len(lengths) * args.samples
        print(f"ruler build --benchmark v2, {len(tasks)} tasks x {len(lengths)} length(s) x "
              f"{args.samples} samples = {rows} rows, {args.workers} worker(s) a side")
        if env is None:
            print(ours.line())
            return 0
        tok_folder = Path(os.environ.get("RULER_TOKENIZERS", "")) / args.tokenizer
        up = run_upstream(args.upstream_python, env, tok_folder, tasks, lengths, args.samples,
                          args.workers, work / "upstream")
        by_file = {(t, L): s for (_, t, L), s in ours.files.items()}
        print("\n| task | L | upstream s (process) | ours s (file) |\n|---|---|---|---|")
        for L in lengths:
            for t in tasks:
                print(f"| {t} | {L} | {up.files[(t, L)]:.1f} | "
                      f"{by_file.get((t, L), float('nan')):.2f} |")
        print()
        print_ratios(ours, up)
        if args.reference is not None:
            equal, compared = check_reference(work / "upstream", args.reference)
            print(f"upstream's files equal to the reference: {equal}/{compared}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
