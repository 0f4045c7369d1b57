"""`ruler build`: its flags are `BuildConfig`'s fields and the variant kinds' own flags."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ruler.builder.errors import RulerError
from ruler.builder.flags import add_flags, check_flags, flag_values, from_flags, option
from ruler.builder.length_rules import fill_definition, rules_of
from ruler.builder.pipeline.config import BuildConfig, BuildReport
from ruler.builder.selection import parse_lengths, parse_shard, parse_tasks
from ruler.builder.sources import SOURCES_ENV
from ruler.builder.tasks.benchmarks import ONERULER, RULER, benchmark_id, per_language
from ruler.builder.tasks.oneruler_languages import LANGUAGES, OnerulerLanguage
from ruler.builder.tokenizer_registry import TOKENIZERS_ENV, registry
from ruler.builder.variants import add_variant_flags, variants_from_flags

#: Read by other modules from here too (`parse_*` live in ruler.builder.selection).
__all__ = ["LanguageFlags", "parse_languages", "parse_lengths", "parse_shard", "parse_tasks",
           "register_cli", "run"]


def parse_languages(text: str | None) -> tuple[OnerulerLanguage, ...]:
    """`ko,fr` or `en-ko` (context-instructions, a cross-lingual config); `all` (or nothing):
    the 26 languages, each on its own."""
    if not text or text.strip() == "all":
        return tuple(OnerulerLanguage.mono(code) for code in LANGUAGES)
    out = [OnerulerLanguage.parse(part) for part in text.split(",") if part.strip()]
    if len(set(out)) != len(out):
        raise RulerError(f"--languages {text!r} names a language twice")
    return tuple(out)


@dataclass(frozen=True)
class LanguageFlags:
    """`ruler build --languages`: which languages of a per-language benchmark (ONERULER) to
    build, one config each (`BuildConfig.language`), as --replicates asks for several
    variants."""

    languages: str | None = option(
        "--languages", default=None,
        help=f"--benchmark oneruler: comma-separated languages, one config each: a code "
             f"({' '.join(LANGUAGES)}) or a cross-lingual pair context-instructions (en-ko: the "
             f"book, needles and keys in English, the instructions, question and none-word in "
             f"Korean); default: all 26 codes")

    def __post_init__(self) -> None:
        check_flags(self)

    def of(self, benchmark: str) -> tuple[OnerulerLanguage | None, ...]:
        """The languages to build for `benchmark` (None: a benchmark without languages)."""
        if per_language(benchmark):
            return parse_languages(self.languages)
        if self.languages is not None:
            raise RulerError(f"--languages is for --benchmark {ONERULER} (one config per "
                             f"language); --benchmark {benchmark} has none")
        return (None,)


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build", help="generate RULER splits for one tokenizer",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Generate the RULER tasks for one tokenizer into OUT/data/<tokenizer>/<task>/"
                    "<L>.parquet,\nwith OUT/manifest.json and a dataset card (OUT/README.md). "
                    "Every sample fits its\nlength L exactly, by its benchmark's length rule, "
                    "which each file's manifest entry\nrecords: RULER and ONERULER count the "
                    "prompt (chat template + answer prefix) +\ntokens_to_generate <= L, RULERv2 "
                    "the prompt alone <= L (its answer comes on top).\nRe-running skips files "
                    "that are "
                    "complete and match; an interrupted build resumes; builds of other\n"
                    "tasks, lengths or shards of the same build may run into one OUT at once. "
                    "A build whose seed,\nsamples, tokenizer or package versions differ from "
                    "the files in OUT refuses (--overwrite).",
        epilog=f"Registry tokenizers: {', '.join(registry())}.\n"
               f"Offline: ${TOKENIZERS_ENV} points at tokenizer folders, ${SOURCES_ENV} (or "
               f"--sources) at the\nessay/SQuAD/HotpotQA/punkt_tab inputs (`ruler sources list`).",
    )
    add_flags(p, BuildConfig)
    add_flags(p, LanguageFlags)
    # Each registered variant adds its own flag(s) (builder.variants): --depths, --output-budget,
    # --replicate / --replicates, --base, --no-context
    add_variant_flags(p)
    # SIGTERM (a scheduler, `kill PID`) stops a build as Ctrl-C does: workers stopped, this
    # build's temporary files removed (ruler.cli.Terminated).
    p.set_defaults(func=run, interrupt_on_sigterm=True)


def run(args: argparse.Namespace) -> int:
    # One config per variant; `--replicates K` asks for K of them, built one after the other,
    # each exactly as its own `--replicate i` command builds it.
    # ONERULER: one config per language too (`--languages`). The card is rendered once, when
    # they are all built (`run_builds`).
    from ruler.builder.pipeline.run import run_builds

    values = flag_values(BuildConfig, args)
    languages = from_flags(LanguageFlags, args).of(benchmark_id(values.get("benchmark", RULER)))
    cfgs = [BuildConfig(**values, variant=variant, language=language)
            for variant in variants_from_flags(vars(args)) for language in languages]
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
    # what "fill" is, by the built files' own recorded length rules (RULERv2's count the
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
