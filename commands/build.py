"""`ruler build`: its flags are `BuildConfig`'s fields and the variant kinds' own flags."""

from __future__ import annotations

import argparse
import dataclasses

from ruler.benchmarks import DEFAULT
from ruler.builder.pipeline.config import BuildConfig, BuildReport
from ruler.builder.selection import parse_lengths, parse_shard, parse_tasks
from ruler.builder.tokenizer_registry import TOKENIZERS_ENV, registry
from ruler.catalog.benchmarks import BENCHMARK_SPECS, benchmark_axes, benchmark_id
from ruler.catalog.length_rules import fill_definition, rules_of
from ruler.catalog.sources import SOURCES_ENV
from ruler.catalog.variants import add_variant_flags, variants_from_flags
from ruler.kernel.errors import RulerError
from ruler.kernel.flags import add_flags, check_flags, flag_values, from_flags, option

#: Read by other modules from here too (`parse_*` live in ruler.builder.selection).
__all__ = ["axis_flags", "parse_lengths", "parse_shard", "parse_tasks", "register_cli", "run"]


def axis_flags() -> type:
    """`ruler build`'s flags of the benchmarks' axes (`--languages`): a frozen dataclass with
    one field per axis, each the comma-separated values to build, one config each (as
    --replicates asks for several variants)."""
    fields = [(_dest(a.flag), str | None, option(a.flag, default=None, help=a.help))
              for a in benchmark_axes().values()]
    return dataclasses.make_dataclass("AxisFlags", fields, frozen=True,
                                      namespace={"__post_init__": check_flags})


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def axis_values(benchmark: str, flags: object) -> list[dict[str, object]]:
    """Each config's axis values the flags ask for ({} for a benchmark without axes); an axis
    flag of another benchmark is refused."""
    bench = BENCHMARK_SPECS[benchmark]
    own = {a.name for a in bench.axes}
    for axis in benchmark_axes().values():
        if axis.name not in own and getattr(flags, _dest(axis.flag)) is not None:
            owners = [b.flag for b in BENCHMARK_SPECS.values() if axis in b.axes]
            raise RulerError(f"{axis.flag} is for {' / '.join(owners)} (one config per "
                             f"{axis.name}); --benchmark {benchmark} has none")
    combos: list[dict[str, object]] = [{}]
    for axis in bench.axes:
        combos = [{**c, axis.name: v} for c in combos
                  for v in axis.values(getattr(flags, _dest(axis.flag)))]
    return combos


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build", help="generate a benchmark's splits for one tokenizer",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Generate a benchmark's tasks (--benchmark) for one tokenizer into\n"
                    "OUT/data/<tokenizer>/<task>/<L>.parquet, with OUT/manifest.json and a "
                    "dataset card\n(OUT/README.md). "
                    "Every sample fits its\nlength L exactly, by its benchmark's length rule, "
                    "which each file's manifest entry\nrecords: the prompt (chat template + "
                    "answer prefix) + tokens_to_generate <= L, or\nfor a benchmark whose answer "
                    "comes on top, the prompt alone <= L.\nRe-running skips files "
                    "that are "
                    "complete and match; an interrupted build resumes; builds of other\n"
                    "tasks, lengths or shards of the same build may run into one OUT at once. "
                    "A build whose seed,\nsamples, tokenizer or package versions differ from "
                    "the files in OUT refuses (--overwrite).",
        epilog=f"Registry tokenizers: {', '.join(registry())}.\n"
               f"Offline: ${TOKENIZERS_ENV} points at tokenizer folders, ${SOURCES_ENV} (or "
               f"--sources) at the\nbenchmarks' pinned inputs (`ruler sources list`).",
    )
    add_flags(p, BuildConfig)
    add_flags(p, axis_flags())
    # Each registered variant adds its own flag(s) (catalog.variants): --depths, --output-budget,
    # --replicate / --replicates, --base, --no-context
    add_variant_flags(p)
    # SIGTERM (a scheduler, `kill PID`) stops a build as Ctrl-C does: workers stopped, this
    # build's temporary files removed (ruler.commands.main.Terminated).
    p.set_defaults(func=run, interrupt_on_sigterm=True)


def run(args: argparse.Namespace) -> int:
    # One config per variant; `--replicates K` asks for K of them, built one after the other,
    # each exactly as its own `--replicate i` command builds it.
    # A benchmark built along axes: one config per value too (`--languages`). The card is
    # rendered once, when they are all built (`run_builds`).
    from ruler.builder.pipeline.run import run_builds

    values = flag_values(BuildConfig, args)
    benchmark = benchmark_id(values.get("benchmark", DEFAULT))
    combos = axis_values(benchmark, from_flags(axis_flags(), args))
    cfgs = [BuildConfig(**values, variant=variant, axes=axes)
            for variant in variants_from_flags(vars(args)) for axes in combos]
    run_builds(cfgs, done=_report)
    return 0


def _report(cfg: BuildConfig, report: BuildReport) -> None:
    """Print what one config's build built."""
    from ruler.builder.manifest import Manifest

    built = [f for f in report.files if not f.skipped]
    print(f"{report.config}: {len(built)} file(s) built, {len(report.files) - len(built)} "
          f"up to date, in {report.out}")
    for f in sorted(built, key=lambda f: (f.max_seq_length, f.task)):
        on = f", on Ray worker {f.worker}" if cfg.executor == "ray" else ""
        print(f"  {f.path}: {f.rows} rows, fill mean {f.fill_mean:.4f} min {f.fill_min:.4f}, "
              f"{f.seconds:.1f}s, {f.bytes / 1e6:.2f} MB{on}")
    manifest = Manifest.load(report.out)
    # what "fill" is, by the built files' own recorded length rules (some count the
    # prompt alone)
    recorded = {f.path: f.length_rule for f in manifest.files_of(report.config)}
    for rule in rules_of(recorded.get(f.path) for f in built):
        print(f"  ({fill_definition(rule)})")
    short = [f for f in built if f.short_at_bound]
    if short:
        print(f"note: {len(short)} file(s) hold rows that fill less of L than the benchmark "
              f"promises, kept because they hold all of their task's inputs (as upstream's): "
              + ", ".join(f"{f.path} ({f.short_at_bound} rows, fill min {f.fill_min:.4f})"
                          for f in short))
    fallback = [f for f in built if f.exact_rows and not cfg.exact_counts]
    if fallback:
        print(f"note: {len(fallback)} file(s) were counted by whole-prompt tokenization, because "
              f"this tokenizer's counts do not add up across the prompt's piece junctions "
              f"(slower, same exactness): {', '.join(f.path for f in fallback)}")
    build = manifest.build(report.config)
    why = build.unofficial_reasons() if build is not None else []
    if why:
        print(f"note: {report.config} is an unofficial build ({'; '.join(why)}); the manifest "
              f"and the card say so, and `ruler release` refuses it without --allow-unofficial")
