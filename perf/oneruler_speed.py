"""ONERULER: our build against upstream's own generator, the same languages, tasks, lengths and
samples, side by side in one run, and the ratio.

    python -m perf.oneruler_speed --upstream /path/to/OneRuler-checkout --tokenizer \\
        llama-3.1 --languages en,zh,ru,ko,hi,sw --lengths 8192 --samples 20 [--workers 2] \\
        [--reference ../shared/reference/oneruler/llama-3.1] [--upstream-python PY]
    python -m perf.oneruler_speed --ours-only --lengths 8192 --samples 50

`--upstream` is a checkout of GitHub mungg/OneRuler (or any folder holding its
`OneRuler/prepare.py`, `OneRuler/tokenizer.py`, `OneRuler/synthetic/` and
`config/synthetic.yaml`; it is never part of this repository), whose `OneRuler/data` is the
`oneruler` source (linked here when missing). Upstream runs offline as the reference README
describes: per language and task one `prepare.py` process with the arguments of its
`run_data_generation.sh`, from a folder where `data` is that data folder (its CWE opens
`./data/vocab/dictionaries`), with `STANZA_RESOURCES_DIR` empty and, when `DIR/shim` exists,
that folder first on PYTHONPATH (the reference's `stanza` stand-in: sentencex's sentences, the
regex for sw and st). Upstream runs under `--upstream-python` (its own environment, as its
users run it; default: this interpreter; prepare.py's `python <script>` is that interpreter
too), which must import upstream's dependencies (pandas, tenacity, wonderwords 2.2.0, nltk,
pyyaml, tqdm, transformers): they are checked first, and a missing one is said in one line.

Both sides get the same cores: `--workers N` runs upstream's processes N at a time and our
build with N workers. Wall times include start-up (Python, imports, tokenizer, sentence
splitting) on both sides, as a user pays it. Each side's CPU seconds (its whole process tree's
user + system time) and the load around it are printed, with the wall and CPU ratios
(perf/side_by_side.py). `--reference DIR` also checks upstream's files
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

from perf.ruler2_speed import check_reference
from perf.side_by_side import (
    Side,
    add_upstream_python,
    check_imports,
    interpreter_on_path,
    print_ratios,
    run_ours,
    timed,
)
from ruler.benchmarks.oneruler.languages import LanguageAxis
from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS
from ruler.benchmarks.oneruler.tasks import UPSTREAM_NAMES as ONERULER_UPSTREAM_NAMES
from ruler.builder.selection import parse_lengths
from ruler.catalog.sources import resolve

#: What upstream's prepare.py and generators import (besides the standard library).
MODULES = ("pandas", "tenacity", "wonderwords", "nltk", "yaml", "tqdm", "transformers")


def upstream_command(upstream: Path, out: Path, lang: str, task: str, L: int,
                     tokenizer_path: Path, samples: int, python: str = sys.executable
                     ) -> list[str]:
    """`run_data_generation.sh`'s call of prepare.py for one language, task and length."""
    return [python, str(upstream / "OneRuler" / "prepare.py"),
            "--save_dir", str(out / lang / str(L)), "--benchmark", "synthetic",
            "--task", ONERULER_UPSTREAM_NAMES[task], "--tokenizer_path", str(tokenizer_path),
            "--tokenizer_type", "hf", "--max_seq_length", str(L),
            "--model_template_type", "base", "--num_samples", str(samples), "--lang", lang]


def upstream_environment(upstream: Path, work: Path, sources: str | None,
                         python: str = sys.executable) -> dict[str, str]:
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
                # prepare.py runs `python <script>` through the shell: upstream's interpreter
                PATH=interpreter_on_path(python, work),
                STANZA_RESOURCES_DIR="", NLTK_DATA=str(work / "nltk_data"),
                HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")


def run_upstream(upstream: Path, python: str, env: dict[str, str], tokenizer_path: Path,
                 languages, tasks, lengths, samples: int, workers: int, out: Path) -> Side:
    """Every (language, task, length) as its own prepare.py process under `python` (in `env`:
    `upstream_environment`), `workers` at a time; the side's wall and CPU seconds and each
    process's own seconds. prepare.py swallows its generator's errors, so a file without
    `samples` lines is a failure here."""
    side = Side(f"upstream (prepare.py under {python}, {workers} at a time)")

    def one(job):
        lang, task, L = job
        started = time.perf_counter()
        done = subprocess.run(upstream_command(upstream, out, lang, task, L, tokenizer_path,
                                               samples, python),
                              env=env, cwd=out, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        path = out / lang / str(L) / ONERULER_UPSTREAM_NAMES[task] / "validation.jsonl"
        lines = len(path.read_text(encoding="utf-8").splitlines()) if path.is_file() else 0
        if done.returncode != 0 or lines != samples:
            raise SystemExit(f"upstream {lang} {task} @ {L} failed ({lines} lines):\n"
                             f"{(done.stdout + done.stderr)[-3000:]}")
        return job, seconds

    jobs = [(lang, t, L) for L in lengths for lang in languages for t in tasks]
    with timed(side), ThreadPoolExecutor(max_workers=workers) as pool:
        side.files = dict(pool.map(one, jobs))
    return side


def ours_arguments(tokenizer: str, languages, tasks, lengths, samples: int,
                   workers: int) -> list[str]:
    """`ruler build --benchmark oneruler` for the same languages, tasks, lengths, samples and
    cores."""
    return ["--benchmark", "oneruler", "--tokenizer", tokenizer, "--languages",
            ",".join(languages), "--tasks", ",".join(tasks), "--lengths",
            ",".join(map(str, lengths)), "--samples", str(samples), "--workers", str(workers)]


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
    add_upstream_python(ap)
    args = ap.parse_args(argv)
    languages = [lang.code for lang in LanguageAxis().values(args.languages)]
    tasks = ONERULER_TASKS if args.tasks == "all" else tuple(args.tasks.split(","))
    lengths = parse_lengths(args.lengths)
    if not args.ours_only and args.upstream is None:
        ap.error("--upstream DIR is needed (or --ours-only)")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        env, upstream = None, None
        if not args.ours_only:  # upstream's imports, checked before anything is timed
            upstream = args.upstream.resolve()
            env = upstream_environment(upstream, work / "upstream", args.sources,
                                       args.upstream_python)
            check_imports(args.upstream_python, MODULES, env, cwd=work / "upstream")
        ours = run_ours(ours_arguments(args.tokenizer, languages, tasks, lengths, args.samples,
                                       args.workers), work / "ours")
        rows = len(languages) * len(tasks) * len(lengths) * args.samples
        print(f"ruler build --benchmark oneruler, {len(languages)} language(s) x {len(tasks)} "
              f"tasks x {len(lengths)} length(s) x {args.samples} samples = {rows} rows, "
              f"{args.workers} worker(s) a side")
        if env is None or upstream is None:
            print(ours.line())
            return 0
        tok_folder = Path(os.environ.get("RULER_TOKENIZERS", "")) / args.tokenizer
        up = run_upstream(upstream, args.upstream_python, env, tok_folder, languages, tasks,
                          lengths, args.samples, args.workers, work / "upstream")
        # our files by (language, task, L): the language is the one each config was built for
        by_file = {(lang, t, L): s for (config, t, L), s in ours.files.items()
                   for lang in languages if config.endswith(f"--oneruler-{lang}")}
        print("\n| lang | task | L | upstream s (process) | ours s (file) |\n"
              "|---|---|---|---|---|")
        for L in lengths:
            for lang in languages:
                for t in tasks:
                    print(f"| {lang} | {ONERULER_UPSTREAM_NAMES[t]} | {L} | "
                          f"{up.files[(lang, t, L)]:.1f} | "
                          f"{by_file.get((lang, t, L), float('nan')):.2f} |")
        print()
        print_ratios(ours, up)
        if args.reference is not None:
            equal, compared = check_reference(work / "upstream", args.reference)
            print(f"upstream's files equal to the reference: {equal}/{compared}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
