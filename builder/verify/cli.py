"""`ruler verify OUT`."""

from __future__ import annotations

import argparse
import os
from typing import Sequence

from ruler.builder.errors import RulerError
from ruler.builder.pipeline.config import MAX_LOCAL_WORKERS
from ruler.builder.verify.findings import DEFAULT_SAMPLE


def parse_overrides(items: Sequence[str]) -> dict[str, str]:
    overrides = {}
    for item in items:
        config, sep, path = item.partition("=")
        if not sep or not config or not path:
            raise RulerError(f"--tokenizer expects CONFIG=PATH, got {item!r}")
        overrides[config] = path
    return overrides


def register_cli(subparsers) -> None:
    p = subparsers.add_parser(
        "verify", help="check a build folder against its manifest and load every split",
        description="Recompute every file's hashes against manifest.json, check schema, row "
                    "counts, the build identity and build keys, lengths and gold positions "
                    "(re-derived for a sample of rows, or all with --full), that answers are "
                    "recoverable, optionally rebuild random rows (--regenerate K), and load "
                    "every config and split with datasets.load_dataset. Exit status 1 on any "
                    "problem.")
    p.add_argument("out", help="the build folder (holds manifest.json)")
    p.add_argument("--full", action="store_true", help="re-tokenize every row, not a sample")
    p.add_argument("--samples", type=int, default=DEFAULT_SAMPLE,
                   help=f"rows re-tokenized per file without --full (default {DEFAULT_SAMPLE})")
    # The old spelling, kept for scripts; `build --samples` is the one users know.
    p.add_argument("--sample", dest="samples", type=int, default=argparse.SUPPRESS,
                   help=argparse.SUPPRESS)
    p.add_argument("--tokenizer", action="append", default=[], metavar="CONFIG=PATH",
                   help="load CONFIG's tokenizer from PATH (a folder or registry name)")
    p.add_argument("--tokenizers-dir", default=None,
                   help="folder of tokenizer folders (default: $RULER_TOKENIZERS)")
    p.add_argument("--regenerate", type=int, default=0, metavar="K",
                   help="rebuild K random rows of every file from the manifest's identity and "
                        "compare them byte for byte with the stored ones (needs the build's "
                        "sources; default 0)")
    p.add_argument("--sources", dest="sources_dir", default=None,
                   help="folder with the build's sources, for --regenerate and QA gold "
                        "documents, searched alone (default: $RULER_SOURCES, then the cache)")
    p.add_argument("--no-load", action="store_true", help="skip the load_dataset check")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="processes checking files in parallel (default: all cores)")
    p.set_defaults(func=run_cli)


def run_cli(args) -> int:
    if args.samples < 1:
        raise RulerError(f"--samples must be >= 1, got {args.samples}")
    if args.workers < 1:
        raise RulerError(f"--workers must be >= 1, got {args.workers}")
    if args.workers > MAX_LOCAL_WORKERS:  # a pool forks all of them at once
        raise RulerError(f"--workers: at most {MAX_LOCAL_WORKERS} processes on this machine; "
                         f"got {args.workers:,}")
    if args.regenerate < 0:
        raise RulerError(f"--regenerate must be >= 0, got {args.regenerate}")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # we parallelise by process
    from ruler.builder.verify.report import format_report
    from ruler.builder.verify.run import verify

    report = verify(args.out, full=args.full, sample=args.samples,
                    tokenizers=parse_overrides(args.tokenizer),
                    tokenizers_dir=args.tokenizers_dir, load=not args.no_load,
                    workers=args.workers, regenerate=args.regenerate,
                    sources_dir=args.sources_dir)
    print(format_report(report))
    return 0 if report.ok else 1
