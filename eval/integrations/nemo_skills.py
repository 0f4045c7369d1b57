"""NeMo-Skills output -> prediction records for `ruler score`, keyed by the prompt text.

`ns eval` (NVIDIA-NeMo/Skills) writes, per benchmark, `eval-results/<benchmark>/output.jsonl`
(`output-rs<seed>.jsonl` with several random seeds; `nemo_skills/inference/generate.py`,
`GenerationTask.postprocess_single_output`, read at commit 01462f39): one JSON object per input
row, holding that row's own fields (for its RULER benchmarks: `index`, `question` = the whole
user message, `expected_answer`, `length`) plus the model's `generation` and statistics
(`num_generated_tokens`, `generation_time`, ...), and after evaluation `is_correct` or
`symbolic_correct` and `predicted_answer`. With `++parse_reasoning=True` the `generation` is
the text after the reasoning (the whole output moves to `_full_generation`); either way
`generation` is what NeMo-Skills scores, and what is scored here.

The records carry no key of ours, so each is matched to a row of the dataset by its prompt:
`question` (or `input`) equal to the row's `input`, or to `input` + the stripped answer prefix
(NeMo-Skills' v1 `ruler` with `--use_chat_completions` appends it to the question;
`nemo_skills/dataset/ruler/prepare.py`). Where the record keeps `expected_answer`, it must be
the row's references (a list, or the bare letter of a multiple-choice row). A record that
matches no row was made from other rows (another build, tokenizer, length or generator run):
the records are refused, naming them, rather than scored against rows they were not made for.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Sequence, cast

from ruler.eval.records.build_tie import prompt_digest
from ruler.eval.records.dataset import Dataset, SplitFile
from ruler.eval.records.predictions import KEY_COLUMNS, read_records
from ruler.eval.scoring.prediction_readers import PredictionReader
from ruler.eval.scoring.prediction_source import PredictionSource
from ruler.kernel.errors import RulerError

PROMPT_FIELDS = ("question", "input")  # NeMo-Skills' prompt field; `input` in RULER's own rows
_SHOWN = 5
#: How much of a file's first line is read to tell its format (a record holds a whole prompt:
#: about 4 bytes a token, 128K tokens ~ 0.5 MB).
_FIRST_LINE = 1 << 25


def is_nemo_skills_output(path: Path) -> bool:
    """A JSON-lines file whose first record has a `generation` and a prompt field and none of
    our key columns: NeMo-Skills' output, whatever the file is called (`ns eval` writes
    `output.jsonl`, `output-rs<seed>.jsonl`; a copy may be called anything)."""
    path = Path(path)
    if not path.is_file():
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            first = fh.readline(_FIRST_LINE)
    except OSError:
        return False
    try:
        record = json.loads(first)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser: not this
        return False
    return isinstance(record, dict) and "generation" in record \
        and any(f in record for f in PROMPT_FIELDS) and "tokenizer" not in record


def nemo_skills_files(folder: Path) -> list[Path]:
    """NeMo-Skills outputs under a folder (an `eval-results/` folder or one benchmark's), by
    their content."""
    return sorted(p for p in Path(folder).rglob("*.jsonl") if is_nemo_skills_output(p))


def _one_seed_each(paths: Sequence[Path]) -> None:
    """Several random seeds of one benchmark are several predictions of the same rows: one
    scores one of them."""
    by_folder: dict[Path, list[str]] = {}
    for p in paths:
        by_folder.setdefault(Path(p).parent, []).append(Path(p).name)
    for folder, names in sorted(by_folder.items()):
        if len(names) > 1:
            raise RulerError(f"{folder} holds {len(names)} NeMo-Skills outputs of one benchmark "
                             f"({', '.join(sorted(names))}): pass one file (one random seed)")


def read_nemo_skills(paths: Sequence[Path]) -> PredictionSource:
    """The records of NeMo-Skills output files, not yet keyed (`key_by_prompt` keys them)."""
    _one_seed_each(paths)
    records = []
    for path in paths:
        for n, raw in enumerate(read_records(path), 1):
            prompt = next((raw[f] for f in PROMPT_FIELDS if isinstance(raw.get(f), str)), None)
            if prompt is None:
                raise RulerError(f"{path}:{n}: a NeMo-Skills record without its prompt "
                                 f"(`question`): the input row's fields are needed to find "
                                 f"the row it answers")
            generation = raw.get("generation")
            record = {"_prompt": prompt, "_where": f"{path}:{n}",
                      "_upstream_index": raw.get("index")}
            if "expected_answer" in raw:
                record["_expected"] = raw["expected_answer"]
            if isinstance(generation, str):
                record.update(prediction=generation, status="ok")
            else:
                record.update(prediction=None, status="error",
                              reason=f"NeMo-Skills wrote no generation ({generation!r})")
            records.append(record)
    return PredictionSource(records, by_prompt=True)


def _prompt_index(ds: Dataset, files: Iterable[SplitFile]) -> dict[str, list[tuple]]:
    """sha256 of each row's prompt forms -> [(file, index, outputs)] (the texts themselves are
    not kept: a 128K row's prompt is megabytes)."""
    index: dict[str, list[tuple]] = {}
    for f in files:
        for batch in ds.iter_rows(f, ("index", "input", "answer_prefix", "outputs"), 64):
            for r in batch:
                entry = (f, int(r["index"]), list(r["outputs"]))
                forms = {r["input"], r["input"] + (r["answer_prefix"] or "").strip()}
                for text in forms:
                    index.setdefault(prompt_digest(text), []).append(entry)
    return index


def _expected_matches(expected: Any, outputs: list[str]) -> bool:
    return expected == outputs or (len(outputs) == 1 and expected == outputs[0])


def _describe(record: dict[str, Any]) -> str:
    start = record["_prompt"][:50].replace("\n", " ")
    return f"{record['_where']} (index {record['_upstream_index']}, {start!r}...)"


def key_by_prompt(source: PredictionSource, ds: Dataset, config: str | None,
                  tasks: Sequence[str] | None = None,
                  lengths: Sequence[int] | None = None) -> None:
    """Give every record the key of the dataset row whose prompt it holds (in place); the
    cells found become the cells the run asked for. `config` None: the one config (of the
    dataset's) whose rows all records match."""
    configs = [config] if config else list(ds.configs)
    matched: dict[str, list[tuple | None]] = {}
    for c in configs:
        index = _prompt_index(ds, ds.files(c, tasks or None, lengths or None))
        matched[c] = [_match(r, index) for r in source.records]
    full = [c for c in configs if all(m is not None for m in matched[c])]
    if len(full) > 1:
        raise RulerError(f"the NeMo-Skills records match the rows of several configs "
                         f"({', '.join(full)}): name one with --tokenizer-config")
    counts = {c: sum(m is not None for m in matched[c]) for c in configs}
    best = max(counts.values(), default=0)
    nearest = [c for c in configs if counts[c] == best]
    chosen = full[0] if full else nearest[0]
    misses = [r for r, m in zip(source.records, matched[chosen]) if m is None]
    if misses:
        shown = "; ".join(_describe(r) for r in misses[:_SHOWN])
        more = f" and {len(misses) - _SHOWN} more" if len(misses) > _SHOWN else ""
        if len(configs) == 1:
            where = f"config {chosen!r}"
        elif best == 0:  # no config is nearer than another: none is named as theirs
            where = f"in any of its {len(configs)} configs ({', '.join(configs)})"
        else:
            where = (f"config {' or '.join(repr(c) for c in nearest)} (whose rows "
                     f"{best} of the {len(source.records)} match; "
                     f"{', '.join(f'{c}: {counts[c]}' for c in configs if c not in nearest)})")
        raise RulerError(f"{len(misses)} NeMo-Skills record(s) match no row of dataset "
                         f"{ds.spec} {where} by their prompt and expected answer: "
                         f"{shown}{more}. They were made from other rows (another build, "
                         f"tokenizer or length): score them against the dataset they came "
                         f"from")
    for r, (f, i) in zip(source.records, cast("list[tuple]", matched[chosen])):  # none missed
        r.update(zip(KEY_COLUMNS, (f.config, f.task, f.max_seq_length, i)))
        r["data_sha256"] = f.content_sha256
        for k in ("_prompt", "_where", "_upstream_index", "_expected"):
            r.pop(k, None)
    source.asked = {(r["tokenizer"], r["task"], r["max_seq_length"]) for r in source.records}


def _match(record: dict[str, Any], index: dict[str, list[tuple]]) -> tuple | None:
    """(file, row index) of the one row the record's prompt (and expected answer) names."""
    found = {(f, i) for f, i, outputs in index.get(prompt_digest(record["_prompt"]), [])
             if "_expected" not in record or _expected_matches(record["_expected"], outputs)}
    if len(found) > 1:
        places = ", ".join(f"{f.key}#{i}" for f, i in sorted(found, key=lambda x: (x[0].key,
                                                                                  x[1])))
        raise RulerError(f"{_describe(record)} matches several rows ({places}): the prompt "
                         f"does not say which one it answers")
    return found.pop() if found else None


#: `ruler score` reads NeMo-Skills output through this (`eval.scoring.prediction_readers`); its
#: records are keyed by their prompt (`key_by_prompt`).
READER = PredictionReader(
    name="nemo-skills", what=("NeMo-Skills output (JSON lines with `generation` and the prompt, "
                              "as ns eval's output.jsonl)", "NeMo-Skills output"),
    claims=is_nemo_skills_output, files_in=nemo_skills_files, read=read_nemo_skills,
    key_rows=key_by_prompt)
