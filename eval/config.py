"""What `ruler eval`, `score`, `report`, `compare` and `published` are asked to do: one frozen
dataclass each, whose fields declare their flags (`ruler.kernel.flags`) and which check
themselves on creation, so that the command line, `ruler.evaluate` / `ruler.score` and code
calling the runner directly are held to the same rules."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, fields, replace
from functools import partial
from pathlib import Path
from typing import Any, Mapping

from ruler.builder.pipeline.config import MAX_LOCAL_WORKERS
from ruler.builder.selection import lengths_value, tasks_value
from ruler.catalog.tokenizer import PROMPT_MODES
from ruler.eval.backends import (
    DEFAULT_BACKEND,
    BackendOptions,
    backend_help,
    backend_names,
    get_backend,
)
from ruler.eval.backends.base import options_as
from ruler.eval.metrics.depth import MAX_REPORT_DEPTH_BINS
from ruler.eval.metrics.specs import METRIC_SPECS
from ruler.eval.reasoning import DEFAULT_END_MARKER
from ruler.kernel.errors import RulerError
from ruler.kernel.file_names import safe_name
from ruler.kernel.flags import (
    NEGATED,
    POSITIONAL,
    REPEATED,
    SWITCH,
    check_flags,
    flag_of,
    option,
)


def _json_object(text: str) -> dict[str, Any]:
    """`--chat-template-kwargs`'s reader: a JSON object."""
    try:
        value = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object, e.g. '{\"enable_thinking\": "
                                         "true}'")
    return value


def default_results_folder(model: str) -> Path:
    """`ruler eval`'s results folder when --out is not given: results/<model name>, a folder
    inside results/ whatever the model string is (`..`, `.`, a path, a Hub id, a newline)."""
    return Path("results") / safe_name(model, fallback="model")


#: `EvalConfig.backend_options` when none are given: the chosen backend's own defaults.
BACKEND_DEFAULTS = BackendOptions(model="")

_DATA_HELP = "build folder OUT, or a Hub dataset ORG/NAME"


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation run (`ruler eval`, `ruler.evaluate`, `ruler.eval.runner.run_eval`)."""

    model: str = option(
        "--model", required=True,
        help="model folder or Hub id (vllm, hf); the served model name (openai)")
    data: str = option("--data", required=True, help=_DATA_HELP)
    revision: str | None = option("--revision", default=None,
                                  help="Hub dataset revision (default: main)")
    tokenizer_config: str | None = option(
        "--tokenizer-config", default=None,
        help="dataset config = the tokenizer the data was built for (e.g. llama-3.1), or one of "
             "its variants (e.g. llama-3.1--depth10); default: the dataset's only config")
    model_tokenizer: str | None = option(  # default: the model folder
        "--model-tokenizer", default=None,
        help="tokenizer that renders prompts (default: --model; required for openai when "
             "--model is not a folder; fake: the dataset config's own)")
    lengths: tuple[int, ...] = option("--lengths", default=(), parse=lengths_value,
                                      help="comma-separated lengths (default: all)")
    tasks: tuple[str, ...] = option("--tasks", default=(), parse=tasks_value,
                                    help="comma-separated tasks (default: all)")
    mode: str | None = option(
        "--mode", default=None, choices=PROMPT_MODES,
        help="prompt rendering (default: the mode the dataset was built with; reasoning for "
             "configs built with --output-budget; configs whose length counts the prompt alone "
             "accept chat or reasoning)")
    chat_template_kwargs: Mapping[str, Any] | None = option(  # extra chat template variables
        "--chat-template-kwargs", default=None, type=_json_object, metavar="JSON",
        help="extra chat template variables, e.g. '{\"enable_thinking\": true}' (a variable "
             "that changes the prompt's length makes the counts differ from the build's: see "
             "--allow-length-mismatch)")
    reasoning_end_marker: str = option(
        "--reasoning-end-marker", default=DEFAULT_END_MARKER, metavar="TEXT",
        help="reasoning mode: the answer is the text after the first TEXT (default: </think>)")
    reasoning_parser: str | None = option(  # vLLM's reasoning parser of this name, if given
        "--reasoning-parser", default=None, metavar="NAME",
        help="reasoning mode: split reasoning from answer with vLLM's reasoning parser NAME "
             "(e.g. deepseek_r1, qwen3) instead of the end marker")
    backend: str = option("--backend", default=DEFAULT_BACKEND, choices=backend_names,
                          help=backend_help)
    # Not given: results/<model name>, settled on creation (so always a Path after it: typed
    # as that, its None default is the one value the annotation does not admit)
    out: Path = option("--out", default=None, type=Path,  # type: ignore[assignment]
                       help="results folder (default: results/<model name>)")
    limit: int | None = option(  # first N samples per (task, L)
        "--limit", default=None, type=int, minimum=1,
        help="first N samples per task and length (a results folder run with --limit N may be "
             "resumed with a larger one, or none, to add rows; a smaller one is refused)")
    render_workers: int | None = option(  # processes rendering prompts (0: in this process)
        "--render-workers", default=None, type=int, minimum=0,
        help="processes that render prompts ahead of the engine (default: half the cores, at "
             "most 4: ~1.5 M tokens/s; 0 renders in the main process)")
    allow_length_mismatch: bool = option(
        "--allow-length-mismatch", kind=SWITCH, default=False,
        help="evaluate even if the model's tokenizer does not reproduce the dataset's token "
             "counts")
    max_tokens: int | None = option(
        "--max-tokens", default=None, type=int, minimum=1, metavar="N",
        help="cap every answer at N tokens (default: each row's own tokens_to_generate, its "
             "benchmark's setting). For diagnosing a set-up only: a cap below a task's "
             "budget cuts its answers, and the report's health section flags it")
    # Whether `ruler eval` and `ruler.evaluate` write report.md/csv/json/png after the run
    # (run_eval itself writes predictions and scores.json only).
    report: bool = option("--no-report", kind=NEGATED, default=True,
                          help="skip report.md/csv/json/png")
    plots: bool = option("--no-plots", kind=NEGATED, default=True,
                         help="write the report without its figures (the PNGs)")
    progress: bool = option("--no-progress", kind=NEGATED, default=True,
                            help="no progress bars")
    # The chosen backend's options: its own type (VLLMOptions, OpenAIOptions, ...), settled on
    # creation from what is given (a plain BackendOptions takes that type's defaults for the
    # rest) or, by default, that type's defaults for `model`.
    backend_options: BackendOptions = BACKEND_DEFAULTS
    render_start_method: str | None = None  # fork | spawn (default: fork where available)

    def __post_init__(self) -> None:
        spec = get_backend(self.backend)  # an unknown one: the registry's line, with the closest
        check_flags(self)
        if self.render_workers is not None and self.render_workers > MAX_LOCAL_WORKERS:
            raise RulerError(f"--render-workers: at most {MAX_LOCAL_WORKERS} processes on this "
                             f"machine (each holds a tokenizer); got {self.render_workers:,}")
        if spec.serves_model_by_name and not self.model_tokenizer \
                and not Path(self.model).exists():
            raise RulerError(f"--backend {self.backend} renders prompts locally: pass "
                             f"--model-tokenizer (the served model's tokenizer folder or "
                             f"registry name)")
        settle = partial(object.__setattr__, self)  # a frozen dataclass settles its defaults
        settle("tasks", tuple(self.tasks))
        settle("lengths", tuple(self.lengths))
        if self.out is None:
            settle("out", default_results_folder(self.model))
        settle("backend_options", self._settled_options(spec.options_type))

    def _settled_options(self, kind: type[BackendOptions]) -> BackendOptions:
        """The backend's options as its own type, with the run's values where they share a
        field (`model`; the fake backend's `data` and `revision`)."""
        given = self.backend_options
        if given is BACKEND_DEFAULTS or given is None:
            given = kind(model=self.model)
        elif type(given) is not BackendOptions and not isinstance(given, kind):
            raise RulerError(f"backend_options are {type(given).__name__}, not the "
                             f"{kind.__name__} of --backend {self.backend}")
        opts = options_as(given, kind)
        if opts.model != self.model:
            raise RulerError(f"backend_options are for model {opts.model!r}, the run's is "
                             f"{self.model!r}")
        run = {f.name for f in fields(self)}
        shared = {f.name: getattr(self, f.name) for f in fields(kind) if f.name in run
                  and flag_of(f) is None and getattr(opts, f.name) is None}
        return replace(opts, **shared) if shared else opts


@dataclass(frozen=True)
class ScoreConfig:
    """What `ruler score` (and `ruler.score`) scores, against which dataset, and what it asks
    for."""

    predictions: Path = option(
        "--predictions", required=True, type=Path,
        help="ruler's JSONL/Parquet, lm-eval samples file or output folder, an Inspect log "
             "(file or folder), or NeMo-Skills output")
    data: str = option("--data", required=True, help=_DATA_HELP)
    revision: str | None = option("--revision", default=None, help="Hub dataset revision")
    tokenizer_config: str | None = option(
        "--tokenizer-config", default=None,
        help="score only this config's predictions (default: the dataset's only config, else "
             "the one the predictions name)")
    tasks: tuple[str, ...] = option(  # (): the run's, else all
        "--tasks", default=(), parse=tasks_value,
        help="comma-separated tasks asked for (default: the run's, where recorded, else all of "
             "the config's)")
    lengths: tuple[int, ...] = option(  # (): the run's, else all
        "--lengths", default=(), parse=lengths_value,
        help="comma-separated lengths asked for (default: the run's, where recorded, else all "
             "of the config's)")
    limit: int | None = option(
        "--limit", default=None, type=int, minimum=1, metavar="N",
        help="only the first N rows of each task and length were asked for (default: the run's "
             "own --limit where recorded, else every row)")
    out: Path | None = option(
        "--out", default=None, type=Path,
        help="folder for scores.json and the report (default: PREDICTIONS.scores/ beside a "
             "file, or the PREDICTIONS folder itself)")
    # `ruler score`'s report only (`ruler.score` writes scores.json alone)
    plots: bool = option("--no-plots", kind=NEGATED, default=True,
                         help="write the report without its figures (the PNGs): report.md, "
                              ".csv and .json only")
    metric: str | None = option(
        "--metric", default=None, metavar="NAME",
        help=lambda: "score with NAME instead of the rows' own metric, where it may replace it "
                     "(" + "; ".join(f"{n} for rows of metric {s.replaces}"
                                     for n, s in METRIC_SPECS.items() if s.replaces)
                     + "); scores.json and the report say which ran")
    # `ruler score`'s exit status only (`ruler.score` returns the report, which says it all)
    strict: bool = option(
        "--strict", kind=SWITCH, default=False,
        help="exit 1 when any row asked for is missing or failed, predictions match no row, or "
             "scored rows are unverified (tied to this build by neither data_sha256 nor "
             "input_sha256/input)")

    def __post_init__(self) -> None:
        check_flags(self)
        if self.metric is not None and self.metric not in METRIC_SPECS:
            raise RulerError(f"--metric {self.metric}: unknown metric; known: "
                             f"{', '.join(METRIC_SPECS)}")


def _reference_files(help: str) -> Any:
    return option("--reference-file", kind=REPEATED, default=(), type=Path, metavar="FILE",
                  help=help)


@dataclass(frozen=True)
class ReportConfig:
    """What `ruler report` reports: one run, runs on replicates pooled, or Table 3."""

    results: tuple[Path, ...] = option(
        kind=POSITIONAL, nargs="+", type=Path, metavar="RESULTS",
        help="results folder (or its scores.json); several: runs on replicates, pooled")
    out: Path | None = option(
        "--out", default=None, type=Path,
        help="output folder (default: RESULTS; several RESULTS: only printed unless given)")
    threshold: float = option("--threshold", default=85.6, type=float,
                              help="effective-length threshold (default 85.6: Llama-2-7B at 4K)")
    data: str | None = option(
        "--data", default=None,
        help="check the scores were made from this dataset (build folder or Hub id)")
    revision: str | None = option("--revision", default=None)
    plots: bool = option("--no-plots", kind=NEGATED, default=True)
    depth_bins: int | None = option(
        "--depth-bins", default=None, type=int, metavar="N",
        help="depth bins of the score-by-depth tables, 1..100 (default: the dataset config's "
             "own for a --depths build, else 10)")
    min_depth_samples: int = option(
        "--min-depth-samples", default=5, type=int, minimum=0, metavar="K",
        help="mark depth cells scored on fewer than K items (default 5)")
    reference: tuple[str, ...] = option(
        "--reference", kind=REPEATED, default=(), metavar="NAME",
        help="a published result to put beside the run (repeatable); NAME as `ruler published` "
             "lists it, or its last part, or a model id")
    reference_file: tuple[Path, ...] = _reference_files(
        "your own published results (JSON, format ruler-published/1; see "
        "ruler/eval/published/schema.json), added to the registry")
    no_context: Path | None = option(
        "--no-context", default=None, type=Path, metavar="BASELINE",
        help="results of the same model on the config's --no-context variant: its scores beside "
             "the run's in the health section (what the model answers without the haystack), "
             "and the wrong QA rows whose answer equals it in the failure-mode section "
             "(no_context_coincidence)")
    table: bool = option(
        "--table", kind=SWITCH, default=False,
        help="several RESULTS: Table 3 even when they are runs of one model (default: runs of "
             "one model on replicates are pooled)")

    def __post_init__(self) -> None:
        if self.depth_bins is not None and not 1 <= self.depth_bins <= MAX_REPORT_DEPTH_BINS:
            raise RulerError(f"--depth-bins must be from 1 to {MAX_REPORT_DEPTH_BINS} (a bin "
                             f"per percent of the context at most), got {self.depth_bins:,}")
        check_flags(self)
        if self.table and len(self.results) < 2:
            raise RulerError("--table makes one table of several RESULTS: give two or more")


@dataclass(frozen=True)
class CompareConfig:
    """What `ruler compare` pairs: two runs (or predictions), or a run and a published
    result."""

    run_a: Path = option(
        kind=POSITIONAL, type=Path, metavar="RUN_A",
        help="results folder (or its scores.json), or predictions as `ruler score` reads them "
             "(with --data)")
    run_b: Path = option(
        kind=POSITIONAL, type=Path, metavar="RUN_B",
        help="results folder (or its scores.json), predictions (with --data), or "
             "reference:NAME, a published result (`ruler published`): the run beside it, per "
             "length and task")
    reference_file: tuple[Path, ...] = _reference_files(
        "your own published results (JSON), for reference:NAME")
    data: str | None = option(
        "--data", default=None,
        help="the dataset (build folder or Hub id) to score predictions against; scores are "
             "checked to be of its rows")
    revision: str | None = option("--revision", default=None, help="Hub dataset revision")
    tokenizer_config: str | None = option(
        "--tokenizer-config", default=None,
        help="the config to score predictions on (default: the dataset's only one, else the "
             "one the predictions name)")
    out: Path | None = option("--out", default=None, type=Path,
                              help="also write compare.md, compare.json and compare.png here")
    plots: bool = option("--no-plots", kind=NEGATED, default=True)

    def __post_init__(self) -> None:
        check_flags(self)


@dataclass(frozen=True)
class PublishedConfig:
    """What `ruler published` lists."""

    query: str | None = option(
        kind=POSITIONAL, nargs="?", default=None,
        help="only entries whose name, model or model id contains this")
    reference_file: tuple[Path, ...] = _reference_files(
        "your own published results (JSON, format ruler-published/1)")
    as_json: bool = option("--json", kind=SWITCH, default=False,
                           help="print the entries as JSON")

    def __post_init__(self) -> None:
        check_flags(self)
