"""`ruler eval`, `ruler score`, `ruler report`, `ruler compare`.

Only argparse wiring lives here; vLLM, torch and matplotlib are imported by the handlers'
callees when a command runs, so `ruler --help` stays fast.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ruler.builder.errors import RulerError
from ruler.eval.backends import add_backend_arguments, backend_names, get_backend
from ruler.eval.engine_env import VLLM_CPU_DEFAULTS

if TYPE_CHECKING:
    from ruler.eval.backends import BackendOptions
    from ruler.eval.runner import EvalConfig
    from ruler.eval.scores_record import ScoresRecord

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
                    "RULERv2 configs (<tokenizer>--v2, built with --benchmark v2): each row's "
                    "prompt is the\nchat template with a generation prompt (no answer prefix), "
                    "its length counts the prompt\nalone and 16384 tokens to generate come on "
                    "top (upstream's run, greedy). --mode reasoning\nscores the text after "
                    "the reasoning (chat, the default, scores the whole output, as\nNeMo-Skills "
                    "without ++parse_reasoning). Where max_model_len holds the prompt but not "
                    "the\nwhole budget, a row runs with the budget cut to the context left "
                    "(recorded per row as\noutput_budget, counted in the report); a prompt "
                    "that leaves no room is skipped.",
        epilog="One node, 8 GPUs: --backend vllm --data-parallel-size 8 (8 replicas), or "
               "--tensor-parallel-size 8\nfor a model that needs them all; a 70B model on 8 "
               "GPUs: --tensor-parallel-size 4 --data-parallel-size 2.\n" + _CPU_NOTE)
    p.add_argument("--model", required=True,
                   help="model folder or Hub id (vllm, hf); the served model name (openai)")
    p.add_argument("--data", required=True, help="build folder OUT, or a Hub dataset ORG/NAME")
    p.add_argument("--revision", default=None, help="Hub dataset revision (default: main)")
    p.add_argument("--tokenizer-config", default=None,
                   help="dataset config = the tokenizer the data was built for (e.g. llama-3.1), "
                        "or one of its variants (e.g. llama-3.1--depth10); default: the "
                        "dataset's only config")
    p.add_argument("--model-tokenizer", default=None,
                   help="tokenizer that renders prompts (default: --model; required for "
                        "openai when --model is not a folder; fake: the dataset config's own)")
    p.add_argument("--lengths", default=None, help="comma-separated lengths (default: all)")
    p.add_argument("--tasks", default=None, help="comma-separated tasks (default: all)")
    p.add_argument("--mode", choices=("chat", "base", "reasoning"), default=None,
                   help="prompt rendering (default: the mode the dataset was built with; "
                        "reasoning for configs built with --output-budget; RULERv2 configs "
                        "accept chat or reasoning)")
    p.add_argument("--chat-template-kwargs", type=_json_object, default=None, metavar="JSON",
                   help="extra chat template variables, e.g. '{\"enable_thinking\": true}' "
                        "(a variable that changes the prompt's length makes the counts differ "
                        "from the build's: see --allow-length-mismatch)")
    p.add_argument("--reasoning-end-marker", default="</think>", metavar="TEXT",
                   help="reasoning mode: the answer is the text after the first TEXT "
                        "(default: </think>)")
    p.add_argument("--reasoning-parser", default=None, metavar="NAME",
                   help="reasoning mode: split reasoning from answer with vLLM's reasoning "
                        "parser NAME (e.g. deepseek_r1, qwen3) instead of the end marker")
    add_backend_arguments(p)  # --backend, and a group of flags per backend (backends.registry)
    p.add_argument("--out", type=Path, default=None,
                   help="results folder (default: results/<model name>)")
    p.add_argument("--limit", type=int, default=None,
                   help="first N samples per task and length (a results folder run with "
                        "--limit N may be resumed with a larger one, or none, to add rows; a "
                        "smaller one is refused)")
    p.add_argument("--max-model-len", type=int, default=None,
                   help="context limit (prompt + generation); default: the model's / server's")
    p.add_argument("--render-workers", type=int, default=None,
                   help="processes that render prompts ahead of the engine (default: half the "
                        "cores, at most 4: ~1.5 M tokens/s; 0 renders in the main process)")
    p.add_argument("--allow-length-mismatch", action="store_true",
                   help="evaluate even if the model's tokenizer does not reproduce the "
                        "dataset's token counts")
    p.add_argument("--max-tokens", type=int, default=None, metavar="N",
                   help="cap every answer at N tokens (default: each row's own "
                        "tokens_to_generate, RULER's setting). For diagnosing a set-up only: "
                        "a cap below a task's budget cuts its answers, and the report's health "
                        "section flags it")
    p.add_argument("--no-report", action="store_true", help="skip report.md/csv/json/png")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=run_eval_cmd)


def _register_score(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "score", help="score a predictions file (from any framework) against the dataset",
        description="Score PREDICTIONS (JSONL or Parquet with columns tokenizer, task, "
                    "max_seq_length, index,\nprediction; optional status, reason) with RULER's "
                    "metrics. PREDICTIONS may also be\nlm-evaluation-harness output of `ruler "
                    "export lm-eval` tasks (a samples_*.jsonl file or\nthe --output_path "
                    "folder), an Inspect log of the ruler task (.eval, or a folder of "
                    "them), or NeMo-Skills\n`ns eval` output (output.jsonl, output-rs0.jsonl, "
                    "or an eval-results folder) of the\n`ruler` or `ruler2` benchmark made from "
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
    p.add_argument("--predictions", required=True, type=Path,
                   help="ruler's JSONL/Parquet, lm-eval samples file or output folder, an "
                        "Inspect log (file or folder), or NeMo-Skills output")
    p.add_argument("--data", required=True, help="build folder OUT, or a Hub dataset ORG/NAME")
    p.add_argument("--revision", default=None, help="Hub dataset revision")
    p.add_argument("--tokenizer-config", default=None,
                   help="score only this config's predictions (default: the dataset's only "
                        "config, else the one the predictions name)")
    p.add_argument("--tasks", default=None,
                   help="comma-separated tasks asked for (default: the run's, where "
                        "recorded, else all of the config's)")
    p.add_argument("--lengths", default=None,
                   help="comma-separated lengths asked for (default: the run's, where "
                        "recorded, else all of the config's)")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="only the first N rows of each task and length were asked for "
                        "(default: the run's own --limit where recorded, else every row)")
    p.add_argument("--out", type=Path, default=None,
                   help="folder for scores.json and the report (default: PREDICTIONS.scores/ "
                        "beside a file, or the PREDICTIONS folder itself)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when any row asked for is missing or failed, predictions "
                        "match no row, or scored rows are unverified (tied to this build by "
                        "neither data_sha256 nor input_sha256/input)")
    p.set_defaults(func=run_score_cmd)


def _register_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="Table-3 style report of a results folder (md, csv, json, png), or "
                       "of runs on replicates pooled",
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
                    "\n\n--reference NAME puts a published result (`ruler published` lists "
                    "them) beside one run:\nper length the published score, the run's with its "
                    "95 % interval, the difference, and\nwhether the published value lies in "
                    "the interval; effective lengths; every set-up\ndifference. The report "
                    "always ends with a set-up health section: answers cut at the\nbudget, "
                    "empty answers, reasoning out of budget, refusals, prompt-count mismatches, "
                    "rows\nskipped for the context limit, chat template and generation "
                    "settings, each with a fix.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", type=Path, nargs="+", metavar="RESULTS",
                   help="results folder (or its scores.json); several: runs on replicates, "
                        "pooled")
    p.add_argument("--out", type=Path, default=None,
                   help="output folder (default: RESULTS; several RESULTS: only printed "
                        "unless given)")
    p.add_argument("--threshold", type=float, default=85.6,
                   help="effective-length threshold (default 85.6: Llama-2-7B at 4K)")
    p.add_argument("--data", default=None,
                   help="check the scores were made from this dataset (build folder or Hub id)")
    p.add_argument("--revision", default=None)
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--depth-bins", type=int, default=None, metavar="N",
                   help="depth bins of the score-by-depth tables, 1..100 (default: the "
                        "dataset config's own for a --depths build, else 10)")
    p.add_argument("--min-depth-samples", type=int, default=5, metavar="K",
                   help="mark depth cells scored on fewer than K items (default 5)")
    _add_reference_arguments(p)
    p.add_argument("--no-context", type=Path, default=None, metavar="BASELINE",
                   help="results of the same model on the config's --no-context variant: its "
                        "scores beside the run's in the health section (what the model "
                        "answers without the haystack)")
    p.add_argument("--table", action="store_true",
                   help="several RESULTS: Table 3 even when they are runs of one model (default: "
                        "runs of one model on replicates are pooled)")
    p.set_defaults(func=run_report_cmd)


def _add_reference_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reference", action="append", default=[], metavar="NAME",
                   help="a published result to put beside the run (repeatable); NAME as "
                        "`ruler published` lists it, or its last part, or a model id")
    p.add_argument("--reference-file", action="append", default=[], type=Path, metavar="FILE",
                   help="your own published results (JSON, format ruler-published/1; see "
                        "ruler/eval/published/schema.json), added to the registry")


def _register_published(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "published", help="list the published RULER results `--reference` can name",
        description="The registry of published RULER results (ruler/eval/published/*.json, "
                    "each with its source:\nURL or repository, path and commit, and date), "
                    "and your own files (--reference-file).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("query", nargs="?", default=None,
                   help="only entries whose name, model or model id contains this")
    p.add_argument("--reference-file", action="append", default=[], type=Path, metavar="FILE",
                   help="your own published results (JSON, format ruler-published/1)")
    p.add_argument("--json", action="store_true", help="print the entries as JSON")
    p.set_defaults(func=run_published_cmd)


def _register_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare", help="paired comparison of two runs on the same rows (A - B, with test)",
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
    p.add_argument("run_a", type=Path, metavar="RUN_A",
                   help="results folder (or its scores.json), or predictions as `ruler score` "
                        "reads them (with --data)")
    p.add_argument("run_b", type=Path, metavar="RUN_B",
                   help="results folder (or its scores.json), predictions (with --data), or "
                        "reference:NAME, a published result (`ruler published`): the run beside "
                        "it, per length and task")
    p.add_argument("--reference-file", action="append", default=[], type=Path, metavar="FILE",
                   help="your own published results (JSON), for reference:NAME")
    p.add_argument("--data", default=None,
                   help="the dataset (build folder or Hub id) to score predictions against; "
                        "scores are checked to be of its rows")
    p.add_argument("--revision", default=None, help="Hub dataset revision")
    p.add_argument("--tokenizer-config", default=None,
                   help="the config to score predictions on (default: the dataset's only "
                        "one, else the one the predictions name)")
    p.add_argument("--out", type=Path, default=None,
                   help="also write compare.md, compare.json and compare.png here")
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=run_compare_cmd)


def _json_object(text: str) -> dict:
    import json

    try:
        value = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object, e.g. '{\"enable_thinking\": "
                                         "true}'")
    return value


# --- handlers -------------------------------------------------------------------------------

def eval_config(args: argparse.Namespace) -> "EvalConfig":
    """`ruler eval`'s flags as the run's configuration (the CLI and `ruler.evaluate`)."""
    from ruler.builder.cli_build import parse_lengths, parse_tasks
    from ruler.eval.runner import EvalConfig

    out = args.out or Path("results") / re.sub(r"[^\w.-]+", "--", Path(args.model).name)
    opts = backend_options(args)
    return EvalConfig(
        model=args.model, data=args.data, tokenizer_config=args.tokenizer_config, out=out,
        backend=args.backend, tasks=parse_tasks(args.tasks) if args.tasks else (),
        lengths=parse_lengths(args.lengths) if args.lengths else (), mode=args.mode,
        revision=args.revision, model_tokenizer=args.model_tokenizer, limit=args.limit,
        allow_length_mismatch=args.allow_length_mismatch, progress=not args.no_progress,
        backend_options=opts, chat_template_kwargs=args.chat_template_kwargs,
        reasoning_end_marker=args.reasoning_end_marker,
        reasoning_parser=args.reasoning_parser, render_workers=args.render_workers,
        max_tokens=args.max_tokens)


def run_eval_cmd(args: argparse.Namespace) -> int:
    from ruler.eval.runner import run_eval

    cfg = eval_config(args)
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
          + (f"; {outcome.budget_clamped} RULERv2 row(s) ran with their output budget cut to "
             f"the context left (max_model_len {outcome.max_model_len})"
             if outcome.budget_clamped else ""))
    for line in outcome.skip_reasons:
        print(f"  skipped {line}")
    if outcome.errors:
        print(f"  {outcome.errors} request(s) failed (see {out}/predictions.jsonl); re-run the "
              f"same command to retry them", file=sys.stderr)
    if not args.no_report:
        _print_headline(out)
    return 1 if outcome.errors else 0


def backend_options(args: argparse.Namespace) -> BackendOptions:
    """The chosen backend's options from `ruler eval`'s flags (checked by the backend), after
    the checks of the flags every run shares."""
    if args.limit is not None and args.limit < 1:
        raise RulerError(f"--limit must be >= 1, got {args.limit}")
    if args.render_workers is not None and args.render_workers < 0:
        raise RulerError(f"--render-workers must be >= 0, got {args.render_workers}")
    from ruler.builder.pipeline.config import MAX_LOCAL_WORKERS

    if args.render_workers is not None and args.render_workers > MAX_LOCAL_WORKERS:
        raise RulerError(f"--render-workers: at most {MAX_LOCAL_WORKERS} processes on this "
                         f"machine (each holds a tokenizer); got {args.render_workers:,}")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise RulerError(f"--max-tokens must be >= 1, got {args.max_tokens}")
    return get_backend(args.backend).options(args)


def score_to_folder(args: argparse.Namespace) -> "tuple[ScoresRecord, Path]":
    """Score `ruler score`'s predictions and write scores.json (the CLI and `ruler.score`);
    returns the report and the folder written."""
    from ruler.builder.cli_build import parse_lengths, parse_tasks
    from ruler.eval.results_folder import SCORES_NAME
    from ruler.eval.score import (
        check_scores_owner,
        default_scores_folder,
        score_path,
        write_scores,
    )

    if args.limit is not None and args.limit < 1:
        raise RulerError(f"--limit must be >= 1, got {args.limit}")
    tasks = parse_tasks(args.tasks) if args.tasks else None
    lengths = parse_lengths(args.lengths) if args.lengths else None
    report = score_path(args.predictions, args.data, args.revision, args.tokenizer_config,
                        tasks, lengths, args.limit)
    out = args.out or default_scores_folder(args.predictions)
    check_scores_owner(out / SCORES_NAME, report.predictions)
    write_scores(out / SCORES_NAME, report)
    return report, out


def run_score_cmd(args: argparse.Namespace) -> int:
    from ruler.eval.results_folder import SCORES_NAME

    report, out = score_to_folder(args)
    for c in report.cells:
        score = "n/a" if c.score is None else f"{c.score:.2f}"
        print(f"{c.task:24s} {c.max_seq_length:>7d}  {score:>6s}  ({c.scored}/{c.rows} scored, "
              f"{c.nulls} null, {c.skipped} skipped, {c.errors} failed, {c.missing} missing)")
    for name, keys in (("missing", report.missing), ("unknown", report.unknown)):
        if keys:
            shown = ", ".join(keys[:_SHOWN]) + (f" ... (+{len(keys) - _SHOWN})"
                                                if len(keys) > _SHOWN else "")
            what = ("dataset rows without a prediction" if name == "missing"
                    else "predictions that match no dataset row")
            print(f"{len(keys)} {what}: {shown}", file=sys.stderr)
    print(f"wrote {out / SCORES_NAME} (full lists of missing/unknown keys inside)")
    _print_report(out, None)
    return 1 if args.strict and (not report.complete or report.unknown or report.unverified) \
        else 0


def run_report_cmd(args: argparse.Namespace) -> int:
    from ruler.eval.depth import MAX_REPORT_DEPTH_BINS

    if args.depth_bins is not None and not 1 <= args.depth_bins <= MAX_REPORT_DEPTH_BINS:
        raise RulerError(f"--depth-bins must be from 1 to {MAX_REPORT_DEPTH_BINS} (a bin per "
                         f"percent of the context at most), got {args.depth_bins:,}")
    if args.min_depth_samples < 0:
        raise RulerError(f"--min-depth-samples must be >= 0, got {args.min_depth_samples}")
    if len(args.results) > 1:
        return _several_report(args)
    if args.table:
        raise RulerError("--table makes one table of several RESULTS: give two or more")
    results, = args.results
    _print_report(results, args.out, args.threshold, _dataset_files(args, results),
                  not args.no_plots, args.depth_bins, args.min_depth_samples,
                  args.reference, args.reference_file, args.no_context)
    return 0


def _several_report(args: argparse.Namespace) -> int:
    """Several RESULTS: Table 3 for runs of several models (or --table), else replicates
    pooled."""
    from ruler.eval.report import load_scores

    models = {load_scores(results).model for results in args.results}
    if args.table or len(models) > 1:
        return _table3_report(args)
    if args.reference:
        raise RulerError("--reference with runs of one model pools replicates, which has no "
                         "published counterpart: add --table for Table 3 with published rows, "
                         "or report one run with --reference")
    return _pooled_report(args)


def _table3_report(args: argparse.Namespace) -> int:
    """`ruler report RUN RUN ... [--reference NAME]`: Table 3 (eval.report_table3)."""
    from ruler.builder.atomic import write_json_atomic, write_text_atomic
    from ruler.eval.published_results import load_registry
    from ruler.eval.report import build_report, check_revision, load_scores, run_files
    from ruler.eval.report_table3 import build_table, to_latex, to_markdown

    registry = load_registry(args.reference_file)
    published = [registry.find(name) for name in args.reference]
    runs = []
    for results in args.results:
        scores = load_scores(results)
        files = _dataset_files(args, results)
        if files is not None:
            check_revision(scores, files, str(results))
        runs.append((str(results), build_report(
            scores, args.threshold, args.depth_bins, args.min_depth_samples,
            asked=run_files(results, scores))))
    table = build_table(runs, published, registry)
    print(to_markdown(table), end="")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(args.out / "table3.md", to_markdown(table))
        write_text_atomic(args.out / "table3.tex", to_latex(table))
        write_json_atomic(args.out / "table3.json", table.to_json())
        print(f"wrote {args.out}/table3.md, .tex, .json")
    return 0


def _dataset_files(args: argparse.Namespace, results: Path) -> dict | None:
    """The content hashes of --data's files of the run's config (None without --data)."""
    if not args.data:
        return None
    from ruler.eval.data import open_dataset
    from ruler.eval.report import load_scores

    scores = load_scores(results)
    ds = open_dataset(args.data, args.revision, scores.config)
    return {f.key: f.content_sha256 for f in ds.files(scores.config)}


def _pooled_report(args: argparse.Namespace) -> int:
    """`ruler report RUN RUN ...`: runs on replicates, pooled (eval.report_replicates)."""
    from ruler.builder.atomic import write_json_atomic, write_text_atomic
    from ruler.eval.report import build_report, check_revision, load_scores, run_files
    from ruler.eval.report_replicates import pool_reports, to_csv, to_json, to_markdown

    runs = []
    for results in args.results:
        scores = load_scores(results)
        files = _dataset_files(args, results)
        if files is not None:
            check_revision(scores, files, str(results))
        runs.append((str(results), scores, build_report(
            scores, args.threshold, args.depth_bins, args.min_depth_samples,
            asked=run_files(results, scores))))
    pooled = pool_reports(runs)
    print(to_markdown(pooled), end="")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(args.out / "report_replicates.md", to_markdown(pooled))
        write_text_atomic(args.out / "report_replicates.csv", to_csv(pooled))
        write_json_atomic(args.out / "report_replicates.json", to_json(pooled))
        print(f"wrote {args.out}/report_replicates.md, .csv, .json")
    return 0


def run_compare_cmd(args: argparse.Namespace) -> int:
    from ruler.eval.compare import compare_runs, to_markdown, write_comparison

    if str(args.run_b).startswith(REFERENCE_PREFIX):
        return _compare_with_published(args)
    c = compare_runs(args.run_a, args.run_b, args.data, args.revision, args.tokenizer_config)
    print(to_markdown(c))
    if args.out:
        write_comparison(c, args.out, plots=not args.no_plots)
        print(f"wrote {args.out}/compare.md, compare.json"
              + ("" if args.no_plots else ", compare.png"))
    return 0


def _print_headline(results: Path) -> None:
    """Write the report into the results folder and print its headline (the full report has
    row counts, coverage and score by depth too: hundreds of lines for a full run)."""
    from ruler.eval.report import headline_markdown, write_report

    r = write_report(results)
    print(headline_markdown(r))
    print(r.status_line())
    print(f"full report: {results / 'report.md'} (rows, coverage, notes and score by depth; "
          f"also report.csv, report.json and the plots)")


REFERENCE_PREFIX = "reference:"


def _compare_with_published(args: argparse.Namespace) -> int:
    """`ruler compare RUN reference:NAME`: the run beside a published result
    (eval.report_reference), as compare.md, compare.json and compare.png."""
    from ruler.builder.atomic import write_json_atomic, write_text_atomic
    from ruler.eval.report import build_report, load_scores, run_files
    from ruler.eval.report_reference import comparisons, markdown, plot

    name = str(args.run_b)[len(REFERENCE_PREFIX):]
    scores = load_scores(args.run_a)
    r = build_report(scores, asked=run_files(args.run_a, scores))
    c, = comparisons(r, [name], args.reference_file)
    text = "\n".join([f"# RULER: `{args.run_a}` ({r.model or 'unknown model'}) beside "
                      f"published `{c.entry.name}`", ""] + markdown(c)[2:])
    print(text)
    print(c.summary_line())
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(args.out / "compare.md", text + "\n")
        write_json_atomic(args.out / "compare.json", c.to_json())
        if not args.no_plots:
            plot(c, args.out / "compare.png")
        print(f"wrote {args.out}/compare.md, compare.json"
              + ("" if args.no_plots else ", compare.png"))
    return 0


def run_published_cmd(args: argparse.Namespace) -> int:
    import json

    from ruler.eval.aggregate import format_length
    from ruler.eval.published_results import load_registry

    found = load_registry(args.reference_file).search(args.query)
    if args.json:
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
    from ruler.eval.report import to_markdown, write_report

    r = write_report(results, out, threshold, dataset_files, plots, depth_bins,
                     min_depth_samples, references or (), reference_files or (), no_context)
    print(to_markdown(r))
    print(r.status_line())
    for c in r.references:
        print(c.summary_line())
