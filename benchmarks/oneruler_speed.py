"""ONERULER: our build against upstream's own generator, the same languages, tasks, lengths and
samples, side by side in one run, and the ratio.

    python -m benchmarks.oneruler_speed --upstream /path/to/OneRuler-checkout --tokenizer \\
        llama-3.1 --languages en,zh,ru,ko,hi,sw --lengths 8192 --samples 20 [--workers 2] \\
        [--reference ../shared/reference/oneruler/llama-3.1]
    python -m benchmarks.oneruler_speed --ours-only --lengths 8192 --samples 50

`--upstream` is a checkout of GitHub mungg/OneRuler (or any folder holding its
`OneRuler/prepare.py`, `OneRuler/tokenizer.py`, `OneRuler/synthetic/` and
`config/synthetic.yaml`; it is never part of this repository), whose `OneRuler/data` is the
`oneruler` source (linked here when missing). Upstream runs offline as the reference README
describes: per language and task one `prepare.py` process with the arguments of its
`run_data_generation.sh`, from a folder where `data` is that data folder (its CWE opens
`./data/vocab/dictionaries`), with `STANZA_RESOURCES_DIR` empty and, when `DIR/shim` exists,
that folder first on PYTHONPATH (the reference's `stanza` stand-in: sentencex's sentences, the
regex for sw and st). Upstream's dependencies must be installed (pandas, tenacity, wonderwords
2.2.0, nltk, pyyaml, tqdm, transformers).

Both sides get the same cores: `--workers N` runs upstream's processes N at a time and our
build with N workers. Wall times include start-up (Python, imports, tokenizer, sentence
splitting) on both sides, as a user pays it. `--reference DIR` also checks upstream's files
against `DIR/SHA256SUMS.uncompressed`, which shows the harness runs upstream as the reference
was made.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.ruler2_speed import check_reference
from ruler.builder.cli_build import parse_languages
from ruler.builder.selection import parse_lengths
from ruler.builder.sources import resolve
from ruler.builder.tasks.catalog import ONERULER_TASKS, ONERULER_UPSTREAM_NAMES


def upstream_command(upstream: Path, out: Path, lang: str, task: str, L: int,
                     tokenizer_path: Path, samples: int) -> list[str]:
    """`run_data_generation.sh`'s call of prepare.py for one language, task and length."""
    return [sys.executable, str(upstream / "OneRuler" / "prepare.py"),
            "--save_dir", str(out / lang / str(L)), "--benchmark", "synthetic",
            "--task", ONERULER_UPSTREAM_NAMES[task], "--tokenizer_path", str(tokenizer_path),
            "--tokenizer_type", "hf", "--max_seq_length", str(L),
            "--model_template_type", "base", "--num_samples", str(samples), "--lang", lang]


def upstream_environment(upstream: Path, work: Path, sources: str | None) -> dict[str, str]:
    """The folder upstream runs in (`data` -> the data) and its environment."""
    data = resolve("oneruler", sources).path
    if not (upstream / "OneRuler" / "data").exists():
        (upstream / "OneRuler" / "data").symlink_to(data, target_is_directory=True)
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "data").exists():
        (work / "data").symlink_to(data, target_is_directory=True)
    (work / "nltk_data" / "tokenizers" / "punkt").mkdir(parents=True, exist_ok=True)
    shim = upstream / "shim"
    path = [str(shim)] if shim.is_dir() else []
    return dict(os.environ, PYTHONPATH=os.pathsep.join([*path, os.environ.get("PYTHONPATH", "")]),
                # prepare.py runs `python <script>` through the shell: this interpreter
                PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                      os.environ.get("PATH", "")]),
                STANZA_RESOURCES_DIR="", NLTK_DATA=str(work / "nltk_data"),
                HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")


def run_upstream(upstream: Path, tokenizer_path: Path, languages, tasks, lengths, samples: int,
                 workers: int, out: Path, sources: str | None) -> tuple[float, dict]:
    """Every (language, task, length) as its own prepare.py process, `workers` at a time; the
    wall time and each process's own seconds. prepare.py swallows its generator's errors, so
    a file without `samples` lines is a failure here."""
    env = upstream_environment(upstream, out, sources)

    def one(job):
        lang, task, L = job
        started = time.perf_counter()
        done = subprocess.run(upstream_command(upstream, out, lang, task, L, tokenizer_path,
                                               samples),
                              env=env, cwd=out, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        path = out / lang / str(L) / ONERULER_UPSTREAM_NAMES[task] / "validation.jsonl"
        lines = len(path.read_text(encoding="utf-8").splitlines()) if path.is_file() else 0
        if done.returncode != 0 or lines != samples:
            raise SystemExit(f"upstream {lang} {task} @ {L} failed ({lines} lines):\n"
                             f"{(done.stdout + done.stderr)[-3000:]}")
        return job, seconds

    jobs = [(lang, t, L) for L in lengths for lang in languages for t in tasks]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        seconds = dict(pool.map(one, jobs))
    return time.perf_counter() - started, seconds


def run_ours(tokenizer: str, languages, tasks, lengths, samples: int, workers: int, out: Path
             ) -> tuple[float, dict]:
    """`ruler build --benchmark oneruler` in a fresh process (start-up included)."""
    cmd = [sys.executable, "-m", "ruler", "build", "--benchmark", "oneruler", "--tokenizer",
           tokenizer, "--languages", ",".join(languages), "--tasks", ",".join(tasks),
           "--lengths", ",".join(map(str, lengths)), "--samples", str(samples), "--out",
           str(out), "--workers", str(workers), "--no-progress"]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"ruler build failed:\n{done.stderr[-3000:]}")
    seconds = {}
    for line in done.stdout.splitlines():  # "  data/<config>/<task>/<L>.parquet: ..., 1.2s, ..."
        if ".parquet:" in line:
            rel, rest = line.strip().split(": ", 1)
            _, config, task, name = rel.split("/")
            lang = config.rsplit("--oneruler-", 1)[1]
            secs = next(p for p in rest.split(", ") if p.endswith("s") and p[:-1].replace(
                ".", "").isdigit())
            seconds[(lang, task, int(name.split(".")[0]))] = float(secs[:-1])
    return wall, seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", type=Path, help="a mungg/OneRuler checkout (never committed)")
    ap.add_argument("--ours-only", action="store_true", help="time our build alone")
    ap.add_argument("--tokenizer", default="llama-3.1",
                    help="a registry tokenizer; upstream reads its folder under "
                         "$RULER_TOKENIZERS")
    ap.add_argument("--languages", default="all", help="codes (default: all 26)")
    ap.add_argument("--tasks", default="all")
    ap.add_argument("--lengths", default="8192")
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--sources", default=None, help="the sources folder (else $RULER_SOURCES)")
    ap.add_argument("--reference", type=Path, default=None,
                    help="check upstream's files against this reference folder's hashes")
    ap.add_argument("--keep", type=Path, default=None, help="keep both outputs here")
    args = ap.parse_args(argv)
    languages = [lang.code for lang in parse_languages(args.languages)]
    tasks = ONERULER_TASKS if args.tasks == "all" else tuple(args.tasks.split(","))
    lengths = parse_lengths(args.lengths)
    if not args.ours_only and args.upstream is None:
        ap.error("--upstream DIR is needed (or --ours-only)")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        ours_wall, ours = run_ours(args.tokenizer, languages, tasks, lengths, args.samples,
                                   args.workers, work / "ours")
        rows = len(languages) * len(tasks) * len(lengths) * args.samples
        print(f"ours: ruler build --benchmark oneruler, {len(languages)} language(s) x "
              f"{len(tasks)} tasks x {len(lengths)} length(s) x {args.samples} samples = "
              f"{rows} rows, {args.workers} worker(s): {ours_wall:.1f} s wall")
        if args.ours_only:
            return 0
        tok_folder = Path(os.environ.get("RULER_TOKENIZERS", "")) / args.tokenizer
        up_wall, up = run_upstream(args.upstream.resolve(), tok_folder, languages, tasks,
                                   lengths, args.samples, args.workers, work / "upstream",
                                   args.sources)
        print(f"upstream: prepare.py, one process per language, task and length, "
              f"{args.workers} at a time: {up_wall:.1f} s wall\n")
        print("| lang | task | L | upstream s (process) | ours s (file) |\n|---|---|---|---|---|")
        for L in lengths:
            for lang in languages:
                for t in tasks:
                    print(f"| {lang} | {ONERULER_UPSTREAM_NAMES[t]} | {L} | "
                          f"{up[(lang, t, L)]:.1f} | "
                          f"{ours.get((lang, t, L), float('nan')):.2f} |")
        print(f"\nwall: upstream {up_wall:.1f} s, ours {ours_wall:.1f} s: ours is "
              f"{up_wall / ours_wall:.1f}x faster")
        if args.reference is not None:
            equal, compared = check_reference(work / "upstream", args.reference)
            print(f"upstream's files equal to the reference: {equal}/{compared}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
