"""The Inspect task `ruler/ruler` (docs/integrations.md: how to run and score it; in Python
`from ruler.eval.inspect import ruler`): a build or a released Hub revision, evaluated RULER's
way.

- Dataset: the rows of the selected split files, read through the manifest and checked against
  its hashes (`ruler.eval.records.dataset`, as `ruler eval` reads them). A sample's id is
  `<task>/<L>/<index>`; its metadata holds the row's key, metric, answer prefix, budget and the
  split file's `content_sha256`, so a log can be scored later by `ruler score`.
- Solver: the user turn is `input`. The assistant turn is pre-filled with `answer_prefix` where the
  provider continues a final assistant message (Inspect's vLLM and SGLang providers render it with
  `continue_final_message`); `-T prefill=true` forces it for other providers that support prefill,
  `-T prefill=false` turns it off. A row without an answer prefix is never pre-filled: its prompt is
  the user turn and the generation prompt. Then greedy generation of at most the row's
  `tokens_to_generate` tokens (`inspect_usage.greedy_settings`: temperature 0, or top_k 1 on
  Inspect's transformers providers, which sample and refuse temperature 0).
- Scorer: upstream's per-row metric on the completion, prepared as its upstream does
  (`MetricSpec.prepare`: post-processed or as generated; a keyed metric also reads the row's
  task and what its build records, which the sample's metadata carries as `metric_key`, read
  from the manifest when the samples are made: never the config's name); metrics: the task
  score (0..100) per `<task>/<L>` cell, as the metric aggregates it (`MetricSpec.aggregate`)
  and `mean`, the unweighted mean over the cells (the paper's averages).
"""

from __future__ import annotations

from typing import Any, Sequence

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, grouped, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import registry_info

from ruler.cards.inspect_usage import CELL_KEY, MEAN_LABEL, PREFILL_PROVIDERS, greedy_settings
from ruler.eval.metrics import specs as metrics
from ruler.kernel.errors import RulerError


def _as_list(value: Any, what: str) -> list[str]:
    if value is None or value == "" or value == "all":
        return []
    if isinstance(value, (int, str)):
        return [p.strip() for p in str(value).split(",") if p.strip()]
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value]
    raise RulerError(f"-T {what}: expected a comma-separated list, got {value!r}")


def ruler_samples(data: str, revision: str | None = None, tokenizer_config: str | None = None,
                  tasks: Any = None, lengths: Any = None, limit: int | None = None
                  ) -> tuple[list[Sample], dict[str, Any]]:
    """The selected rows as Inspect samples, and the provenance the task's metadata records."""
    from ruler.builder.selection import check_task_names, parse_lengths, split_tasks
    from ruler.eval.records.dataset import open_dataset

    task_list, length_texts = _as_list(tasks, "tasks"), _as_list(lengths, "lengths")
    task_names = split_tasks(",".join(task_list)) if task_list else ()
    length_list = parse_lengths(",".join(length_texts)) if length_texts else ()
    # `-T` values arrive YAML-parsed: a hex commit or a config name may come as a number
    data = str(data)
    revision = None if revision is None else str(revision)
    tokenizer_config = None if tokenizer_config is None else str(tokenizer_config)
    ds = open_dataset(data, revision, tokenizer_config, task_names, length_list)
    # checked once the manifest is read: its declared tasks (catalog.declared) are known
    check_task_names(task_names)
    if tokenizer_config is None:
        if len(ds.configs) != 1:
            raise RulerError(f"dataset {data} holds tokenizer configs {', '.join(ds.configs)}: "
                             f"pass -T tokenizer_config=<the one built for your model's "
                             f"tokenizer>")
        tokenizer_config = ds.configs[0]
    files = ds.files(tokenizer_config, task_names or None, length_list or None)
    if not files:
        raise RulerError(f"dataset {data} config {tokenizer_config!r} has no split files")
    # what a keyed metric reads of the rows' build (a language), from the manifest
    key = _metric_key(ds.build(tokenizer_config), files)
    samples = [Sample(
        id=f"{f.task}/{f.max_seq_length}/{row['index']}",
        input=[ChatMessageUser(content=row["input"])],
        target=list(row["outputs"]),
        metadata={
            "tokenizer": row["tokenizer"], "task": row["task"],
            "max_seq_length": int(row["max_seq_length"]), "index": int(row["index"]),
            CELL_KEY: f"{f.task}/{f.max_seq_length}", "metric": row["metric"],
            "answer_prefix": row["answer_prefix"],
            "tokens_to_generate": int(row["tokens_to_generate"]),
            "length": int(row["length"]), "data_sha256": f.content_sha256,
            "metric_key": key,
        }) for f in files for row in ds.rows(f)[: limit or None]]
    provenance = {"dataset": data, "revision": ds.revision, "tokenizer_config": tokenizer_config,
                  "prompt_mode": ds.build(tokenizer_config).prompt_mode,
                  "files": {f.key: f.content_sha256 for f in files}, "limit": limit}
    return samples, provenance


@solver
def ruler_generate(prefill: bool | None = None) -> Solver:
    """Pre-fill the assistant turn with the row's answer prefix (see the module docstring),
    then generate greedily up to the row's budget."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        use = prefill if prefill is not None else state.model.api in PREFILL_PROVIDERS
        # nothing to pre-fill: an empty assistant turn would be continued, not opened
        use = use and bool(state.metadata["answer_prefix"])
        if use:
            state.messages.append(ChatMessageAssistant(content=state.metadata["answer_prefix"]))
        state.metadata["prefilled"] = bool(use)
        return await generate(state, max_tokens=int(state.metadata["tokens_to_generate"]),
                              **greedy_settings(state.model.api))

    return solve


@metric
def ruler_score() -> Metric:
    """Upstream's task score (0..100) over the scored rows, aggregated as the rows' metric's
    upstream does (each Score's metadata names the metric)."""

    def compute(scores: list[SampleScore]) -> float:
        names = {(s.score.metadata or {}).get("metric") for s in scores}
        name = names.pop() if len(names) == 1 else None
        aggregate = metrics.METRIC_SPECS[name].aggregate \
            if name is not None and name in metrics.METRIC_SPECS else metrics.score_of_rows
        return aggregate([s.score.as_float() for s in scores])

    return compute


def row_score(completion: str, metric_name: str, references: Sequence[str], task: str = "",
              key: str = "") -> float:
    """Upstream's per-row value (0..1) of `metric_name` for one completion (a keyed metric
    also reads the row's task and its build's key: `metrics.MetricSpec.keyed`)."""
    return metrics.row_score(metric_name, completion, references, task, key)


def _metric_key(build: Any, files: Sequence[Any]) -> str:
    """The build key the rows' keyed metric reads (`metrics.build_key`), "" for the others."""
    from ruler.catalog.tasks import TASKS

    names = {TASKS[f.task].metric for f in files if f.task in TASKS}
    for name in sorted(names & metrics.KEYED_METRICS):
        try:
            return metrics.build_key(name, build)
        except ValueError as e:
            raise RulerError(f"metric {name!r} cannot score these rows: {e}") from None
    return ""


@scorer(metrics=[grouped(ruler_score(), CELL_KEY, all="groups", all_label=MEAN_LABEL)])
def ruler_scorer() -> Scorer:
    """The metric of each row (its `metric` column: `eval.metrics.specs.METRIC_SPECS`), named in
    the Score's metadata for the aggregate."""

    async def score(state: TaskState, target: Target) -> Score:
        completion = state.output.completion
        name = state.metadata["metric"]
        value = row_score(completion, name, target.target, state.metadata["task"],
                          state.metadata.get("metric_key", ""))
        return Score(value=value, answer=completion, metadata={"metric": name})

    return score


def _ruler(data: str, revision: str | None = None, tokenizer_config: str | None = None,
           tasks: str | list[str] | None = None, lengths: int | str | list[int] | None = None,
           limit: int | None = None, prefill: bool | None = None) -> Task:
    """RULER on a ruler build (folder) or a released Hub dataset (ORG/NAME at `revision`).

    Args:
        data: build folder or Hub dataset id ORG/NAME.
        revision: Hub revision (release tag or commit); default main.
        tokenizer_config: the dataset config built for the model's tokenizer (default: the
            dataset's only config).
        tasks: comma-separated tasks (default: all in the dataset).
        lengths: comma-separated lengths, e.g. 4096,8192 or 4k (default: all). Inspect holds
            the selected rows in memory: take long lengths one at a time.
        limit: first N samples of each task and length.
        prefill: pre-fill the assistant turn with answer_prefix (default: where the provider
            continues a final assistant message: vllm, sglang).
    """
    samples, provenance = ruler_samples(data, revision, tokenizer_config, tasks, lengths, limit)
    # No task-level temperature: the solver asks each provider for greedy decoding its own way
    # (a task-level temperature 0 would reach providers that refuse it).
    return Task(dataset=MemoryDataset(samples, name=f"ruler-{provenance['tokenizer_config']}"),
                solver=ruler_generate(prefill), scorer=ruler_scorer(),
                metadata={"ruler": provenance})


ruler = task(name="ruler")(_ruler)

# `inspect eval ruler/ruler`: Inspect namespaces a package's tasks only when it can tie the
# import package to a distribution of the same name; ours is `ruler-bench`, so an editable
# install registers the bare `ruler`. Register the namespaced name too in that case.
if registry_info(ruler).name != "ruler/ruler":
    task(name="ruler/ruler")(_ruler)
