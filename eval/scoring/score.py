"""`ruler score`: predictions (from `ruler eval` or any framework) against the dataset's rows.

The dataset's rows are the truth: references, metric and the set of rows that should have a
prediction. What was asked for (the selection, docs/scoring.md "Coverage") is never merely what
the predictions happen to contain: rows skipped, failed or absent are counted and listed, never
scored as zero. Each cell keeps its answered rows' values (`row_scores`), from which the report
and `ruler compare` compute intervals. Each prediction is tied to its row by what it carries of
it (`ruler.eval.records.build_tie`): anything that differs is an error (another build of the
config made it); only of tied rows is a server's prompt-count check carried into the scores.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ruler.catalog.benchmarks import in_task_order
from ruler.catalog.length_rules import counted_output
from ruler.catalog.tasks import TASKS
from ruler.eval.failure_modes.record import CellFailures
from ruler.eval.metrics import answer_checks
from ruler.eval.metrics.depth import Item, compact, row_columns, row_items
from ruler.eval.metrics.health import health_facts, run_settings
from ruler.eval.metrics.intervals import score_interval
from ruler.eval.metrics.specs import (
    METRIC_SPECS,
    build_key,
    postprocess_pred,
    rescoring_metric,
    row_score,
    task_score,
)
from ruler.eval.records.build_tie import (
    LENGTH_ONLY,
    PROMPT_DIFFERS,
    TIE_KINDS,
    carried_digest,
    describe_prompt,
    prompt_forms,
    tie,
)
from ruler.eval.records.dataset import Dataset, SplitFile, default_config, open_dataset
from ruler.eval.records.predictions import LONG_FIELDS, Key, format_key, index_records, read_records
from ruler.eval.records.redaction import UNRESTORED, restore
from ruler.eval.records.results_folder import PREDICTIONS_NAME, RUN_NAME, SCORES_NAME
from ruler.eval.records.results_schema import read_run
from ruler.eval.records.run_record import DatasetRecord
from ruler.eval.records.scores_record import (
    CellScore,
    PredictionsRecord,
    ScoresRecord,
    Selection,
    cell_of,
    scores_owner,
)
from ruler.eval.records.serving import prompt_check
from ruler.eval.records.skip_reasons import skip_kind
from ruler.eval.scoring.prediction_readers import fingerprint, key_against, read_predictions
from ruler.eval.scoring.prediction_source import PredictionSource
from ruler.kernel.atomic import write_json_atomic
from ruler.kernel.errors import RulerError
from ruler.kernel.file_names import safe_name


def score_predictions(ds: Dataset, records: dict[Key, dict[str, Any]],
                      files: list[SplitFile] | None = None, model: str | None = None,
                      limit: int | None = None, config: str | None = None,
                      tasks: Sequence[str] | None = None,
                      lengths: Sequence[int] | None = None,
                      selected_by: str | None = None,
                      metric: str | None = None) -> ScoresRecord:
    """Score keyed prediction records against the dataset.

    `files`: the split files asked for; default: every file of the config (the one named, else
    the predictions' only one), or those of `tasks` / `lengths`. A file without any prediction
    is a cell whose every row is missing. `limit`: only the first N rows of each file are
    expected (`ruler eval --limit N`); rows beyond them are neither scored nor reported
    missing. Predictions of other configs are listed as unknown. `selected_by`: who chose the
    files, for the record ("flags", "run"; default: "config" when every file of the config is
    asked for, else "caller"). `metric`: score with it instead of the rows' own metric, where it
    may replace theirs (`metrics.rescoring_metric`: a corrected variant); a RulerError
    for rows it cannot score.
    """
    if config is None:
        config = predictions_config(records) or (files[0].config if files else None)
        if config is None:
            raise RulerError("no predictions to score")
    ds.build(config)  # clear error for an unknown config
    if selected_by is None:
        selected_by = "flags" if tasks or lengths else "caller" if files is not None \
            else "config"
    if files is None:
        files = ds.files(config, tasks or None, lengths or None)
    by_file: dict[tuple[str, int], dict[int, dict[str, Any]]] = defaultdict(dict)
    for k, r in records.items():
        if k[0] == config:
            by_file[(k[1], k[2])][k[3]] = r

    cells: list[CellScore] = []
    missing: list[str] = []
    seen: set[Key] = set()
    depth_items: dict[str, list[list[float]]] = {}
    longest = _longest_answered(ds, files, by_file) if any(
        r.get("status") == "skipped" for p in by_file.values() for r in p.values()) else None
    for f in files:
        preds = by_file.get((f.task, f.max_seq_length), {})
        items: list[Item] = []
        cell, cell_missing = _score_file(ds, f, preds, limit, items, metric, longest)
        depth_items[f.key] = compact(items)
        cells.append(cell)
        missing += cell_missing
        seen |= {(config, f.task, f.max_seq_length, i) for i in preds}
    unknown = [format_key(k) for k in sorted(records) if k not in seen or
               records[k].get("_unknown")]
    build = ds.build(config)
    variant = dict(build.variant or {})
    return ScoresRecord(
        dataset=DatasetRecord(spec=ds.spec, revision=ds.revision,
                              files={f.key: f.content_sha256 for f in files}),
        config=config, model=model, cells=cells, missing=missing, unknown=unknown,
        benchmark=build.benchmark_id, benchmark_package=build.benchmark_package,
        axes=build.axis_codes(), suites=list(build.suites) if build.suites else None,
        depth_items=depth_items, depth_bins=variant.get("depth_bins"), variant=variant,
        selection=Selection(tasks=in_task_order(f.task for f in files),
                            lengths=sorted({f.max_seq_length for f in files}), limit=limit,
                            by=selected_by),
        metric_asked=metric)


def _metric_for(f: SplitFile, rows_metric: str, asked: str | None) -> str:
    """The metric to score `f`'s rows with (`metrics.rescoring_metric`), or a RulerError."""
    try:
        return rescoring_metric(rows_metric, asked)
    except (KeyError, ValueError) as e:
        raise RulerError(f"--metric {asked}: {f.path}: {str(e).strip(chr(34))}") from None


def _unanswered_file(f: SplitFile, limit: int | None,
                     asked: str | None = None) -> tuple[CellScore, list[str]]:
    """A file no prediction names: every row asked for is missing. Its rows are not read (on
    a Hub dataset they need not even be downloaded): `index` runs 0..rows-1 in every split
    file (`ruler verify` checks it), and the metric is the task's."""
    n = min(f.rows, limit) if limit else f.rows
    missing = [format_key((f.config, f.task, f.max_seq_length, i)) for i in range(n)]
    metric = TASKS[f.task].metric if f.task in TASKS else ""
    if metric:
        metric = _metric_for(f, metric, asked)
    return CellScore(task=f.task, max_seq_length=f.max_seq_length, metric=metric, score=None,
                     length_rule=f.length_rule,
                     rows=n, scored=0, nulls=0, skipped=0, errors=0, missing=n,
                     data_sha256=f.content_sha256, row_scores=[], unverified=0), missing


def _answered(p: Mapping[str, Any]) -> bool:
    return p.get("status", "ok") not in ("skipped", "error") and p.get("prediction") is not None


def _longest_answered(ds: Dataset, files: Sequence[SplitFile],
                      by_file: Mapping[tuple[str, int], Mapping[int, Mapping[str, Any]]]
                      ) -> tuple[int, str] | None:
    """The longest row of the selection the predictions answered (its `length` and key), or
    None: what rows they say were skipped as too long are checked against (a row no longer
    than one the model answered fits it). Rows whose prediction counted the prompt otherwise
    than the build (`prompt_tokens` of another tokenizer: `--allow-length-mismatch`) are left
    out: their lengths are not the model's."""
    longest: tuple[int, str] | None = None
    for f in files:
        preds = by_file.get((f.task, f.max_seq_length), {})
        answered = {i for i, p in preds.items() if _answered(p)}
        if not answered:
            continue
        for batch in ds.iter_rows(f, ("index", "length", "tokens_to_generate"), 4096):
            for r in batch:
                i = int(r["index"])
                if i in answered and (longest is None or r["length"] > longest[0]) \
                        and _counted_alike(preds[i], f, r):
                    longest = (int(r["length"]), format_key((f.config, f.task,
                                                             f.max_seq_length, i)))
    return longest


def _counted_alike(p: Mapping[str, Any], f: SplitFile, row: Mapping[str, Any]) -> bool:
    """Whether the prediction's own prompt count (where it records one) is the build's: the
    row's `length` is then what the model needed."""
    n = p.get("prompt_tokens")
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        return True
    ttg = int(row["tokens_to_generate"])
    return n + counted_output(f.length_rule, ttg) == int(row["length"])


def _skip_contradicted(why: str, longest: tuple[int, str]) -> str:
    """The reason of a row said to be skipped (as too long) whose length is no more than a row
    the model answered."""
    return (f"said skipped ({why[:60] or 'no reason'}), but it is no longer than a row the "
            f"model answered ({longest[1]}: {longest[0]:,} tokens): it fits, so it has no "
            f"result")


def _score_file(ds: Dataset, f: SplitFile, preds: dict[int, dict[str, Any]],
                limit: int | None, depth_items: list[Item] | None = None,
                asked: str | None = None,
                longest: tuple[int, str] | None = None) -> tuple[CellScore, list[str]]:
    """Score one split file; append the answered rows' depth items to `depth_items`.
    `asked`: the metric to score with instead of the rows' own (`ruler score --metric`).
    `longest`: the longest row the predictions answered (`_longest_answered`): a row they
    mark skipped for a reason of their own (not a kind `ruler eval` recorded) that is no
    longer is a failed row, not a skip."""
    if not preds:
        return _unanswered_file(f, limit, asked)
    # Only the columns scoring reads: a 128K row's input is megabytes.
    all_rows = ds.rows(f, columns=tuple(dict.fromkeys(("index", "length", "tokens_to_generate")
                                                      + row_columns(f.task))))
    rows = {int(r["index"]): r for r in all_rows}
    _tie_to_rows(ds, f, preds, rows)
    metrics = {r["metric"] for r in rows.values()}
    if len(metrics) != 1:
        raise RulerError(f"{f.path}: rows disagree on the metric: {sorted(metrics)}")
    metric = metrics.pop()
    if metric not in METRIC_SPECS:
        raise RulerError(f"{f.path}: unknown metric {metric!r} (this ruler knows "
                         f"{', '.join(METRIC_SPECS)}): update ruler-bench, or install the "
                         f"plug-in that offers it (entry point group ruler.metrics), to score "
                         f"these rows")
    metric = _metric_for(f, metric, asked)
    keys = _metric_keys(ds, f, metric)
    answered: list[str] = []
    refs: list[list[str]] = []
    answered_index: list[int] = []
    reasons: Counter[str] = Counter()
    tied_by: Counter[str | None] = Counter()
    skipped = errors = exhausted = clamped = redacted = 0
    missing = []
    copy_candidates: dict[int, tuple[dict[str, Any], str]] = {}
    considered = [int(r["index"]) for r in all_rows[: limit or None]]
    for i in considered:
        p = preds.get(i)
        status = None if p is None else p.get("status", "ok")
        if p is None:
            missing.append(format_key((f.config, f.task, f.max_seq_length, i)))
        elif status == "skipped":
            kind = skip_kind(p)
            why = kind.label if kind else str(p.get("reason") or "")[:120]
            # A kind ruler's runner recorded was computed from the row (its prompt count and
            # budget against the engine's limit); another framework's claim is checked here.
            if kind is None and longest is not None and int(rows[i]["length"]) <= longest[0] \
                    and _counted_alike(p, f, rows[i]):
                errors += 1  # the claim does not hold: the model answered a row as long
                reasons[_skip_contradicted(why, longest)] += 1
            else:
                skipped += 1
                reasons[why] += 1
        elif status == "error" or p.get("prediction") is None:
            errors += 1
            reasons[str(p.get("reason", "") or "no prediction")[:120]] += 1
        elif (text := answer_as_generated(p)) is None:
            errors += 1  # a secret was cut out of it, and this process cannot put it back
            reasons[UNRESTORED] += 1
        else:
            redacted += p.get("redacted") is not None
            answered.append(text)
            refs.append(list(rows[i]["outputs"]))
            answered_index.append(i)
            _mark_answer(p, text, rows[i], copy_candidates)
            tied_by[p.get("_tied")] += 1
            if depth_items is not None:
                depth_items.extend(row_items(rows[i], answered[-1], metric, keys[1]))
            exhausted += p.get("reasoning") == "budget_exhausted"
            clamped += p.get("output_budget") is not None
    _mark_copies(ds, f, copy_candidates)
    score = task_score(metric, answered, refs, *keys) if answered else None
    nulls = sum(1 for a in answered if not postprocess_pred(a))
    values = [row_score(metric, a, r, *keys) for a, r in zip(answered, refs)]
    interval = score_interval(values, key=f"{f.config}/{f.key}") if values else None
    cell = CellScore(task=f.task, max_seq_length=f.max_seq_length, metric=metric, score=score,
                     length_rule=f.length_rule,
                     rows=len(considered), scored=len(answered), nulls=nulls, skipped=skipped,
                     errors=errors, missing=len(missing), data_sha256=f.content_sha256,
                     skip_reasons=[f"{n}x {why}" for why, n in reasons.most_common()],
                     budget_exhausted=exhausted,
                     row_scores=[[i, v] for i, v in zip(answered_index, values)],
                     ci95=interval.to_json() if interval else None,
                     ci_method=interval.method if interval else None,
                     tied_by={k: tied_by[k] for k in (*TIE_KINDS, LENGTH_ONLY) if tied_by[k]},
                     unverified=len(answered) - sum(tied_by[k] for k in TIE_KINDS),
                     budget_clamped=clamped, redacted=redacted,
                     failures=_labels(ds, f)(ds, f, metric, answered_index, answered, values, preds,
                                         {i: rows[i]["outputs"] for i in answered_index}))
    return cell, missing


def _labels(ds: Dataset, f: SplitFile) -> Callable[..., CellFailures | None]:
    """The failure-mode labeler of the benchmark `f`'s build records (`Benchmark.
    failure_labels`); one that labels nothing where it has none."""
    return ds.build(f.config).spec().hook("failure_labels") or (lambda *args: None)


def _mark_answer(p: dict[str, Any], text: str, row: Mapping[str, Any],
                 copy_candidates: dict[int, tuple[dict[str, Any], str]]) -> None:
    """Mark an answered record for the set-up health section (`eval.metrics.answer_checks`): the
    row's own output budget, whether the answer ran far past it, and (a long answer) that it
    is to be checked against the row's prompt."""
    budget = p.get("output_budget")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0:
        budget = int(row["tokens_to_generate"])
    p[answer_checks.BUDGET_MARK] = budget
    p[answer_checks.PAST_MARK] = answer_checks.past_budget(p, text, budget)
    p[answer_checks.COPY_MARK] = False
    if answer_checks.might_copy(text):
        copy_candidates[int(row["index"])] = (p, text)


def _mark_copies(ds: Dataset, f: SplitFile,
                 candidates: Mapping[int, tuple[dict[str, Any], str]]) -> None:
    """Mark the long answers that copy their row's prompt; the prompts are read only for
    them (a 128K file holds ~300 MB of input)."""
    if not candidates:
        return
    for batch in ds.iter_rows(f, ("index", "input"), 16):
        for r in batch:
            found = candidates.get(int(r["index"]))
            if found is not None:
                p, text = found
                p[answer_checks.COPY_MARK] = answer_checks.copies_prompt(text, r["input"])


def answer_as_generated(p: Mapping[str, Any]) -> str | None:
    """The prediction as the model wrote it: the stored text, or where a secret was cut out
    of it (`redacted`), that text with the secret put back; None where this process holds no
    secret of the fingerprint recorded (`eval.records.redaction`)."""
    text = str(p["prediction"])
    return text if p.get("redacted") is None else restore(text, p["redacted"])


def _metric_keys(ds: Dataset, f: SplitFile, metric: str) -> tuple[str, str]:
    """The row's task and build key a keyed metric reads (`MetricSpec.keyed`, `build_key`:
    a language, from the manifest's entry of the config, never from its name), read
    here so that a build that does not record it is one line, not a failure in the middle of
    scoring."""
    try:
        return f.task, build_key(metric, ds.build(f.config))
    except ValueError as e:
        raise RulerError(f"{f.path}: metric {metric!r} cannot score config {f.config!r}: "
                         f"{e}") from None


def _tie_to_rows(ds: Dataset, f: SplitFile, preds: dict[int, dict[str, Any]],
                 rows: Mapping[int, Mapping[str, Any]]) -> None:
    """Mark each prediction with how it is tied to its row (`_tied`, `ruler.eval.records.build_tie`)
    or as naming no row (`_unknown`); refuse predictions that carry something other than
    their row has, naming them and what differs."""
    forms = _prompt_forms(ds, f) if any(carried_digest(p) for p in preds.values()) else {}
    wrong: dict[int, str] = {}
    for i, p in preds.items():
        if i not in rows:
            p["_unknown"] = True
            continue
        p["_tied"], why = tie(p, f.content_sha256, rows[i], forms.get(i))
        if why:
            wrong[i] = why
    if wrong:
        shown = _describe_prompts(ds, f, preds, dict(list(wrong.items())[:3]))
        more = f" and {len(wrong) - 3} more" if len(wrong) > 3 else ""
        raise RulerError(f"{len(wrong)} prediction(s) differ from their rows in dataset "
                         f"{ds.spec} config {f.config!r}, as predictions made from a different "
                         f"revision of the dataset (another build of the config) would: "
                         f"{', '.join(shown)}{more}; score them against the build they were "
                         f"made from")


def _prompt_forms(ds: Dataset, f: SplitFile) -> dict[int, dict[str, str]]:
    """Each row's accepted prompt forms (`build_tie.prompt_forms`: digest -> form), read in
    batches (a 128K file holds ~300 MB of input)."""
    return {int(r["index"]): prompt_forms(r["input"], r["answer_prefix"])
            for batch in ds.iter_rows(f, ("index", "input", "answer_prefix"), batch_size=64)
            for r in batch}


def _describe_prompts(ds: Dataset, f: SplitFile, preds: Mapping[int, Mapping[str, Any]],
                      wrong: Mapping[int, str]) -> list[str]:
    """"key (what differs)" of the predictions shown, a differing prompt told by where it
    departs from the row's (the rows' inputs are read for these alone)."""
    texts: dict[int, tuple[str, str]] = {}
    if any(PROMPT_DIFFERS in why for why in wrong.values()):
        for batch in ds.iter_rows(f, ("index", "input", "answer_prefix"), batch_size=16):
            texts.update({int(r["index"]): (r["input"], r["answer_prefix"]) for r in batch
                          if int(r["index"]) in wrong})
    return [f"{format_key((f.config, f.task, f.max_seq_length, i))} ("
            + (why.replace(PROMPT_DIFFERS, f"{PROMPT_DIFFERS}: "
                                           f"{describe_prompt(preds[i], *texts[i])}")
               if i in texts else why) + ")" for i, why in wrong.items()]


def predictions_config(records: Mapping[Key, Any]) -> str | None:
    """The one tokenizer config the records name (None: no records)."""
    configs = sorted({k[0] for k in records})
    if len(configs) > 1:
        raise RulerError(f"predictions span several tokenizer configs ({', '.join(configs)}): "
                         f"score one at a time with --tokenizer-config")
    return configs[0] if configs else None


def scored_config(ds: Dataset, records: Mapping[Key, Any]) -> str:
    """The config to score when none is named: the dataset's only one (predictions of other
    configs are then listed as unknown), else the one the predictions name."""
    if len(ds.configs) == 1:
        return default_config(ds)
    return predictions_config(records) or default_config(ds)


def score_source(ds: Dataset, source: PredictionSource, records: dict[Key, dict[str, Any]],
                 config: str | None = None, tasks: Sequence[str] | None = None,
                 lengths: Sequence[int] | None = None,
                 limit: int | None = None, metric: str | None = None) -> ScoresRecord:
    """Score a read predictions source. `config` named: only its predictions are scored (the
    others are left out); else `scored_config`. What was asked for: the files of `tasks` /
    `lengths` when either is given, else the cells the run recorded (`run_files`), else the
    whole config. `limit`: default the source's own. `metric`: `score_predictions`'."""
    if config:
        records = {k: r for k, r in records.items() if k[0] == config}
    else:
        config = scored_config(ds, records)
    files = None if tasks or lengths else run_files(ds, config, source)
    report = score_predictions(ds, records, files, model=source.model, config=config,
                               tasks=tasks, lengths=lengths,
                               limit=limit if limit is not None else source.limit,
                               selected_by="run" if files is not None else None,
                               metric=metric)
    report.mode = source.mode
    report.predictions = fingerprint(source)
    report.serving, report.prompt_check = source.serving, prompt_check(tied(records))
    report.health = health_facts(records.values(), source.settings)
    return report


def tied(records: Mapping[Key, dict[str, Any]]) -> list[dict[str, Any]]:
    """The records scoring tied to the build (`_tie_to_rows`): only of these may a report say
    anything about how the build's prompts were served."""
    return [r for r in records.values() if r.get("_tied") in TIE_KINDS]


def run_cells(source: PredictionSource, config: str) -> set[tuple[str, int]]:
    """The (task, L) cells of `config` the predictions' run asked for (empty: not recorded)."""
    return {(t, L) for c, t, L in source.asked or () if c == config}


def run_files(ds: Dataset, config: str, source: PredictionSource) -> list[SplitFile] | None:
    """The dataset's files of the cells the run asked for; None when the run records none."""
    asked = run_cells(source, config)
    if not asked:
        return None
    files = [f for f in ds.files(config) if (f.task, f.max_seq_length) in asked]
    lacking = sorted(asked - {(f.task, f.max_seq_length) for f in files})
    if lacking:
        shown = ", ".join(f"{t}/{L}" for t, L in lacking[:5])
        raise RulerError(f"the run that made these predictions asked for {shown}, which "
                         f"dataset {ds.spec} config {config!r} does not have: score against "
                         f"the dataset the run used (or select with --tasks/--lengths)")
    return files


def score_file(predictions: str | os.PathLike[str], ds: Dataset, config: str | None = None,
               tasks: Sequence[str] | None = None, lengths: Sequence[int] | None = None,
               limit: int | None = None, metric: str | None = None) -> ScoresRecord:
    """`ruler score`: predictions from any framework (ruler's records, lm-eval's samples, an
    Inspect log, NeMo-Skills output, a plug-in's; see `ruler.eval.scoring.prediction_readers`)."""
    source = read_predictions(predictions)
    key_against(source, ds, config, tasks, lengths)
    records = index_records(source.records, str(predictions))
    return score_source(ds, source, records, config, tasks, lengths, limit, metric)


def score_path(predictions: str | os.PathLike[str], data: str, revision: str | None = None,
               config: str | None = None, tasks: Sequence[str] | None = None,
               lengths: Sequence[int] | None = None, limit: int | None = None,
               metric: str | None = None) -> ScoresRecord:
    """`score_file` against the dataset `data` (a build folder or Hub id at `revision`): of a
    Hub dataset only the files the predictions can be scored on are fetched (the config they
    name, and the cells their run asked for where it records them)."""
    source = read_predictions(predictions)
    if source.by_prompt:  # NeMo-Skills output: its rows are found by their prompt text
        key_against(source, open_dataset(data, revision, config, tasks, lengths), config,
                    tasks, lengths)
    records = index_records(source.records, str(predictions))
    named = {k[0] for k in records}
    fetch_config = config or (named.pop() if len(named) == 1 else None)
    fetch_tasks: Iterable[str] | None = tasks
    fetch_lengths: Iterable[int] | None = lengths
    cells = run_cells(source, fetch_config) if fetch_config and not (tasks or lengths) else None
    if cells:
        fetch_tasks, fetch_lengths = {t for t, _ in cells}, {L for _, L in cells}
    ds = open_dataset(data, revision, fetch_config, fetch_tasks, fetch_lengths)
    return score_source(ds, source, records, config, tasks, lengths, limit, metric)


def score_folder(out: Path, ds: Dataset) -> ScoresRecord:
    """Score a `ruler eval` results folder and write its scores.json: the selection is the
    run's files (every --tasks/--lengths it was run with) at its --limit."""
    run = read_run(out / RUN_NAME)
    path = out / PREDICTIONS_NAME
    records = index_records(read_records(path, tolerate_torn_tail=True, drop=LONG_FIELDS),
                            str(path))
    keys = {cell_of(k) for k in run.dataset.files}
    files = [f for f in ds.files(run.config) if (f.task, f.max_seq_length) in keys]
    report = score_predictions(ds, records, files, model=run.model, limit=run.limit,
                               config=run.config, selected_by="run")
    report = replace(
        report, mode=run.mode,
        predictions=fingerprint(PredictionSource(origin=path, files=[path])),
        serving=run.serving, prompt_check=prompt_check(tied(records)),
        health=health_facts(records.values(), run_settings(run, report.variant)))
    write_scores(out / SCORES_NAME, report)
    return report


def default_scores_folder(predictions: Path) -> Path:
    """Where `ruler score` writes when no --out is given: a folder of predictions (lm-eval
    output, Inspect logs) holds its own results; a file gets `<file name>.scores/` beside it,
    so two files in one folder never share (or overwrite) one scores.json."""
    predictions = Path(predictions)
    if predictions.is_dir():
        return predictions
    name = f"{predictions.name}.scores"
    if len(os.fsencode(name)) > 255:  # past the file system's limit: a cut name with a hash
        name = f"{safe_name(predictions.name, fallback='predictions')}.scores"
    return predictions.parent / name


def check_scores_owner(path: Path, predictions: PredictionsRecord | None) -> None:
    """Refuse to replace a scores.json made from other predictions: the same file (path) or
    the same bytes (sha256) may replace its own results, nothing else."""
    path = Path(path)
    if not path.exists():
        return
    # unreadable, not UTF-8, not JSON: says nothing of its owner
    owner = scores_owner(path)
    if owner is None or predictions is None:
        raise RulerError(f"{path} exists and does not say which predictions it scores (not "
                         f"written by this version of `ruler score`): pass another --out, or "
                         f"remove it")
    owner_path, owner_sha256 = owner
    if owner_path != predictions.path and owner_sha256 != predictions.sha256:
        raise RulerError(f"{path} holds the scores of other predictions ({owner_path}); "
                         f"pass another --out, or remove that folder's scores first")


def write_scores(path: Path, report: ScoresRecord) -> None:
    write_json_atomic(Path(path), report.to_json())
