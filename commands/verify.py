"""`ruler verify OUT`: its flags are `VerifyConfig`'s fields."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ruler.builder.findings import DEFAULT_SAMPLE
from ruler.builder.pipeline.config import MAX_LOCAL_WORKERS
from ruler.kernel.errors import RulerError
from ruler.kernel.flags import (
    NEGATED,
    POSITIONAL,
    REPEATED,
    SWITCH,
    add_command,
    check_flags,
    option,
)


def parse_overrides(items: Sequence[str] | Mapping[str, str]) -> dict[str, str]:
    """`--tokenizer CONFIG=PATH` (repeated) as {config: path}; a mapping is taken as it is."""
    if isinstance(items, Mapping):
        return dict(items)
    overrides = {}
    for item in items:
        config, sep, path = item.partition("=")
        if not sep or not config or not path:
            raise RulerError(f"--tokenizer expects CONFIG=PATH, got {item!r}")
        overrides[config] = path
    return overrides


@dataclass(frozen=True)
class VerifyConfig:
    """What `ruler verify` checks (`ruler.builder.verify.run.verify` does it)."""

    out: str = option(kind=POSITIONAL, help="the build folder (holds manifest.json)")
    full: bool = option("--full", kind=SWITCH, default=False,
                        help="re-tokenize every row, not a sample")
    # --sample: the old spelling, kept for scripts; `build --samples` is the one users know.
    samples: int = option(
        "--samples", default=DEFAULT_SAMPLE, type=int, minimum=1, hidden=("--sample",),
        help=f"rows re-tokenized per file without --full (default {DEFAULT_SAMPLE})")
    tokenizers: Mapping[str, str] = option(
        "--tokenizer", kind=REPEATED, default_factory=dict, parse=parse_overrides,
        metavar="CONFIG=PATH", help="load CONFIG's tokenizer from PATH (a folder or registry "
                                    "name)")
    tokenizers_dir: str | None = option(
        "--tokenizers-dir", default=None,
        help="folder of tokenizer folders (default: $RULER_TOKENIZERS)")
    regenerate: int = option(
        "--regenerate", default=0, type=int, minimum=0, metavar="K",
        help="rebuild K random rows of every file from the manifest's identity and compare them "
             "byte for byte with the stored ones (needs the build's sources; default 0)")
    sources_dir: str | None = option(
        "--sources", default=None, metavar="SOURCES_DIR",
        help="folder with the build's sources, for --regenerate and QA gold documents, "
             "searched alone (default: $RULER_SOURCES, then the cache)")
    load: bool = option("--no-load", kind=NEGATED, default=True,
                        help="skip the load_dataset check")
    workers: int = option(
        "--workers", default_factory=lambda: os.cpu_count() or 1, type=int, minimum=1,
        help="processes checking files in parallel (default: all cores)")

    def __post_init__(self) -> None:
        check_flags(self)
        if self.workers > MAX_LOCAL_WORKERS:  # a pool forks all of them at once
            raise RulerError(f"--workers: at most {MAX_LOCAL_WORKERS} processes on this "
                             f"machine; got {self.workers:,}")

    def verify_kwargs(self) -> dict[str, Any]:
        """The keywords of `ruler.builder.verify.run.verify` this config gives."""
        return dict(full=self.full, sample=self.samples, tokenizers=dict(self.tokenizers),
                    tokenizers_dir=self.tokenizers_dir, load=self.load, workers=self.workers,
                    regenerate=self.regenerate, sources_dir=self.sources_dir)


def register_cli(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers, "verify", VerifyConfig, run,
        help="check a build folder against its manifest and load every split",
        description="Recompute every file's hashes against manifest.json, check schema, row "
                    "counts, the build identity and build keys, lengths and gold positions "
                    "(re-derived for a sample of rows, or all with --full), that answers are "
                    "recoverable, optionally rebuild random rows (--regenerate K), and load "
                    "every config and split with datasets.load_dataset. Exit status 1 on any "
                    "problem.")


def run(cfg: VerifyConfig) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # we parallelise by process
    from ruler.builder.verify.report import format_report
    from ruler.builder.verify.run import verify

    report = verify(cfg.out, **cfg.verify_kwargs())
    print(format_report(report))
    return 0 if report.ok else 1
