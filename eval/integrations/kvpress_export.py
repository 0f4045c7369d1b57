"""`ruler export kvpress`: a build's rows as a dataset folder in the schema of NVIDIA kvpress's
`ruler` dataset (the `"ruler"` entry of its evaluation's `DATASET_REGISTRY`), whatever the
build's benchmark. docs/integrations.md ("Using with kvpress") gives the layout and how kvpress
runs and scores it.

Why `answer_prefix` is not the row's own: kvpress renders the prompt itself (the chat template
of the user turn `context`, cut where the context ends, then `question`, the rest of the
template and `answer_prefix`), and a template may change ruler's pre-filled prefix (Llama 3's
and Gemma 3's trim its spaces). The exported prefix is the text ruler's rendering has after
the generation prompt, so kvpress's prompt is ruler's, character for character
(`KvpressPrompt`, which also tokenizes each task's first row both ways).

Why tasks kvpress would score wrongly are named, not refused: kvpress's scorer picks a task's
metric from the first word of its name (`kvpress_metric`), not from the row. The rows are right
for any benchmark and kvpress's pipeline (what the export is for) runs on them, so the card,
`ruler_kvpress.json` and the console name those tasks and send their predictions to
`ruler score`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from dataclasses import dataclass, field
from itertools import chain, groupby, islice
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from ruler.builder.manifest import BuildEntry
from ruler.builder.schema import schema_problem
from ruler.cards.kvpress_usage import SPLIT
from ruler.cards.render import tokenizer_origin
from ruler.catalog.manifest_records import TokenizerRecord
from ruler.eval.integrations.export_folder import (
    ExportKind,
    check_target,
    publish,
    staging_folder,
)
from ruler.eval.records.dataset import Dataset, SplitFile, default_config, open_dataset
from ruler.kernel.atomic import naming
from ruler.kernel.errors import RulerError
from ruler.kernel.markup import md_code, md_text

#: kvpress's columns, in the order its `ruler` dataset has them.
KVPRESS_COLUMNS = ("context", "question", "answer_prefix", "answer", "task", "max_new_tokens")
#: ruler's row key, kept beside them (`ruler score` reads predictions keyed by it).
KEY_COLUMNS = ("tokenizer", "max_seq_length", "index")
EXPORT_SCHEMA = pa.schema([
    pa.field("context", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("answer_prefix", pa.string(), nullable=False),
    pa.field("answer", pa.list_(pa.string()), nullable=False),
    pa.field("task", pa.string(), nullable=False),
    pa.field("max_new_tokens", pa.int64(), nullable=False),
    pa.field("tokenizer", pa.string(), nullable=False),
    pa.field("max_seq_length", pa.int64(), nullable=False),
    pa.field("index", pa.int64(), nullable=False),
])
METADATA_NAME = "ruler_kvpress.json"
#: What refusals name: the command, its flag for the folder it writes, what that is.
KIND = ExportKind("ruler export kvpress", "--out", "a kvpress export of ruler")
CARD_NAME = "README.md"
#: The kvpress release this export's layout and prompt rendering were checked against
#: (tests/eval/integrations/test_kvpress.py runs its pipeline on an export).
KVPRESS_CHECKED = "0.5.5"
#: The columns read from the build's split files.
_SOURCE_COLUMNS = ("tokenizer", "task", "max_seq_length", "index", "input", "context",
                   "question", "answer_prefix", "outputs", "tokens_to_generate", "metric")
_BATCH = 64


#: kvpress's scorer of its `ruler` dataset (`evaluation/benchmarks/ruler/calculate_metrics.py`
#: in kvpress's repository) scores a task with its copy of RULER's upstream metric
#: `string_match_part` when the first "_"-separated word of the task's name is this word, else
#: with `string_match_all`: kvpress's rule, applied to the task names it reads (the `metric`
#: column values that name the same upstream functions in ruler).
KVPRESS_PART_WORD = "qa"


def kvpress_metric(task: str) -> str:
    """The metric kvpress's scorer gives the rows of task `task`, by its name."""
    return "string_match_part" if task.split("_")[0] == KVPRESS_PART_WORD else "string_match_all"


def split_file_name(length: int) -> str:
    return f"{length}/{SPLIT}-00000-of-00001.parquet"


#: The script docs/integrations.md's "Using with kvpress" section runs (tests/eval/integrations/
#: test_kvpress.py runs it from there) and the export's card shows: kvpress's own pipeline on
#: the exported rows, with no press and two presses, each writing predictions keyed as
#: `ruler score` reads them.
PREDICT_SCRIPT = '''\
"""kvpress's pipeline on a `ruler export kvpress` folder: one predictions file per press.

usage: python kvpress_predict.py MODEL EXPORT_FOLDER LENGTH [DEVICE]
"""
import hashlib
import json
import sys

from datasets import load_dataset
from kvpress import KnormPress, StreamingLLMPress
from transformers import pipeline

model, folder, length = sys.argv[1:4]
device = sys.argv[4] if len(sys.argv) > 4 else "cpu"
pipe = pipeline("kv-press-text-generation", model=model, device=device)
rows = load_dataset(folder, data_dir=length, split="test")
presses = {"no_press": None, "knorm": KnormPress(compression_ratio=0.5),
           "streaming_llm": StreamingLLMPress(compression_ratio=0.5)}
for name, press in presses.items():
    with open(f"predictions-{name}.jsonl", "w") as f:
        for row in rows:
            answer = pipe(row["context"], question=row["question"],
                          answer_prefix=row["answer_prefix"], press=press,
                          max_new_tokens=row["max_new_tokens"])["answer"]
            key = {k: row[k] for k in ("tokenizer", "task", "max_seq_length", "index")}
            # the digest of ruler's `input` (context + question) ties the answer to its row
            prompt = hashlib.sha256((row["context"] + row["question"]).encode()).hexdigest()
            f.write(json.dumps({**key, "input_sha256": prompt, "prediction": answer}) + "\\n")
'''


# --- kvpress's prompt ----------------------------------------------------------------------------

@dataclass
class KvpressPrompt:
    """The prompt kvpress's pipeline builds for a row, made to equal ruler's.

    `tok` is the build's tokenizer (None: the build has no chat template, and kvpress's
    prompt is BOS + context + question + "\\n" + answer_prefix, which differs from ruler's base
    prompt by that newline); `mode` the build's prompt mode (chat, or reasoning for an
    `--output-budget` config: no answer prefix, a generation prompt)."""

    tok: Any
    mode: str
    checked: int = 0  # rows tokenized both ways
    mismatched: list[str] = field(default_factory=list)  # those whose tokens differ
    _tasks_checked: set = field(default_factory=set)

    @property
    def renders_template(self) -> bool:
        return self.tok is not None and self.mode in ("chat", "reasoning")

    def _user_turn_ends(self, context: str) -> tuple[str, str]:
        """kvpress's cut of the chat template around the context: the rendering of the user
        turn `context + separator` with a generation prompt, split at the separator (a run
        of '#' longer than any in the context, as kvpress makes it)."""
        separator = "#" * (len(context) + 10)
        rendered = self.tok.hf.apply_chat_template(
            [{"role": "user", "content": context + separator}], add_generation_prompt=True,
            tokenize=False, enable_thinking=False)
        parts = rendered.split(separator)
        if len(parts) != 2:
            raise RulerError(f"the chat template of tokenizer {self.tok.name!r} renders the "
                             f"user turn {len(parts) - 1} times: kvpress's pipeline cannot cut "
                             f"it at the context")
        return parts[0], parts[1]

    def answer_prefix(self, row: Mapping[str, Any]) -> str:
        """The `answer_prefix` with which kvpress's prompt for `row` is ruler's."""
        if not self.renders_template:
            return row["answer_prefix"]
        before, after = self._user_turn_ends(row["context"])
        head = before + row["question"] + after
        ruler = (self.tok.render_reasoning(row["input"]) if self.mode == "reasoning"
                 else self.tok.render_chat(row["input"], row["answer_prefix"]))
        if not ruler.startswith(head):
            raise RulerError(
                f"{_where(row)}: the chat template of tokenizer {self.tok.name!r} does not "
                f"render ruler's prompt as the user turn followed by the generation prompt, "
                f"which is how kvpress's pipeline builds it; this build cannot be exported for "
                f"kvpress with the same prompt")
        return ruler[len(head):]

    def check_tokens(self, row: Mapping[str, Any], answer_prefix: str) -> None:
        """Tokenize the prompt as kvpress does (its two parts apart, no special tokens added)
        and as ruler counted it (whole); note a row where they differ. Once per task: where
        the prompt is cut, and the template around it, do not depend on the length (the
        export writes the shortest length first), and a 128K prompt takes seconds to encode."""
        if not self.renders_template or row["task"] in self._tasks_checked:
            return
        self._tasks_checked.add(row["task"])
        before, after = self._user_turn_ends(row["context"])
        kvpress_ids = (self.tok.encode(before)
                       + self.tok.encode(row["question"] + after + answer_prefix))
        ruler_ids = self.tok.prompt_ids(row["input"], row["answer_prefix"], self.mode)
        self.checked += 1
        if kvpress_ids != ruler_ids:
            self.mismatched.append(f"{_where(row)} ({len(kvpress_ids)} tokens in kvpress, "
                                   f"{len(ruler_ids)} counted)")


def _where(row: Mapping[str, Any]) -> str:
    return f"{row['tokenizer']}/{row['task']}/{row['max_seq_length']} row {row['index']}"


# --- the export ----------------------------------------------------------------------------------

@dataclass
class KvpressExport:
    """What was written: per length the rows, and the facts the card and metadata state."""

    out: Path
    source: dict[str, Any]
    config: str
    title: str = ""  # the title of the build's benchmark (its `Benchmark` record's)
    lengths: dict[int, int] = field(default_factory=dict)  # L -> rows
    tasks: list[str] = field(default_factory=list)
    build_tasks: list[str] = field(default_factory=list)  # all the config's tasks
    limit: int | None = None
    tokens: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, set[str]] = field(default_factory=dict)  # task -> its rows' `metric`

    def kvpress_scores_otherwise(self) -> dict[str, dict[str, Any]]:
        """The tasks kvpress's scorer would score with another metric than their rows record
        (`kvpress_metric`): task -> {"kvpress": its metric, "rows": the rows' metrics}."""
        return {task: {"kvpress": kvpress_metric(task), "rows": sorted(ms)}
                for task, ms in self.metrics.items() if ms != {kvpress_metric(task)}}

    def kvpress_scoring_notes(self, name: Callable[[str], str] = str) -> list[str]:
        """One sentence per task of `kvpress_scores_otherwise`, in task order, each task and
        metric shown by `name` (the card's: `md_code`)."""
        return [f"kvpress would score {name(task)} with {name(m['kvpress'])}; these rows' "
                f"{'metric is' if len(m['rows']) == 1 else 'metrics are'} "
                f"{', '.join(map(name, m['rows']))}: score kvpress's predictions with "
                f"`ruler score`"
                for task, m in self.kvpress_scores_otherwise().items()]


def export_kvpress(source: str, out: str | os.PathLike, revision: str | None = None,
                   config: str | None = None, tasks: Sequence[str] | None = None,
                   lengths: Sequence[int] | None = None, limit: int | None = None,
                   tokenizer: str | None = None) -> KvpressExport:
    """`ruler export kvpress`: the rows of `source` (a build folder or a Hub dataset ORG/NAME
    at `revision`), one config (the only one, or `config`), optionally only some tasks and
    lengths and the first `limit` rows of each, written to `out` in kvpress's schema."""
    if limit is not None and limit < 1:
        raise RulerError(f"--limit must be >= 1, got {limit}")
    out = Path(out)
    check_target(out, KIND)  # before any work; again when it is replaced
    ds = open_dataset(source, revision, config, tasks, lengths, one_config=config is None)
    config = config or default_config(ds)
    files = ds.files(config, tasks or None, lengths or None)
    if not files:
        raise RulerError(f"dataset {source} config {config!r} has no files")
    for f in files:
        _check_columns(f)
    build = ds.build(config)
    prompt = KvpressPrompt(_build_tokenizer(ds, config, build, tokenizer)
                           if build.tokenizer.chat_template_sha256 else None,
                           build.prompt_mode or "chat")
    result = KvpressExport(out, _source_record(ds, config, build, revision), config,
                           build.spec().title, limit=limit,
                           tasks=_ordered_tasks(files),
                           build_tasks=_ordered_tasks(ds.files(config)))
    tmp = staging_folder(out)
    try:
        with naming(out, tmp):  # a full disk names the file of OUT, not of the staging
            # `Dataset.files` lists the files shortest length first
            for L, group in groupby(files, key=lambda f: f.max_seq_length):
                result.lengths[L] = _write_length(tmp / split_file_name(L), ds, list(group),
                                                  prompt, limit, result.metrics)
            result.tokens = {"checked": prompt.checked, "mismatched": prompt.mismatched,
                             "template": prompt.renders_template}
            (tmp / METADATA_NAME).write_text(json.dumps(metadata(result), indent=2,
                                                        sort_keys=True) + "\n",
                                             encoding="utf-8")
            (tmp / CARD_NAME).write_text(render_card(result), encoding="utf-8")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    publish(tmp, out, KIND)
    return result


def _check_columns(f: SplitFile) -> None:
    schema = pq.ParquetFile(f.path).schema_arrow
    if "context" not in schema.names or "question" not in schema.names:
        raise RulerError(f"{f.path}: {schema_problem(schema)}")


def _build_tokenizer(ds: Dataset, config: str, build: BuildEntry,
                     override: str | None):
    """The build's tokenizer, checked to be the one its manifest records (its chat template
    renders the prompts)."""
    from ruler.builder.verify.tokenizers import tokenizer_for

    tok, problems = tokenizer_for(config, build, {config: override} if override else {}, None)
    if problems:
        raise RulerError(f"the exported answer prefixes are rendered with the build's chat "
                         f"template: {problems[0].message} (or pass --tokenizer PATH)")
    if getattr(tok, "hf", None) is None:
        raise RulerError(f"tokenizer {tok.name!r} of config {config!r} has a chat template but "
                         f"is not a Hugging Face tokenizer")
    return tok


def _source_record(ds: Dataset, config: str, build: BuildEntry,
                   asked: str | None) -> dict[str, Any]:
    from ruler.builder.manifest import MANIFEST_NAME
    from ruler.kernel.hashing import file_sha256

    tok = build.tokenizer
    on_hub = ds.revision is not None
    return {
        "dataset": ds.spec if on_hub else str(Path(ds.spec).expanduser().resolve()),
        "revision": ds.revision,  # the commit the files came from
        "revision_asked": asked,  # what the user named (a tag, a branch, the commit)
        "manifest_sha256": file_sha256(ds.root / MANIFEST_NAME),
        "generator": dict(ds.manifest.generator or {}),
        "config": config,
        "tokenizer": {k: getattr(tok, k) for k in ("name", "kind", "repo", "revision", "pinned")},
        "prompt_mode": build.prompt_mode,
        "variant": dict(build.variant or {}),
        "seed": build.seed,
        "samples": build.samples,
        "official": bool(build.official),
    }


def _ordered_tasks(files: Iterable[SplitFile]) -> list[str]:
    return list(dict.fromkeys(f.task for f in files))


def _rows(ds: Dataset, f: SplitFile, limit: int | None) -> Iterator[dict[str, Any]]:
    return islice(chain.from_iterable(ds.iter_rows(f, _SOURCE_COLUMNS, _BATCH)), limit)


def _write_length(path: Path, ds: Dataset, files: Sequence[SplitFile], prompt: KvpressPrompt,
                  limit: int | None, metrics: dict[str, set[str]]) -> int:
    """One length's file: every task's rows (the first `limit` of each), streamed; each row's
    `metric` noted under its task in `metrics`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    seen: dict[str, tuple[str, int, str]] = {}  # context -> (answer_prefix, budget, row)
    written = 0

    def exported(row: Mapping[str, Any]) -> dict[str, Any]:
        prefix = prompt.answer_prefix(row)
        prompt.check_tokens(row, prefix)
        _same_group(seen, row, prefix)
        metrics.setdefault(row["task"], set()).add(row["metric"])
        return {"context": row["context"], "question": row["question"],
                "answer_prefix": prefix, "answer": list(row["outputs"]), "task": row["task"],
                "max_new_tokens": row["tokens_to_generate"], **{k: row[k] for k in KEY_COLUMNS}}

    with pq.ParquetWriter(path, EXPORT_SCHEMA, compression="zstd") as writer:
        for f in files:  # a file's rows in batches of _BATCH (the last one shorter)
            rows = map(exported, _rows(ds, f, limit))
            while batch := list(islice(rows, _BATCH)):
                writer.write_table(pa.Table.from_pylist(batch, schema=EXPORT_SCHEMA))
                written += len(batch)
    return written


def _same_group(seen: dict[str, tuple[str, int, str]], row: Mapping[str, Any],
                prefix: str) -> None:
    """kvpress asks all questions of one context in one call, with the first row's answer
    prefix and budget: rows sharing a context must share those (it asserts the prefix)."""
    key = row["context"]
    mine = (prefix, row["tokens_to_generate"], _where(row))
    other = seen.setdefault(key, mine)
    if other[:2] != mine[:2]:
        raise RulerError(f"{mine[2]} and {other[2]} have the same context but another answer "
                         f"prefix or budget: kvpress would ask both with one of them")


# --- the folder ----------------------------------------------------------------------------------

def metadata(e: KvpressExport) -> dict[str, Any]:
    """`ruler_kvpress.json`: with `kvpress_scores_otherwise` only where kvpress's scorer would
    score a task with another metric than its rows' (an export it fits is as it always was)."""
    other = e.kvpress_scores_otherwise()
    return {"format": "kvpress-ruler", "kvpress_checked": KVPRESS_CHECKED, "split": SPLIT,
            "columns": [*KVPRESS_COLUMNS, *KEY_COLUMNS], "source": e.source,
            "tasks": e.tasks, "lengths": {str(L): n for L, n in e.lengths.items()},
            "limit": e.limit, "prompt_tokens": e.tokens,
            **({"kvpress_scores_otherwise": other} if other else {})}


def front_matter(e: KvpressExport) -> dict[str, Any]:
    """One config per length (named by it), whose split `test` is that length's file: what
    `load_dataset(DIR, "4096")` reads; `data_dir="4096"` (kvpress's way) reads the same."""
    return {"configs": [{"config_name": str(L),
                         "data_files": [{"split": SPLIT, "path": f"{L}/{SPLIT}-*"}]}
                        for L in sorted(e.lengths)],
            "tags": ["ruler", "long-context", "kvpress"]}


def render_card(e: KvpressExport) -> str:
    s = e.source
    tok = s["tokenizer"]
    asked = (f" ({md_code(s['revision_asked'])})" if s.get("revision_asked")
             and s["revision_asked"] != s["revision"] else "")
    where = (f"Hub dataset {md_code(s['dataset'])} at commit {md_code(s['revision'])}{asked}"
             if s["revision"] else f"the local build {md_code(s['dataset'])}")
    # the export's source record keeps the manifest's tokenizer fields (`_source_record`)
    tok_text = md_code(tok["name"]) + (
        f" ({md_text(tokenizer_origin(TokenizerRecord.from_json(tok)))})"
        if tok.get("repo") else "")
    lengths = sorted(e.lengths)
    L = lengths[0]
    limited = (f"the first {e.limit} rows of each task and length" if e.limit
               else "every row")
    # a shell command in a code block: the folder quoted as a shell reads it
    data_arg = (f"--data {shlex.quote(s['dataset'])} --revision "
                f"{shlex.quote(s['revision_asked'] or s['revision'])}"
                if s["revision"] else f"--data {shlex.quote(s['dataset'])}")
    score_limit = (f" --tasks {','.join(e.tasks)}" if e.tasks != e.build_tasks else "") + \
        (f" --limit {e.limit}" if e.limit else "")
    tokens = e.tokens
    if not tokens.get("template"):
        prompt_note = (
            "The build's tokenizer has no chat template: kvpress's prompt is BOS + `context` + "
            "`question` + \"\\n\" + `answer_prefix`, ruler's has no \"\\n\" before the prefix "
            "(`length` was counted without it).")
    elif tokens.get("mismatched"):
        prompt_note = (
            f"kvpress's prompt text equals ruler's, but tokenized as kvpress does (context "
            f"and question apart) it differs from ruler's count on "
            f"{len(tokens['mismatched'])} of {tokens['checked']} rows checked (e.g. "
            f"{md_text(tokens['mismatched'][0])}).")
    else:
        prompt_note = (
            f"kvpress's prompt is ruler's, character for character (the chat template of "
            f"{tok_text}, the assistant turn pre-filled), and token for token on the "
            f"{tokens['checked']} rows checked (each task's first, at the shortest length).")
    reasoning = (
        "\n- This is a reserved-output-budget config (a reasoning model's): `answer_prefix` is "
        "empty and the prompt ends with the generation prompt; for a template with "
        "`enable_thinking`, call the pipeline with `enable_thinking=True` (kvpress's default "
        "turns thinking off)." if s.get("prompt_mode") == "reasoning" else "")
    built_by = (f"{s['generator'].get('name', 'ruler')} {s['generator'].get('version', '')}, "
                f"seed {s['seed']}, {s['samples']} samples per task and length, "
                + ("official" if s["official"] else "unofficial (see the source card)"))
    columns = "\n".join(f"| {name} | {meaning} |" for name, meaning in COLUMN_DOCS)
    score_command = (f"ruler score --predictions predictions-knorm.jsonl {data_arg} "
                     f"--tokenizer-config {e.config} --lengths {L}{score_limit}")
    front = yaml.safe_dump(front_matter(e), sort_keys=False, allow_unicode=True)
    scoring = "".join(f"- {note}.\n" for note in e.kvpress_scoring_notes(md_code))
    if scoring:
        scoring = ("\nkvpress's scorer picks a task's metric by its name (the `task` column "
                   "above), not as these rows record it:\n\n" + scoring)
    rows = "\n".join(f"| `{L_}` | {n} |" for L_, n in sorted(e.lengths.items()))
    return f"""---
{front}---

# {md_text(e.title)} for kvpress: {md_code(e.config)}, {', '.join(map(str, lengths))}

{md_text(e.title)} rows in the schema of [kvpress](https://github.com/NVIDIA/kvpress)'s \
`ruler` dataset,
written by `ruler export kvpress` (layout and prompt checked against kvpress {KVPRESS_CHECKED}).

- source: {where}, manifest sha256 `{s['manifest_sha256']}`
- config: {md_code(e.config)} (prompt mode {md_text(s['prompt_mode'])}{_variant_text(s['variant'])})
- tokenizer: {tok_text}
- built by: {built_by}
- rows: {limited}

| length (`data_dir`) | rows |
|---|---|
{rows}

Tasks: {', '.join(map(md_code, e.tasks))}.

```python
from datasets import load_dataset
ds = load_dataset("path/to/this/folder", data_dir="{L}", split="{SPLIT}")  \
# as kvpress loads its datasets
```

## Columns

| column | meaning |
|---|---|
{columns}

## Prompt

{prompt_note}{reasoning}
- The rows were fitted to the build's tokenizer: use a model whose tokenizer it is.

## Run kvpress and score with ruler

Save as `kvpress_predict.py` (kvpress's `kv-press-text-generation` pipeline on these rows, with
no press, Knorm and StreamingLLM at compression ratio 0.5; the script the generator's documentation
runs in its tests):

```python
{PREDICT_SCRIPT}```

```bash
python kvpress_predict.py MODEL path/to/this/folder {L} cuda:0
{score_command}
```

Score where ruler is installed (`pip install ruler-bench`); kvpress's environment needs only
kvpress. kvpress's evaluation script (`evaluation/evaluate.py` in its repository, not in the
pip package) takes a dataset name from its `DATASET_REGISTRY` and calls `load_dataset(that,
data_dir=..., split="test")`: make its `"ruler"` entry this folder's path and pass
`--data_dir {L}`. Its predictions.csv keeps every column but `context`, so the key columns
are there for `ruler score` too.
{scoring}"""


#: The export card's column table.
COLUMN_DOCS = (
    ("`context`", "the prompt up to the question: everything the task shows before it (its "
                  "instruction, its haystack, a solved example where the task has one)"),
    ("`question`", "the task's query text after the context; `context + question` is ruler's "
                   "`input`"),
    ("`answer_prefix`", "the text the assistant turn starts with, as ruler's prompt renders it "
                        "after the generation prompt"),
    ("`answer`", "the references (list of strings)"),
    ("`task`", f"the row's task; kvpress's scorer picks the task's metric by the name's first "
               f"word: `string_match_part` for `{KVPRESS_PART_WORD}`, `string_match_all` for "
               f"any other"),
    ("`max_new_tokens`", "the task's generation budget"),
    ("`tokenizer`, `max_seq_length`, `index`", "the row's key in the ruler build (kvpress "
                                               "ignores them; `ruler score` reads predictions "
                                               "keyed by them)"),
)


def _variant_text(variant: Mapping[str, Any]) -> str:
    return "".join(f", {k} = {v}" for k, v in sorted(variant.items()))
