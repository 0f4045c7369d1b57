"""`ruler eval`, `ruler score`, `ruler report`, `ruler compare`, `ruler published`: each
command's flags are its config's fields (`ruler.eval.config`); its handler takes the config.

vLLM, torch and matplotlib are imported by the handlers' callees when a command runs, so
`ruler --help` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ruler.eval.backends import BackendOptions, add_backend_flags, backend_names, get_backend
from ruler.eval.backends.engine_env import VLLM_CPU_DEFAULTS
from ruler.eval.config import (
    CompareConfig,
    EvalConfig,
    PublishedConfig,
    ReportConfig,
    ScoreConfig,
)
from ruler.kernel.errors import RulerError
from ruler.kernel.flags import add_command, add_flags, flag_values, flagged_fields

if TYPE_CHECKING:
    from ruler.eval.records.scores_record import ScoresRecord
    from ruler.eval.report.run import Report

_SHOWN = 10
#: What `ruler eval --help` says of vLLM's CPU build, from what `engine_env` sets.
_CPU_NOTE = ("vLLM's CPU build (vllm-cpu): ruler eval sets "
             + " and ".join(f"{name}={value}" for name, (value, _) in VLLM_CPU_DEFAULTS.items())
             + "\nwhere you have not set them (the cache size also not where "
               "--gpu-memory-utilization sizes it),\nand says so; set them yourself for other "
               "values (a long context needs a larger VLLM_CPU_KVCACHE_SPACE, in GiB).")


def register_cli(sub: argparse._SubParsersAction) -> None:
    _register_eval(sub)
    _register_score(sub)
    _register_report(sub)
    _register_compare(sub)
    _register_published(sub)


def _register_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval", help=f"generate predictions with a model ({', '.join(backend_names())})",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Render each row exactly as the builder counted it (chat: the model's chat "
                    "template with\nthe answer prefix continuing the assistant turn; base: input "
                    "+ answer_prefix; reasoning: the\nchat template with a generation prompt and "
                    "no prefix), generate greedily up to the row's\ntokens_to_generate, write "
                    "OUT/predictions.jsonl as rows finish, then OUT/scores.json and the\nreport. "
                    "Rows stream to the engine in a bounded window (rendered ahead by a process "
                    "pool),\nso memory stays bounded at any size. Re-running resumes (failed "
                    "rows are retried). Rows\nlonger than max_model_len are recorded as "
                    "skipped with the reason, and retried by a run\nwhose --max-model-len "
                    "fits them. One run at a time per results folder.\n\n"
                    "Reasoning models: build a config with a reserved output budget (ruler build "
                    "... --output-budget\n16384 gives config <tokenizer>--out16k) and evaluate "
                    "it: --mode reasoning is then the default;\nthe answer is the text after "
                    "the reasoning's end marker, raw outputs are kept, and rows whose\nreasoning "
                    "ran out of budget are counted in the report.\n\n"
                    "Configs of a benchmark whose length counts the prompt alone (--benchmark "
                    "v2): each row's prompt is the\nchat template with a generation prompt (no "
                    "answer prefix), and its tokens to generate come on\ntop (upstream's run, "
                    "greedy). --mode reasoning\nscores the text after "
                    "the reasoning (chat, the default, scores the whole output, as\nNeMo-Skills "
                    "without ++parse_reasoning). Where max_model_len holds the prompt but not "
                    "the\nwhole budget, a row runs with the budget cut to the context left "
                    "(recorded per row as\noutput_budget, counted in the report); a prompt "
                    "that leaves no room is skipped.",
        epilog="One node, 8 GPUs: --backend vllm --data-parallel-size 8 (8 replicas), or "
               "--tensor-parallel-size 8\nfor a model that needs them all; a 70B model on 8 "
               "GPUs: --tensor-parallel-size 4 --data-parallel-size 2.\n" + _CPU_NOTE)
    # The run's flags with the context limit every backend takes after --limit, then each
    # backend's own flags in a group of its own.
    run = [f.name for f, _ in flagged_fields(EvalConfig)]
    after_limit = run.index("limit") + 1
    add_flags(p, EvalConfig, run[:after_limit])
    add_flags(p, BackendOptions)
    add_flags(p, EvalConfig, run[after_limit:])
    add_backend_flags(p)
    p.set_defaults(func=lambda args: run_eval_cmd(eval_config(args)))


def _register_score(sub: argparse._SubParsersAction) -> None:
    add_command(
        sub, "score", ScoreConfig, run_score_cmd,
        help="score a predictions file (from any framework) against the dataset",
        description="Score PREDICTIONS (JSONL or Parquet with columns tokenizer, task, "
                    "max_seq_length, index,\nprediction; optional status, reason) with the "
                    "rows' own metrics. PREDICTIONS may also be\nlm-evaluation-harness "
                    "output of `ruler "
                    "export lm-eval` tasks (a samples_*.jsonl file or\nthe --output_path "
                    "folder), an Inspect log of the ruler task (.eval, or a folder of "
                    "them), or NeMo-Skills\n`ns eval` output (output.jsonl, output-rs0.jsonl, "
                    "or an eval-results folder) of the\n`ruler` benchmarks made from "
                    "this dataset's rows: each record is matched to\nits row by the prompt text "
                    "(`question`), and records matching no row are refused.\n\n"
                    "Each prediction is checked against its row of this build by what it "
                    "carries of it:\ndata_sha256 (the split file's content_sha256), "
                    "input_sha256 (sha256 of the row's input) or\ninput, length. Anything "
                    "that differs is refused (made from another build). Scored rows tied\nby "
                    "neither data_sha256 nor the input are UNVERIFIED, said in the report and "
                    "in scores.json\n(`tied_to_build`): an equal length alone proves little."
                    "\n\n"
                    "Coverage is counted against what was asked for: the tasks and lengths of "
                    "--tasks / --lengths;\nelse the files the run itself asked for, where it "
                    "records them (a `ruler eval` results\nfolder's run.json, an Inspect log, "
                    "lm-eval's results file); else every task and length of\nthe config. The "
                    "first --limit rows of each (default: the run's own limit, where "
                    "recorded).\nRows without a prediction are missing, and while any row "
                    "asked for is missing or failed\nthe results are PARTIAL: the effective "
                    "length, Avg. and wAvg. are withheld and the incomplete\ncells named. "
                    "Predictions that match no row are listed.",
        epilog="Output: PREDICTIONS.scores/ beside a predictions file (e.g. preds.jsonl -> "
               "preds.jsonl.scores/),\nor the PREDICTIONS folder itself; --out elsewhere. A "
               "scores.json of other predictions is never\noverwritten: each records the "
               "path and sha256 of what it scored.",
        formatter_class=argparse.RawDescriptionHelpFormatter)


def _register_report(sub: argparse._SubParsersAction) -> None:
    add_command(
        sub, "report", ReportConfig, run_report_cmd,
        help="Table-3 style report of a results folder (md, csv, json, png), or of runs on "
             "replicates pooled",
        description="Per task x length scores, the mean per length, Avg., wAvg. (inc/dec) and "
                    "the effective\ncontext length, from RESULTS/scores.json; and the score by "
                    "depth bin of the gold items\nper task and length, with depth x length "
                    "heatmaps (RESULTS/depth_heatmaps/*.png).\n\n"
                    "Several RESULTS: runs of one model on replicate configs of one tokenizer "
                    "(`ruler build\n--replicates K`; the default config may be one of them), "
                    "pooled: per task x length,\nthe mean per length, Avg. and wAvg., the mean "
                    "over replicates ± their standard deviation\n[min..max]. Printed; with --out, "
                    "also written to OUT/report_replicates.md, .csv, .json.\nRuns of other "
                    "tokenizers, prompt modes or variants, or one replicate twice, are\n"
                    "refused.\n\n"
                    "Several RESULTS of different models (or --table): the paper's Table 3, one "
                    "row per model\n(claimed and effective length, every length, Avg., wAvg. "
                    "with 95 % intervals), published\nrows of --reference interleaved; printed, "
                    "and with --out written to OUT/table3.md, .tex\n(LaTeX, booktabs), .json."
                    "\n\nSeveral RESULTS of a benchmark built one config per language: per "
                    "model, "
                    "the language x length\ntable (the mean of the tasks per language and "
                    "length, Avg., the mean over languages,\nwith 95 % intervals), language x "
                    "task, the per-task micro accuracy over all languages,\nand heatmaps; "
                    "printed, and with --out written to OUT/report_languages.md, .csv, .json\n"
                    "and OUT/language_heatmaps/. Runs scored with different metrics are "
                    "refused."
                    "\n\n--reference NAME puts a published result (`ruler published` lists "
                    "them) beside one run:\nper length the published score, the run's with its "
                    "95 % interval, the difference, and\nwhether the published value lies in "
                    "the interval; effective lengths; every set-up\ndifference. The report "
                    "always ends with a set-up health section: answers cut at the\nbudget, "
                    "empty answers, reasoning out of budget, refusals, prompt-count mismatches, "
                    "rows\nskipped for the context limit, chat template and generation "
                    "settings, each with a fix.",
        formatter_class=argparse.RawDescriptionHelpFormatter)


def _register_published(sub: argparse._SubParsersAction) -> None:
    add_command(
        sub, "published", PublishedConfig, run_published_cmd,
        help="list the published RULER results `--reference` can name",
        description="The registry of published RULER results (ruler/eval/published/*.json, "
                    "each with its source:\nURL or repository, path and commit, and date), "
                    "and your own files (--reference-file).",
        formatter_class=argparse.RawDescriptionHelpFormatter)


def _register_compare(sub: argparse._SubParsersAction) -> None:
    add_command(
        sub, "compare", CompareConfig, run_compare_cmd,
        help="paired comparison of two runs on the same rows (A - B, with test)",
        description="Row by row, run A minus run B per task x length and per length over all "
                    "tasks, on the\nrows both runs answered: the difference, its 95 % "
                    "interval (paired bootstrap) and a\npaired test (McNemar's exact test "
                    "where rows are 0/1, else a paired bootstrap). Runs on\ndifferent configs "
                    "or builds (content hashes) are refused; rows answered in one run only\n"
                    "are named.\n\n"
                    "A run is a results folder (or its scores.json), or predictions in any "
                    "form `ruler score`\nreads (a JSONL/Parquet file, lm-eval output, an "
                    "Inspect log): those are scored against --data\nhere, as `ruler score` "
                    "would, without writing anything.",
        formatter_class=argparse.RawDescriptionHelpFormatter)


# --- handlers -------------------------------------------------------------------------------

def eval_config(args: argparse.Namespace) -> EvalConfig:
    """`ruler eval`'s flags as the run's configuration."""
    values = flag_values(EvalConfig, args)
    return EvalConfig(**values, backend_options=backend_options(args))


def backend_options(args: argparse.Namespace) -> BackendOptions:
    """The chosen backend's options from `ruler eval`'s flags (checked by their type)."""
    return get_backend(args.backend).options_from(args, args.model)


def run_eval_cmd(cfg: EvalConfig) -> int:
    from ruler.eval.runner import run_eval

    out = cfg.out
    outcome = run_eval(cfg)
    for note in outcome.notes:
        print(note)
    if outcome.retried_skipped:
        print(f"{out}: {outcome.retried_skipped} row(s) skipped earlier for max_model_len "
              f"tried again under this run's limit")
    print(f"{out}: {outcome.generated} generated, {outcome.skipped} skipped, {outcome.errors} "
          f"failed, {outcome.done_before} done before; generation {outcome.generate_seconds:.1f}s"
          + (f"; {outcome.budget_exhausted} ran out of output budget while reasoning"
             if outcome.budget_exhausted else "")
          + (f"; {outcome.budget_clamped} row(s) ran with their output budget cut to "
             f"the context left (max_model_len {outcome.max_model_len})"
             if outcome.budget_clamped else "")
          + (f"; {outcome.redacted} answer(s) held the API key: saved with it replaced by "
             f"<redacted> (the record says where), scored as generated"
             if outcome.redacted else ""))
    for line in outcome.skip_reasons:
        print(f"  skipped {line}")
    if outcome.errors:
        print(f"  {outcome.errors} request(s) failed (see {out}/predictions.jsonl); re-run the "
              f"same command to retry them", file=sys.stderr)
    if cfg.report:
        _print_headline(out, cfg.plots)
    return 1 if outcome.errors else 0


def score_to_folder(cfg: ScoreConfig) -> "tuple[ScoresRecord, Path]":
    """Score the predictions and write scores.json (`ruler score` and `ruler.score`); returns
    the report and the folder written."""
    from ruler.eval.records.results_folder import SCORES_NAME
    from ruler.eval.scoring.score import (
        check_scores_owner,
        default_scores_folder,
        score_path,
        write_scores,
    )

    report = score_path(cfg.predictions, cfg.data, cfg.revision, cfg.tokenizer_config,
                        cfg.tasks or None, cfg.lengths or None, cfg.limit, cfg.metric)
    out = cfg.out or default_scores_folder(cfg.predictions)
    check_scores_owner(out / SCORES_NAME, report.predictions)
    write_scores(out / SCORES_NAME, report)
    return report, out


def run_score_cmd(cfg: ScoreConfig) -> int:
    from ruler.eval.records.results_folder import SCORES_NAME

    report, out = score_to_folder(cfg)
    for c in report.cells:
        score = "n/a" if c.score is None else f"{c.score:.2f}"
        print(f"{c.task:24s} {c.max_seq_length:>7d}  {score:>6s}  ({c.scored}/{c.rows} scored, "
              f"{c.nulls} null, {c.skipped} skipped, {c.errors} failed, {c.missing} missing)")
    for keys, what in ((report.missing, "dataset rows without a prediction"),
                       (report.unknown, "predictions that match no dataset row")):
        if keys:
            shown = ", ".join(keys[:_SHOWN]) + (f" ... (+{len(keys) - _SHOWN})"
                                                if len(keys) > _SHOWN else "")
            print(f"{len(keys)} {what}: {shown}", file=sys.stderr)
    print(f"wrote {out / SCORES_NAME} (full lists of missing/unknown keys inside)")
    _print_report(out, None, plots=cfg.plots)
    return 1 if cfg.strict and (not report.complete or report.unknown or report.unverified) \
        else 0


def run_report_cmd(cfg: ReportConfig) -> int:
    if len(cfg.results) > 1:
        return _several_report(cfg)
    results, = cfg.results
    _print_report(results, cfg.out, cfg.threshold, _dataset_files(cfg, results), cfg.plots,
                  cfg.depth_bins, cfg.min_depth_samples, list(cfg.reference),
                  list(cfg.reference_file), cfg.no_context)
    return 0


def _several_report(cfg: ReportConfig) -> int:
    """Several RESULTS: the benchmark's own table of several runs where it has one (its report
    hooks), else Table 3 for runs of several models (or --table), else replicates pooled."""
    from ruler.catalog.benchmarks import get_benchmark
    from ruler.eval.report.run import load_scores, scores_benchmark

    loaded = [load_scores(results) for results in cfg.results]
    for scores in loaded:
        hooks = get_benchmark(scores_benchmark(scores), scores.benchmark_package).hook("report")
        if hooks is not None and hooks.reports_several():
            return hooks.several(cfg, [(name, report) for name, _, report in _read_runs(cfg)])
    models = {scores.model for scores in loaded}
    if cfg.table or len(models) > 1:
        return _table3_report(cfg)
    if cfg.reference:
        raise RulerError("--reference with runs of one model pools replicates, which has no "
                         "published counterpart: add --table for Table 3 with published rows, "
                         "or report one run with --reference")
    return _pooled_report(cfg)


def _table3_report(cfg: ReportConfig) -> int:
    """`ruler report RUN RUN ... [--reference NAME]`: Table 3 (eval.report.table3)."""
    from ruler.eval.published_results import load_registry
    from ruler.eval.report.table3 import build_table, to_latex, to_markdown
    from ruler.kernel.atomic import write_json_atomic, write_text_atomic

    registry = load_registry(cfg.reference_file)
    published = [registry.find(name) for name in cfg.reference]
    runs = [(name, report) for name, _, report in _read_runs(cfg)]
    table = build_table(runs, published, registry)
    print(to_markdown(table), end="")
    if cfg.out:
        cfg.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(cfg.out / "table3.md", to_markdown(table))
        write_text_atomic(cfg.out / "table3.tex", to_latex(table))
        write_json_atomic(cfg.out / "table3.json", table.to_json())
        print(f"wrote {cfg.out}/table3.md, .tex, .json")
    return 0


def _read_runs(cfg: ReportConfig) -> list[tuple[str, ScoresRecord, Report]]:
    """Each RESULTS folder as (its name, its scores, its report), its scores checked against
    --data's files where given."""
    from ruler.eval.report.run import build_report, check_revision, load_scores, run_files

    runs = []
    for results in cfg.results:
        scores = load_scores(results)
        files = _dataset_files(cfg, results)
        if files is not None:
            check_revision(scores, files, str(results))
        runs.append((str(results), scores, build_report(
            scores, cfg.threshold, cfg.depth_bins, cfg.min_depth_samples,
            asked=run_files(results, scores))))
    return runs


def _dataset_files(cfg: ReportConfig, results: Path) -> dict | None:
    """The content hashes of --data's files of the run's config (None without --data)."""
    if not cfg.data:
        return None
    from ruler.eval.records.dataset import open_dataset
    from ruler.eval.report.run import load_scores

    scores = load_scores(results)
    ds = open_dataset(cfg.data, cfg.revision, scores.config)
    return {f.key: f.content_sha256 for f in ds.files(scores.config)}


def _pooled_report(cfg: ReportConfig) -> int:
    """`ruler report RUN RUN ...`: runs on replicates, pooled (eval.report.replicates)."""
    from ruler.eval.report.replicates import pool_reports, to_csv, to_json, to_markdown
    from ruler.kernel.atomic import write_json_atomic, write_text_atomic

    pooled = pool_reports(_read_runs(cfg))
    print(to_markdown(pooled), end="")
    if cfg.out:
        cfg.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(cfg.out / "report_replicates.md", to_markdown(pooled))
        write_text_atomic(cfg.out / "report_replicates.csv", to_csv(pooled))
        write_json_atomic(cfg.out / "report_replicates.json", to_json(pooled))
        print(f"wrote {cfg.out}/report_replicates.md, .csv, .json")
    return 0


def run_compare_cmd(cfg: CompareConfig) -> int:
    from ruler.eval.report.compare import compare_runs, to_markdown, write_comparison

    if str(cfg.run_b).startswith(REFERENCE_PREFIX):
        return _compare_with_published(cfg)
    c = compare_runs(cfg.run_a, cfg.run_b, cfg.data, cfg.revision, cfg.tokenizer_config)
    print(to_markdown(c))
    if cfg.out:
        write_comparison(c, cfg.out, plots=cfg.plots)
        print(f"wrote {cfg.out}/compare.md, compare.json"
              + ("" if not cfg.plots else ", compare.png"))
    return 0


def _print_headline(results: Path, plots: bool = True) -> None:
    """Write the report into the results folder and print its headline (the full report has
    row counts, coverage and score by depth too: hundreds of lines for a full run)."""
    from ruler.eval.report.run import headline_markdown, write_report

    r = write_report(results, plots=plots)
    print(headline_markdown(r))
    print(r.status_line())
    print(f"full report: {results / 'report.md'} (rows, coverage, notes and score by depth; "
          f"also report.csv, report.json{' and the plots' if plots else ''})")


REFERENCE_PREFIX = "reference:"


def _compare_with_published(cfg: CompareConfig) -> int:
    """`ruler compare RUN reference:NAME`: the run beside a published result
    (eval.report.reference), as compare.md, compare.json and compare.png."""
    from ruler.eval.report.reference import comparisons, markdown, plot
    from ruler.eval.report.run import build_report, load_scores, run_files
    from ruler.kernel.atomic import write_json_atomic, write_text_atomic
    from ruler.kernel.markup import md_code, md_text

    name = str(cfg.run_b)[len(REFERENCE_PREFIX):]
    scores = load_scores(cfg.run_a)
    r = build_report(scores, asked=run_files(cfg.run_a, scores))
    c, = comparisons(r, [name], cfg.reference_file)
    text = "\n".join([f"# {md_text(r.title)}: {md_code(cfg.run_a)} "
                      f"({md_text(r.model or 'unknown model')}) beside published "
                      f"{md_code(c.entry.name)}", ""] + markdown(c)[2:])
    print(text)
    print(c.summary_line())
    if cfg.out:
        cfg.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(cfg.out / "compare.md", text + "\n")
        write_json_atomic(cfg.out / "compare.json", c.to_json())
        if cfg.plots:
            plot(c, cfg.out / "compare.png")
        print(f"wrote {cfg.out}/compare.md, compare.json"
              + ("" if not cfg.plots else ", compare.png"))
    return 0


def run_published_cmd(cfg: PublishedConfig) -> int:
    import json

    from ruler.eval.metrics.aggregate import format_length
    from ruler.eval.published_results import load_registry

    found = load_registry(cfg.reference_file).search(cfg.query)
    if cfg.as_json:
        print(json.dumps([e.to_json() for e in found], indent=1, ensure_ascii=False))
        return 0
    for e in found:
        lengths = ",".join(format_length(L) for L in e.lengths)
        print(f"{e.name}  {e.model}  [{lengths}{'; per task' if e.tasks else ''}]  "
              f"{e.source.cite()}")
    print(f"{len(found)} published result(s)")
    return 0


def _print_report(results: Path, out: Path | None, threshold: float = 85.6,
                  dataset_files: dict | None = None, plots: bool = True,
                  depth_bins: int | None = None, min_depth_samples: int = 5,
                  references: list[str] | None = None,
                  reference_files: list[Path] | None = None,
                  no_context: Path | None = None) -> None:
    from ruler.eval.report.run import to_markdown, write_report

    r = write_report(results, out, threshold, dataset_files, plots, depth_bins,
                     min_depth_samples, references or (), reference_files or (), no_context)
    print(to_markdown(r))
    print(r.status_line())
    for c in r.references:
        print(c.summary_line())
