"""`ruler eval`: render every row exactly as the builder counted it, generate, save, score.

Order of work, so that bad input fails before the (slow) model loads:
1. open the dataset and select (config, tasks, lengths); check the results folder was made
   from the same dataset files (content hashes), model, prompt mode and template variables;
2. render the first pending row of each task with `Tokenizer.prompt_ids` — the function that
   defined the row's `length` — and check the model's tokenizer reproduces the count;
3. start rendering the rows in a pool (ruler.eval.stream), then load the backend meanwhile;
4. stream the rows to the backend; every row's count is checked as it passes; a row whose
   prompt + `tokens_to_generate` exceed `max_model_len` is recorded as skipped, never
   truncated (a row whose length counts the prompt alone runs with its budget clamped to the
   context left, `output_budget`, as NeMo-Skills generates up to the server's limit); each
   prediction is written the moment it arrives, so an interrupted run resumes where it stopped;
5. score the folder (scores.json) for `ruler report`.

Reasoning mode (docs/evaluating.md "Reasoning models"): the answer scored is the text after the
model's reasoning (ruler.eval.reasoning), the raw output stored beside it. Rows whose length
counts the prompt alone have no answer prefix: chat mode scores their whole output, as
NeMo-Skills does without `++parse_reasoning=True`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from ruler.catalog.length_rules import PROMPT_ONLY, counted_output
from ruler.catalog.tokenizer import PROMPT_MODES, Tokenizer
from ruler.catalog.variants import OUTPUT_BUDGET_MODE, reserved_output_budget
from ruler.eval.backends import (
    Backend,
    GenRequest,
    GenResult,
    backend_names,
    get_backend,
    make_backend,
    require_backend,
)
from ruler.eval.backends.engine_env import addon_error
from ruler.eval.config import EvalConfig
from ruler.eval.reasoning import (
    Extraction,
    extract_answer,
    opens_reasoning,
    vllm_parser_extractor,
)
from ruler.eval.records import redaction
from ruler.eval.records.dataset import Dataset, SplitFile, default_config, open_dataset
from ruler.eval.records.predictions import (
    LONG_FIELDS,
    Key,
    Prediction,
    PredictionWriter,
    format_key,
    index_records,
    iter_records,
)
from ruler.eval.records.results_folder import PREDICTIONS_NAME, RUN_NAME, hold_results_folder
from ruler.eval.records.results_schema import read_run
from ruler.eval.records.run_record import (
    DatasetRecord,
    MaxModelLen,
    PromptTemplate,
    ReasoningSetting,
    RunRecord,
)
from ruler.eval.records.serving import PromptCheck, prepare_backend, prompt_delivery, record_serving
from ruler.eval.records.skip_reasons import SkipReason
from ruler.eval.render import Renderer
from ruler.eval.scoring.score import score_folder
from ruler.eval.stream import RENDER_COLUMNS, PromptStream, RenderedRow, count_pending
from ruler.kernel.atomic import write_json_atomic
from ruler.kernel.errors import RulerError
from ruler.kernel.json_record import encode
from ruler.kernel.scrub import redact_known, scrub


@dataclass
class EvalOutcome:
    out: Path
    done_before: int = 0
    generated: int = 0
    skipped: int = 0
    errors: int = 0
    budget_exhausted: int = 0  # reasoning mode: rows whose thinking hit the output budget
    budget_clamped: int = 0  # rows run with less than their budget (the context left)
    # answers that held a known secret (the API key): stored with it cut out, scored as
    # generated (`ruler.eval.records.redaction`)
    redacted: int = 0
    generate_seconds: float = 0.0
    first_request_s: float | None = None  # from the start of run_eval to the first request
    max_model_len: int = 0
    skip_reasons: list[str] = field(default_factory=list)
    retried_skipped: int = 0  # rows skipped by an earlier run for max_model_len, tried again
    notes: list[str] = field(default_factory=list)  # said to the user (a changed backend)
    # rows answered on a prompt the server counted otherwise (--allow-prompt-mismatch)
    prompt_mismatches: int = 0
    # this run's answered rows whose prompt count the engine reported and was checked, or
    # was not (a server that reports none, or not as a number): see eval.records.serving
    prompt_check: PromptCheck = field(default_factory=PromptCheck)

    def to_json(self) -> dict[str, Any]:
        """run.json's `last_run`."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        check = self.prompt_check
        return {**encode(data), "out": str(self.out),
                "prompt_check": {"checked": check.checked, "unchecked": check.unchecked,
                                 "differ": check.differ, "answered_as": dict(check.answered_as)}}


def run_eval(cfg: EvalConfig, backend: Backend | None = None) -> EvalOutcome:
    started = time.perf_counter()
    ds = open_dataset(cfg.data, cfg.revision, cfg.tokenizer_config, cfg.tasks, cfg.lengths,
                      one_config=True)
    config = cfg.tokenizer_config or default_config(ds)
    cfg = replace(cfg, tokenizer_config=config)
    if cfg.model_tokenizer is None and not _runs_a_model(cfg.backend):
        cfg = replace(cfg, model_tokenizer=_dataset_tokenizer(ds, config))
    files = ds.files(config, cfg.tasks or None, cfg.lengths or None)
    if not files:
        raise RulerError(f"dataset {cfg.data} config {config!r} has no files")
    mode = _prompt_mode(ds, cfg, config, files)
    out = Path(cfg.out)
    with hold_results_folder(out):  # the second of two runs into one folder stops here
        return _run_locked(cfg, ds, files, mode, out, backend, started)


def _run_locked(cfg: EvalConfig, ds: Dataset, files: list[SplitFile], mode: str, out: Path,
                backend: Backend | None, started: float) -> EvalOutcome:
    run_info, old_run = _check_run_folder(out, ds, cfg, files, mode)
    state = _read_state(out, files)
    retried = _retryable_skips(ds, files, state.skipped, _expected_limit(cfg, old_run))
    done = state.answered | (set(state.skipped) - retried)
    pending = count_pending(files, done, cfg.limit)
    if pending and backend is None:
        require_backend(cfg.backend)  # one clear line before any slow work

    tok = _model_tokenizer(cfg)
    renderer = Renderer(tok, mode, cfg.chat_template_kwargs)
    extract = _extractor(cfg, renderer, tok) if mode == OUTPUT_BUDGET_MODE else None
    _preflight(ds, files, renderer, done, cfg)
    run_info = replace(run_info, prompt_template=_template_record(ds, cfg, tok, mode))
    _check_same_rendering(out, old_run, run_info.prompt_template)

    outcome = EvalOutcome(out, done_before=len(done), retried_skipped=len(retried))
    opts = cfg.backend_options
    stream = PromptStream(ds, files, renderer, done, cfg.limit, cfg.render_workers,
                          cfg.render_start_method,
                          keep_texts=getattr(backend, "wants_row_texts", False)
                          if backend is not None else opts.wants_row_texts)
    own_backend = backend is None
    try:
        if pending:
            stream.start()  # rendering runs while the model loads
            if backend is None:
                backend = make_backend(cfg.backend, opts)
            serving = prepare_backend(backend, renderer)  # e.g. a server's probe
            # Only now, with the engine up, does the folder become (or stay) this run's: a run
            # that fails before generating anything leaves no run.json to pin the folder.
            run_info, notes = _record_backend(run_info, old_run, cfg, backend, out)
            outcome.notes.extend(notes)
            run_info, notes = record_serving(run_info, old_run, serving)
            outcome.notes.extend(notes)
            run_info = _check_same_delivery(out, old_run, run_info, prompt_delivery(serving))
            write_json_atomic(out / RUN_NAME, run_info.to_json())
            skip_special = extract is None or not renderer.is_special_token(
                cfg.reasoning_end_marker)
            _generate(backend, stream, pending, out, outcome, cfg, extract, skip_special,
                      started)
            outcome.notes.extend(outcome.prompt_check.console_lines())
    finally:
        stream.close()
        if own_backend and backend is not None:
            backend.close()
    run_info = replace(run_info, last_run=outcome.to_json())
    write_json_atomic(out / RUN_NAME, run_info.to_json())

    score_folder(out, ds)
    return outcome


def _prompt_mode(ds: Dataset, cfg: EvalConfig, config: str, files: list[SplitFile]) -> str:
    build = ds.build(config)
    mode = cfg.mode or build.prompt_mode or "chat"
    if mode not in PROMPT_MODES:
        raise RulerError(f"--mode {mode!r}: choose one of {', '.join(PROMPT_MODES)}")
    # rows counting the prompt alone leave their budget on top: reasoning needs no variant
    budgeted = all(f.length_rule == PROMPT_ONLY for f in files)
    if mode == OUTPUT_BUDGET_MODE and not budgeted \
            and reserved_output_budget(build.variant) is None:
        raise RulerError(
            f"--mode reasoning needs rows fitted with a reserved output budget, and config "
            f"{config!r} was built without one: build the variant with `ruler "
            f"build --tokenizer ... --output-budget 16384` and evaluate its config "
            f"{config}--out16k")
    return mode


def _runs_a_model(backend: str) -> bool:
    """Whether the backend named `backend` has a model (and so a tokenizer) of its own; a
    backend outside the table (a test's instance) is taken to have one."""
    return backend not in backend_names() or get_backend(backend).runs_a_model


def _dataset_tokenizer(ds: Dataset, config: str) -> str:
    """The tokenizer the config was built with, as its manifest names it (a registry name, a
    folder, org/name@revision): a backend without a model renders prompts with it."""
    name = ds.build(config).tokenizer.name
    if not name:
        raise RulerError(f"the manifest names no tokenizer for config {config!r}: pass "
                         f"--model-tokenizer (a tokenizer folder or registry name)")
    return str(name)


def _model_tokenizer(cfg: EvalConfig) -> Tokenizer:
    from ruler.builder.tokenizer_registry import load_tokenizer

    spec = cfg.model_tokenizer or cfg.model
    try:
        return load_tokenizer(spec)
    except RulerError as e:  # transformers fails inside a broken torchvision even here
        raise (addon_error(e, f"loading the tokenizer of {spec}") or RulerError(
            f"cannot load the tokenizer that renders the prompts ({spec}): {e}. Pass "
            f"--model-tokenizer (a tokenizer folder, a registry name, or org/name@revision)")
        ) from None


def _extractor(cfg: EvalConfig, renderer: Renderer,
               tok: Tokenizer) -> Callable[[str, str], Extraction]:
    if cfg.reasoning_parser:
        hf = getattr(tok, "hf", None)
        if hf is None:
            raise RulerError(f"--reasoning-parser needs a Hugging Face tokenizer; "
                             f"{tok.name!r} is a {tok.identity.kind} tokenizer")
        return vllm_parser_extractor(cfg.reasoning_parser, hf, dict(renderer.template_kwargs))
    marker = cfg.reasoning_end_marker
    if not marker:
        raise RulerError("--reasoning-end-marker must not be empty")
    probe = _render_or_fail(lambda: renderer.prompt_text("x"), cfg)
    opened = bool(probe) and opens_reasoning(probe, marker)
    return lambda raw, finish: extract_answer(raw, finish, marker, opened)


def _template_record(ds: Dataset, cfg: EvalConfig, tok: Tokenizer,
                     mode: str) -> PromptTemplate:
    """The chat template that renders the prompts and the one the config was built with (their
    sha256; None where a tokenizer has none), for the report's health section."""
    used = getattr(tok.identity, "chat_template_sha256", None)
    built = ds.build(str(cfg.tokenizer_config)).tokenizer.chat_template_sha256
    return PromptTemplate(mode=mode, sha256=used, build_sha256=built, decoding="greedy",
                          tokenizer=tok.identity.fingerprint(),
                          tokenizer_name=cfg.model_tokenizer or cfg.model)


def _check_same_rendering(out: Path, old: RunRecord | None,
                          new: PromptTemplate | None) -> None:
    """Refuse to resume a folder whose prompts were rendered by another tokenizer or chat
    template (`--model-tokenizer`; the model's own by default): half the rows rendered one way
    and half another would be one run's numbers. What an older run.json did not record cannot
    be compared (it is recorded from this run on)."""
    was = old.prompt_template if old is not None else None
    if was is None or new is None:
        return
    for name, what in (("tokenizer", "tokenizer (files and chat template)"),
                       ("sha256", "chat template")):
        before, now = getattr(was, name), getattr(new, name)
        if name in was.absent or before == now:
            continue
        raise RulerError(
            f"results folder {out} holds a run whose prompts were rendered by "
            f"{was.tokenizer_name or 'another tokenizer'!r}, not "
            f"{new.tokenizer_name!r}: the {what} differs ({str(before)[:12]} vs "
            f"{str(now)[:12]}); --model-tokenizer is part of the run: use another --out, or "
            f"the tokenizer the folder was run with")


def _check_same_delivery(out: Path, old: RunRecord | None, info: RunRecord,
                         delivery: str) -> RunRecord:
    """`info` with this run's prompt delivery, after refusing a folder whose earlier rows
    reached the model otherwise (token ids, text, chat messages; where the answer prefix
    went: `--api`, `--answer-prefix-turn`, `--backend`). Engines that take the same token ids
    (vLLM, transformers, a server's completions-ids) may take turns."""
    was = old.prompt_delivery if old is not None else None
    if was is not None and was != delivery:
        raise RulerError(f"results folder {out} holds rows whose prompts reached the model as "
                         f"{was}, not {delivery} (--backend / --api / --answer-prefix-turn): "
                         f"how a prompt is sent is part of the run; use another --out, or "
                         f"send them as before")
    return replace(info, prompt_delivery=delivery)


def _run_record(cfg: EvalConfig, mode: str, ds: Dataset,
                files: dict[str, str]) -> RunRecord:
    """This run's record before its engine starts: the rows (`files`), the model, and what
    every prediction of a results folder must share besides them (`RunRecord.SETTINGS`)."""
    reasoning = None
    if mode == OUTPUT_BUDGET_MODE:
        reasoning = (ReasoningSetting(parser=cfg.reasoning_parser) if cfg.reasoning_parser
                     else ReasoningSetting(end_marker=cfg.reasoning_end_marker))
    return RunRecord(
        dataset=DatasetRecord(spec=cfg.data, revision=ds.revision, config=cfg.tokenizer_config,
                              files=files),
        model=cfg.model, backend=cfg.backend, mode=mode, limit=cfg.limit,
        chat_template_kwargs=dict(cfg.chat_template_kwargs) if cfg.chat_template_kwargs
        else None, reasoning=reasoning, max_tokens=cfg.max_tokens)


def _covers(limit: int | None, before: int | None) -> bool:
    """Whether --limit `limit` takes in every row an earlier --limit `before` took (None: all
    rows). A larger limit extends a folder: its scores then expect the larger count."""
    return limit is None or (before is not None and limit >= before)


def _check_run_folder(out: Path, ds: Dataset, cfg: EvalConfig, files: list[SplitFile],
                      mode: str) -> tuple[RunRecord, RunRecord | None]:
    """A results folder holds one model, prompt mode and dataset config; any file it already
    has results for must be the very same rows (content hash) as now. Returns the run record
    to write once the backend has started, and the folder's previous one (None if new)."""
    info = _run_record(cfg, mode, ds, {f.key: f.content_sha256 for f in files})
    path = out / RUN_NAME
    if not path.is_file():
        return info, None
    old = read_run(path)
    for field_ in ("model", *RunRecord.SETTINGS):
        was, new = getattr(old, field_), getattr(info, field_)
        if field_ == "limit" and _covers(new, was):
            continue  # the first N rows of each file stay the first N: more are added
        if was != new:
            more = (" (a smaller --limit would score a subset of its rows)"
                    if field_ == "limit" else "")
            raise RulerError(f"results folder {out} holds a run with {field_} "
                             f"{encode(was)!r}, not {encode(new)!r}{more}: use another --out")
    if old.config != cfg.tokenizer_config:
        raise RulerError(f"results folder {out} holds tokenizer config "
                         f"{old.config!r}, not {cfg.tokenizer_config!r}")
    before = dict(old.dataset.files)
    _check_same_files(before, info.dataset.files, str(out))
    # kept from the folder's earlier runs: the backends, its context limit, how it was served
    kept = {k: getattr(old, k) for k in ("backend", "backends", "max_model_len", "serving",
                                         "prompt_delivery")
            if k not in old.absent}
    return replace(info, dataset=replace(info.dataset, files={**before, **info.dataset.files}),
                   **kept), old


def _record_backend(info: RunRecord, old: RunRecord | None, cfg: EvalConfig,
                    backend: Backend, out: Path) -> tuple[RunRecord, list[str]]:
    """Record the started backend and its context limit in the run record. Another backend
    than the folder's earlier runs is allowed (one model's predictions, e.g. resumed on a
    server after a crash of the offline engine) but said, and every prediction records its
    own backend. Returns the record with it, and what to tell the user."""
    before = list((old.backends if old else None)
                  or ([old.backend] if old and old.backend else []))
    requested = cfg.backend_options.max_model_len
    info = replace(
        info, backend=backend.name,
        backends=before + [backend.name] if backend.name not in before else before,
        # What a later run needs to know whether rows skipped here could fit then.
        max_model_len=MaxModelLen(used=int(backend.max_model_len), requested=requested,
                                  backend=backend.name))
    if before and backend.name not in before:
        return info, [f"results folder {out} holds predictions of backend(s) "
                      f"{', '.join(str(b) for b in before)}; this run adds predictions of "
                      f"backend {backend.name} (each prediction records its backend)"]
    return info, []


def _check_same_files(old: dict[str, str], new: dict[str, str], where: str) -> None:
    changed = sorted(k for k in new if k in old and old[k] != new[k])
    if changed:
        raise RulerError(f"{where} was produced from a different revision of the dataset: "
                         f"{', '.join(changed[:5])} changed (content_sha256). Use a new results "
                         f"folder, or the dataset revision it was made with")


@dataclass
class _ResumeState:
    answered: set[Key]  # rows with an answer: never redone
    skipped: dict[Key, int]  # rows skipped as too long -> their prompt tokens


def _read_state(out: Path, files: list[SplitFile]) -> _ResumeState:
    """What the folder's predictions already settle: answered rows, and rows skipped for
    max_model_len (redone when the limit allows); failed requests are redone. Read line by
    line, keeping only keys, statuses and counts (the file can be gigabytes)."""
    path = out / PREDICTIONS_NAME
    if not path.is_file():
        return _ResumeState(set(), {})
    records = index_records(
        iter_records(path, tolerate_torn_tail=True, drop=LONG_FIELDS),
        str(path), keep=lambda r: (r.get("status", "ok"), r.get("data_sha256"),
                                   r.get("prompt_tokens")))
    by_file = {(f.config, f.task, f.max_seq_length): f.content_sha256 for f in files}
    for key, (_, sha, _n) in records.items():
        want = by_file.get(key[:3])
        if want and sha and sha != want:
            raise RulerError(f"{path}: {format_key(key)} was generated from a different revision "
                             f"of the dataset (content_sha256 {sha[:12]}, now {want[:12]}). Use "
                             f"a new results folder")
    return _ResumeState({k for k, (status, _, _n) in records.items() if status == "ok"},
                        {k: int(n or 0) for k, (status, _, n) in records.items()
                         if status == "skipped"})


def _expected_limit(cfg: EvalConfig, old: RunRecord | None) -> int | None:
    """This run's max_model_len as far as it is known before the engine starts: the one asked
    for, else the limit the folder's last engine reported by itself (same backend: same
    default); None when it is known only once the engine is up."""
    requested = cfg.backend_options.max_model_len
    if requested:
        return int(requested)
    last = old.max_model_len if old else None
    if last and last.used and not last.requested and last.backend == cfg.backend:
        return int(last.used)
    return None


def _retryable_skips(ds: Dataset, files: list[SplitFile], skipped: dict[Key, int],
                     limit: int | None) -> set[Key]:
    """Rows skipped earlier for max_model_len that this run may fit: those whose prompt +
    tokens_to_generate is within `limit`, or all of them when the limit is not known yet (a
    row that still does not fit is recorded as skipped again)."""
    if not skipped or limit is None:
        return set(skipped)
    by_file: dict[tuple[str, str, int], dict[int, int]] = {}
    for key, prompt_tokens in skipped.items():
        by_file.setdefault(key[:3], {})[key[3]] = prompt_tokens
    retry = set()
    for f in files:
        here = by_file.get((f.config, f.task, f.max_seq_length))
        if not here:
            continue
        for batch in ds.iter_rows(f, ("index", "tokens_to_generate"), 4096):
            for r in batch:
                i = int(r["index"])
                if i in here and here[i] + _least_output(f.length_rule, r) <= limit:
                    retry.add((f.config, f.task, f.max_seq_length, i))
    return retry


def _least_output(rule: str, row: Mapping[str, Any]) -> int:
    """The fewest output tokens a row runs with: its whole budget where its length counts it,
    one token where it does not (the budget is clamped to the context left)."""
    return int(row["tokens_to_generate"]) if rule != PROMPT_ONLY else 1


def _render_or_fail(render: Callable[[], Any], cfg: EvalConfig) -> Any:
    try:
        return render()
    except ValueError as e:  # no chat template, a template variable it rejects, ...
        raise RulerError(f"cannot render prompts with the tokenizer "
                         f"{cfg.model_tokenizer or cfg.model}: {e}") from None
    except Exception as e:  # a Jinja error raised by the template itself
        raise RulerError(f"the chat template of {cfg.model_tokenizer or cfg.model} failed: "
                         f"{type(e).__name__}: {e}") from None


def _mismatch_error(cfg: EvalConfig, mode: str, count: int, example: str) -> RulerError:
    how = f"mode {mode}"
    if cfg.chat_template_kwargs:
        how += f", chat template variables {json.dumps(dict(cfg.chat_template_kwargs))}"
    return RulerError(
        f"the model's tokenizer ({cfg.model_tokenizer or cfg.model}, {how}) does not reproduce "
        f"the dataset's token counts for {count} row(s), e.g. {example} (prompt + the "
        f"tokens_to_generate it counts != length). Config {cfg.tokenizer_config!r} was built "
        f"for another tokenizer, prompt mode or template: pick the config built with this "
        f"model's tokenizer, or pass --allow-length-mismatch")


def _preflight(ds: Dataset, files: list[SplitFile], renderer: Renderer, done: set[Key],
               cfg: EvalConfig) -> None:
    """Render the first pending row of each task at the shortest length with pending rows,
    and check its count: a wrong tokenizer, mode or template fails here, before the model
    loads and before the folder is touched."""
    seen: set[str] = set()
    mismatches = []
    for f in files:  # files come shortest length first
        if f.task in seen:
            continue
        row = _first_pending(ds, f, min(f.rows, cfg.limit or f.rows), done)
        if row is None:
            continue
        seen.add(f.task)
        n = len(_render_or_fail(lambda: renderer.ids(row["input"], row["answer_prefix"]), cfg))
        ttg = counted_output(f.length_rule, int(row["tokens_to_generate"]))
        if n + ttg != row["length"]:
            key = (f.config, f.task, f.max_seq_length, int(row["index"]))
            mismatches.append(f"{format_key(key)}: {n} + {ttg} != {row['length']}")
    if mismatches and not cfg.allow_length_mismatch:
        raise _mismatch_error(cfg, renderer.mode, len(mismatches), mismatches[0])


def _first_pending(ds: Dataset, f: SplitFile, wanted: int,
                   done: set[Key]) -> dict[str, Any] | None:
    for batch in ds.iter_rows(f, RENDER_COLUMNS, 16):
        for r in batch:
            i = int(r["index"])
            if i >= wanted:
                return None
            if (f.config, f.task, f.max_seq_length, i) not in done:
                return r
    return None


def _generate(backend: Backend, stream: PromptStream, pending: int, out: Path,
              outcome: EvalOutcome, cfg: EvalConfig,
              extract: Callable[[str, str], Extraction] | None, skip_special: bool,
              started: float) -> None:
    from tqdm import tqdm

    limit = backend.max_model_len
    outcome.max_model_len = limit
    in_flight: dict[Key, Prediction] = {}
    bar = tqdm(total=pending, desc=f"eval ({backend.name})", unit="row",
               disable=not cfg.progress)
    start = time.perf_counter()
    salt = redaction.new_salt()  # of the fingerprints of secrets cut out of answers
    with PredictionWriter(out / PREDICTIONS_NAME) as writer:

        def request(row: RenderedRow) -> GenRequest | None:
            """The row as a request, or None when it cannot run (recorded here)."""
            pred = _prediction(row, cfg, stream.renderer.mode)
            pred.backend = backend.name
            budget = row.tokens_to_generate
            need = pred.prompt_tokens + budget
            room = limit - pred.prompt_tokens
            if need > limit and row.length_rule == PROMPT_ONLY and room >= 1:
                budget = pred.output_budget = room  # clamped, recorded
                outcome.budget_clamped += 1
            elif need > limit:
                pred.status = "skipped"
                if row.length_rule != PROMPT_ONLY:
                    pred.skip_kind = SkipReason.OVER_CONTEXT.value
                    pred.reason = (f"prompt {pred.prompt_tokens} + tokens_to_generate "
                                   f"{row.tokens_to_generate} = {need} > max_model_len {limit}")
                else:
                    pred.skip_kind = SkipReason.NO_ROOM.value
                    pred.reason = (f"prompt {pred.prompt_tokens} leaves no room to generate "
                                   f"within max_model_len {limit}")
                writer.write(pred)
                outcome.skipped += 1
                if len(outcome.skip_reasons) < 5:
                    outcome.skip_reasons.append(f"{format_key(pred.key)}: {pred.reason}")
                bar.update(1)
                return None
            in_flight[row.key] = pred
            if outcome.first_request_s is None:
                outcome.first_request_s = time.perf_counter() - started
            if cfg.max_tokens is not None:  # --max-tokens caps whatever the row's budget is
                budget = min(budget, cfg.max_tokens)
            return GenRequest(row.key, row.prompt_ids, budget, skip_special,
                              row.input_text, row.answer_prefix)

        for result in backend.generate(_Feed(stream, request)):
            pred = in_flight.pop(result.key)
            _take_server_report(pred, result)
            if not result.error and not isinstance(result.text, str):
                result.error = f"the backend returned no text ({result.text!r})"
            if result.error:
                pred.status, pred.reason = "error", scrub(result.error)
                outcome.errors += 1
            else:
                # A server may put the API key into its answer: never stored (the rest is),
                # and where it is cut out the record says where, so that scoring sees the
                # answer as generated (`ruler.eval.records.redaction`).
                assert isinstance(result.text, str)  # checked above
                answer = result.text
                pred.output_tokens = result.output_tokens
                pred.finish_reason = result.finish_reason
                if extract is not None:
                    got = extract(result.text, result.finish_reason)
                    pred.raw_prediction = redact_known(result.text)
                    answer = got.answer
                    pred.reasoning = got.state
                    outcome.budget_exhausted += got.state == "budget_exhausted"
                stored = redaction.redact(answer)
                pred.prediction = stored.text
                if stored.spans:
                    pred.redacted = redaction.record(stored.spans, salt)
                    outcome.redacted += 1
                outcome.generated += 1
                outcome.prompt_mismatches += bool(result.prompt_mismatch)
                outcome.prompt_check.add(pred.record())
            pred.elapsed_s = round(time.perf_counter() - start, 4)
            writer.write(pred)
            bar.update(1)
    outcome.generate_seconds = time.perf_counter() - start
    bar.close()


def _take_server_report(pred: Prediction, result: GenResult) -> None:
    """What the engine reported beside the answer, onto the prediction (server text: the API
    key redacted)."""
    pred.server_prompt_tokens = result.server_prompt_tokens
    pred.prompt_mismatch = result.prompt_mismatch
    pred.prompt_unchecked = result.prompt_unchecked
    pred.server_model = redact_known(result.server_model)
    pred.server_notes = redact_known(result.server_notes)


class _Feed:
    """The stream's rows as requests, in order, for a backend to pull; `ready()` tells it
    whether the next one is rendered already (see backends.feed_ready)."""

    def __init__(self, stream: PromptStream,
                 request: Callable[[RenderedRow], GenRequest | None]):
        self.stream, self.request = stream, request

    def __iter__(self) -> "_Feed":
        return self

    def __next__(self) -> GenRequest:
        while True:
            r = self.request(next(self.stream))
            if r is not None:
                return r

    def ready(self) -> bool:
        return self.stream.ready()


def _prediction(row: RenderedRow, cfg: EvalConfig, mode: str) -> Prediction:
    """The record of a row about to run, after checking its count against the dataset's."""
    n = len(row.prompt_ids)
    ttg = counted_output(row.length_rule, row.tokens_to_generate)
    if n + ttg != row.length and not cfg.allow_length_mismatch:
        raise _mismatch_error(cfg, mode, 1, f"{format_key(row.key)}: {n} + {ttg} != "
                                            f"{row.length}")
    return Prediction(*row.key, prediction=None, prompt_tokens=n, data_sha256=row.data_sha256,
                      model=cfg.model)
