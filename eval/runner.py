"""`ruler eval`: render every row exactly as the builder counted it, generate, save, score.

Order of work, so that bad input fails before the (slow) model loads:
1. open the dataset and select (config, tasks, lengths); check the results folder was made
   from the same dataset files (content hashes) and the same model and prompt mode;
2. render each pending row with `Tokenizer.prompt_ids` — the function that defined the row's
   `length` — and check the model's tokenizer reproduces the count;
3. load the backend; rows whose prompt + `tokens_to_generate` exceed its `max_model_len` are
   recorded as skipped with the reason (one too-long prompt must not abort the run, and
   nothing is truncated);
4. hand all remaining prompts to the backend at once and write each prediction as it arrives;
5. score the folder (scores.json) for `ruler report`.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ruler.builder.errors import RulerError
from ruler.builder.manifest import write_json_atomic
from ruler.builder.tokenizer import PROMPT_MODES, Tokenizer
from ruler.eval.backends import Backend, BackendOptions, GenRequest, make_backend
from ruler.eval.data import Dataset, SplitFile, open_dataset
from ruler.eval.predictions import (Key, Prediction, PredictionWriter, format_key, index_records,
                                    read_records)
from ruler.eval.results_folder import PREDICTIONS_NAME, RUN_NAME
from ruler.eval.score import score_folder


@dataclass(frozen=True)
class EvalConfig:
    model: str
    data: str
    tokenizer_config: str
    out: Path
    backend: str = "vllm"
    tasks: tuple[str, ...] = ()
    lengths: tuple[int, ...] = ()
    mode: str | None = None  # chat | base; default: the mode the dataset was built with
    revision: str | None = None
    model_tokenizer: str | None = None  # default: the model folder
    limit: int | None = None  # first N samples per (task, L)
    allow_length_mismatch: bool = False
    progress: bool = True
    backend_options: BackendOptions | None = None  # default: from `model`


@dataclass
class PendingRow:
    pred: Prediction  # filled in when the result arrives
    request: GenRequest
    tokens_to_generate: int


@dataclass
class EvalOutcome:
    out: Path
    done_before: int = 0
    generated: int = 0
    skipped: int = 0
    errors: int = 0
    generate_seconds: float = 0.0
    max_model_len: int = 0
    skip_reasons: list[str] = field(default_factory=list)


def run_eval(cfg: EvalConfig, backend: Backend | None = None) -> EvalOutcome:
    ds = open_dataset(cfg.data, cfg.revision, cfg.tokenizer_config, cfg.tasks, cfg.lengths)
    files = ds.files(cfg.tokenizer_config, cfg.tasks or None, cfg.lengths or None)
    if not files:
        raise RulerError(f"dataset {cfg.data} config {cfg.tokenizer_config!r} has no files")
    mode = cfg.mode or ds.build(cfg.tokenizer_config).get("prompt_mode") or "chat"
    if mode not in PROMPT_MODES:
        raise RulerError(f"--mode {mode!r}: choose one of {', '.join(PROMPT_MODES)}")
    out = Path(cfg.out)
    run_info = _check_run_folder(out, ds, cfg, files, mode)
    done = _finished(out, files)

    tok = _model_tokenizer(cfg)
    pending = _render(ds, files, tok, mode, done, cfg)
    # Only now, with every check passed, does the folder become (or stay) this run's.
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / RUN_NAME, run_info)

    outcome = EvalOutcome(out, done_before=len(done))
    own_backend = backend is None
    if pending and backend is None:
        backend = make_backend(cfg.backend, cfg.backend_options or BackendOptions(cfg.model))
    try:
        if pending:
            _generate(backend, pending, out, outcome, cfg.progress)
    finally:
        if own_backend and backend is not None:
            backend.close()
    run_info["last_run"] = asdict(outcome) | {"out": str(out)}
    write_json_atomic(out / RUN_NAME, run_info)

    score_folder(out, ds)
    return outcome


def _model_tokenizer(cfg: EvalConfig) -> Tokenizer:
    from ruler.builder.tokenizer_registry import load_tokenizer

    spec = cfg.model_tokenizer or cfg.model
    try:
        return load_tokenizer(spec)
    except RulerError as e:
        raise RulerError(f"cannot load the tokenizer that renders the prompts ({spec}): {e}. "
                         f"Pass --model-tokenizer (a tokenizer folder, a registry name, or "
                         f"org/name@revision)") from None


def _selection_fingerprint(files: list[SplitFile]) -> dict[str, str]:
    return {f.key: f.content_sha256 for f in files}


def _check_run_folder(out: Path, ds: Dataset, cfg: EvalConfig, files: list[SplitFile],
                      mode: str) -> dict[str, Any]:
    """A results folder holds one model, prompt mode and dataset config; any file it already
    has results for must be the very same rows (content hash) as now. Returns the run record
    to write once every check has passed."""
    info = {"dataset": {"spec": cfg.data, "revision": ds.revision,
                        "config": cfg.tokenizer_config, "files": {}},
            "model": cfg.model, "backend": cfg.backend, "mode": mode, "limit": cfg.limit}
    path = out / RUN_NAME
    if path.is_file():
        old = json.loads(path.read_text(encoding="utf-8"))
        for field_, new in (("model", cfg.model), ("mode", mode), ("limit", cfg.limit)):
            if old.get(field_) != new:
                raise RulerError(f"results folder {out} holds a run with {field_} "
                                 f"{old.get(field_)!r}, not {new!r}: use another --out")
        if old["dataset"]["config"] != cfg.tokenizer_config:
            raise RulerError(f"results folder {out} holds tokenizer config "
                             f"{old['dataset']['config']!r}, not {cfg.tokenizer_config!r}")
        _check_same_files(old["dataset"]["files"], _selection_fingerprint(files), str(out))
        info["dataset"]["files"] = dict(old["dataset"]["files"])
    info["dataset"]["files"].update(_selection_fingerprint(files))
    return info


def _check_same_files(old: dict[str, str], new: dict[str, str], where: str) -> None:
    changed = sorted(k for k in new if k in old and old[k] != new[k])
    if changed:
        raise RulerError(f"{where} was produced from a different revision of the dataset: "
                         f"{', '.join(changed[:5])} changed (content_sha256). Use a new results "
                         f"folder, or the dataset revision it was made with")


def _finished(out: Path, files: list[SplitFile]) -> dict[Key, dict[str, Any]]:
    """Rows already answered (ok) or skipped for a lasting reason; failed requests are redone."""
    path = out / PREDICTIONS_NAME
    if not path.is_file():
        return {}
    records = index_records(read_records(path, tolerate_torn_tail=True), str(path))
    by_file = {(f.config, f.task, f.max_seq_length): f.content_sha256 for f in files}
    for key, r in records.items():
        want = by_file.get(key[:3])
        if want and r.get("data_sha256") and r["data_sha256"] != want:
            raise RulerError(f"{path}: {format_key(key)} was generated from a different revision "
                             f"of the dataset (content_sha256 {r['data_sha256'][:12]}, now "
                             f"{want[:12]}). Use a new results folder")
    return {k: r for k, r in records.items() if r.get("status", "ok") in ("ok", "skipped")}


def _render(ds: Dataset, files: list[SplitFile], tok: Tokenizer, mode: str,
            done: dict[Key, Any], cfg: EvalConfig) -> list[PendingRow]:
    from tqdm import tqdm

    pending: list[PendingRow] = []
    mismatches: list[str] = []
    total = sum(min(f.rows, cfg.limit or f.rows) for f in files)
    bar = tqdm(total=total, desc="render prompts", unit="row", disable=not cfg.progress)
    for f in files:
        for row in ds.rows(f)[: cfg.limit or None]:
            bar.update(1)
            key: Key = (f.config, f.task, f.max_seq_length, int(row["index"]))
            if key in done:
                continue
            ids = tok.prompt_ids(row["input"], row["answer_prefix"], mode)
            ttg = int(row["tokens_to_generate"])
            if len(ids) + ttg != row["length"]:
                mismatches.append(f"{format_key(key)}: {len(ids)} + {ttg} != {row['length']}")
            pred = Prediction(*key, prediction=None, prompt_tokens=len(ids),
                              data_sha256=f.content_sha256)
            pending.append(PendingRow(pred, GenRequest(key, ids, ttg), ttg))
    bar.close()
    if mismatches and not cfg.allow_length_mismatch:
        raise RulerError(
            f"the model's tokenizer ({cfg.model_tokenizer or cfg.model}, mode {mode}) does not "
            f"reproduce the dataset's token counts for {len(mismatches)} row(s), e.g. "
            f"{mismatches[0]} (prompt + tokens_to_generate != length). Config "
            f"{cfg.tokenizer_config!r} was built for another tokenizer or prompt mode: pick the "
            f"config built with this model's tokenizer, or pass --allow-length-mismatch")
    return pending


def _generate(backend: Backend, pending: list[PendingRow], out: Path, outcome: EvalOutcome,
              progress: bool) -> None:
    from tqdm import tqdm

    limit = backend.max_model_len
    outcome.max_model_len = limit
    by_key = {p.request.key: p for p in pending}
    with PredictionWriter(out / PREDICTIONS_NAME) as writer:
        runnable = []
        for p in pending:
            need = len(p.request.prompt_ids) + p.tokens_to_generate
            if need > limit:
                p.pred.status = "skipped"
                p.pred.reason = (f"prompt {len(p.request.prompt_ids)} + tokens_to_generate "
                                 f"{p.tokens_to_generate} = {need} > max_model_len {limit}")
                writer.write(p.pred)
                outcome.skipped += 1
                if len(outcome.skip_reasons) < 5:
                    outcome.skip_reasons.append(f"{format_key(p.pred.key)}: {p.pred.reason}")
            else:
                runnable.append(p.request)
        bar = tqdm(total=len(runnable), desc=f"generate ({backend.name})", unit="row",
                   disable=not progress)
        start = time.perf_counter()
        for result in backend.generate(runnable):
            p = by_key[result.key]
            if result.error:
                p.pred.status, p.pred.reason = "error", result.error
                outcome.errors += 1
            else:
                p.pred.prediction = result.text
                p.pred.output_tokens = result.output_tokens
                p.pred.finish_reason = result.finish_reason
                outcome.generated += 1
            p.pred.elapsed_s = round(time.perf_counter() - start, 4)
            writer.write(p.pred)
            bar.update(1)
        outcome.generate_seconds = time.perf_counter() - start
        bar.close()
