"""`ruler build`: its flags are `BuildConfig`'s fields and the variant kinds' own flags."""

from __future__ import annotations

import argparse

from ruler.builder.flags import add_flags, flag_values
from ruler.builder.pipeline.config import BuildConfig
from ruler.builder.selection import parse_lengths, parse_shard, parse_tasks
from ruler.builder.sources import SOURCES_ENV
from ruler.builder.tokenizer_registry import TOKENIZERS_ENV, registry
from ruler.builder.variants import add_variant_flags, variants_from_flags

#: Read by other modules from here too (`parse_*` live in ruler.builder.selection).
__all__ = ["FILL_DEFINITION", "parse_lengths", "parse_shard", "parse_tasks", "register_cli",
           "run"]

#: What the build summary's "fill" is (the worker's `fill_mean`/`fill_min`).
FILL_DEFINITION = ("fill: a row's length / L, the share of the length L it uses, where length = "
                   "its prompt's tokens + tokens_to_generate <= L; mean and smallest over the "
                   "file's rows")


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build", help="generate RULER splits for one tokenizer",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Generate the RULER tasks for one tokenizer into OUT/data/<tokenizer>/<task>/"
                    "<L>.parquet,\nwith OUT/manifest.json and a dataset card (OUT/README.md). "
                    "Every sample fits its\nlength L exactly (prompt with chat template + answer "
                    "prefix + tokens_to_generate <= L).\nRe-running skips files that are "
                    "complete and match; an interrupted build resumes; builds of other\n"
                    "tasks, lengths or shards of the same build may run into one OUT at once. "
                    "A build whose seed,\nsamples, tokenizer or package versions differ from "
                    "the files in OUT refuses (--overwrite).",
        epilog=f"Registry tokenizers: {', '.join(registry())}.\n"
               f"Offline: ${TOKENIZERS_ENV} points at tokenizer folders, ${SOURCES_ENV} (or "
               f"--sources) at the\nessay/SQuAD/HotpotQA/punkt_tab inputs (`ruler sources list`).",
    )
    add_flags(p, BuildConfig)
    # Each registered variant adds its own flag(s) (builder.variants): --depths, --output-budget,
    # --replicate / --replicates, --base, --no-context
    add_variant_flags(p)
    # SIGTERM (a scheduler, `kill PID`) stops a build as Ctrl-C does: workers stopped, this
    # build's temporary files removed (ruler.cli.Terminated).
    p.set_defaults(func=run, interrupt_on_sigterm=True)


def run(args: argparse.Namespace) -> int:
    # One config per variant; `--replicates K` asks for K of them, built one after the other,
    # each exactly as its own `--replicate i` command builds it.
    values = flag_values(BuildConfig, args)
    for variant in variants_from_flags(vars(args)):
        _build_one(BuildConfig(**values, variant=variant))
    return 0


def _build_one(cfg: BuildConfig) -> None:
    """Build one config and print what was built."""
    from ruler.builder.manifest import Manifest
    from ruler.builder.pipeline import run_build

    report = run_build(cfg)
    built = [f for f in report.files if not f.skipped]
    print(f"{report.config}: {len(built)} file(s) built, {len(report.files) - len(built)} "
          f"up to date, in {report.out}")
    for f in sorted(built, key=lambda f: (f.max_seq_length, f.task)):
        on = f", on Ray worker {f.worker}" if cfg.executor == "ray" else ""
        print(f"  {f.path}: {f.rows} rows, fill mean {f.fill_mean:.4f} min {f.fill_min:.4f}, "
              f"{f.seconds:.1f}s, {f.bytes / 1e6:.2f} MB{on}")
    if built:
        print(f"  ({FILL_DEFINITION})")
    fallback = [f for f in built if f.exact_rows and not cfg.exact_counts]
    if fallback:
        print(f"note: {len(fallback)} file(s) were counted by whole-prompt tokenization, because "
              f"this tokenizer's counts do not add up across the prompt's piece junctions "
              f"(slower, same exactness): {', '.join(f.path for f in fallback)}")
    build = Manifest.load(report.out).build(report.config)
    why = build.unofficial_reasons() if build is not None else []
    if why:
        print(f"note: {report.config} is an unofficial build ({'; '.join(why)}); the manifest "
              f"and the card say so, and `ruler release` refuses it without --allow-unofficial")
