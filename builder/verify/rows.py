"""One split file: its bytes, its Parquet schema and content hash, and every row's checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import pyarrow.parquet as pq

from ruler.builder.hashing import file_sha256
from ruler.builder.manifest import content_sha256_rows
from ruler.builder.schema import ROW_SCHEMA
from ruler.builder.tasks.catalog import TASKS
from ruler.builder.tasks.checks import check_row
from ruler.builder.variants import with_output_budget
from ruler.builder.verify.findings import DEFAULT_SAMPLE, FileResult, Problem


def sample_indices(n: int, full: bool, sample: int) -> set[int]:
    if full or n <= sample:
        return set(range(n))
    # evenly spaced, always including the first and the last row; deterministic
    return {round(i * (n - 1) / max(1, sample - 1)) for i in range(sample)}


class RowChecker:
    """Every per-row check of one file, applied as rows stream past (constant memory)."""

    def __init__(self, res: FileResult, entry: Mapping[str, Any], tokenizer, mode: str | None,
                 retokenize: set[int], output_budget: int | None = None):
        self.res, self.tokenizer, self.mode, self.retokenize = res, tokenizer, mode, retokenize
        spec = TASKS.get(entry["task"])
        if spec is not None:  # a variant's budget (builder.variants) replaces the task's own
            spec = with_output_budget(spec, output_budget)
        self.expected = {"tokenizer": entry["config"], "task": entry["task"],
                         "max_seq_length": entry["max_seq_length"]}
        if spec is not None:
            self.expected.update(tokens_to_generate=spec.tokens_to_generate, metric=spec.metric)
        else:
            res.problems.append(Problem(res.path, f"unknown task {entry['task']!r}"))
        self.L = entry["max_seq_length"]
        self.fields_ok = self.answers_ok = spec is not None

    def __call__(self, i: int, row: dict) -> None:
        path = self.res.path
        wrong = [f"{k}={row[k]!r} (expected {v!r})"
                 for k, v in (*self.expected.items(), ("index", i)) if row[k] != v]
        if row["length"] > self.L:
            wrong.append(f"length {row['length']} > L = {self.L}")
        if wrong:
            self.fields_ok = False
            self.res.problems.append(Problem(path, "; ".join(wrong), row=i))
            return  # a row of the wrong task would only add confusing answer findings
        try:
            why = check_row(row)
        except Exception as e:  # a malformed row must be reported, not crash the run
            why = f"answer check failed: {type(e).__name__}: {e}"
        if why:
            self.answers_ok = False
            self.res.problems.append(Problem(path, f"answer not recoverable: {why}", row=i))
        if self.tokenizer is not None and self.mode is not None and i in self.retokenize:
            got = self.tokenizer.prompt_length(row["input"], row["answer_prefix"],
                                               mode=self.mode) + row["tokens_to_generate"]
            self.res.retokenized += 1
            if got != row["length"]:
                self.res.problems.append(Problem(path, f"stored length {row['length']}, "
                                                       f"re-tokenized {got}", row=i))


def verify_file(out: Path, rel: str, entry: Mapping[str, Any], tokenizer, mode: str | None,
                full: bool = False, sample: int = DEFAULT_SAMPLE,
                output_budget: int | None = None) -> FileResult:
    res = FileResult(rel)
    path = out / rel
    if not path.is_file():
        res.problems.append(Problem(rel, "missing (listed in manifest.json)"))
        return res
    size, digest = path.stat().st_size, file_sha256(path)
    if size != entry.get("bytes") or digest != entry.get("sha256"):
        res.problems.append(Problem(rel, f"file bytes differ from manifest.json ({size} bytes, "
                                         f"sha256 {digest}; manifest: {entry.get('bytes')} "
                                         f"bytes, sha256 {entry.get('sha256')})"))
    else:
        res.bytes_ok = True
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
    except Exception as e:  # pyarrow raises several types for corrupt or truncated files
        res.problems.append(Problem(rel, f"not readable as Parquet: {type(e).__name__}: {e}"))
        return res
    if not schema.remove_metadata().equals(ROW_SCHEMA):
        res.problems.append(Problem(rel, f"schema differs from ROW_SCHEMA: {schema}"))
        return res
    n = parquet.metadata.num_rows
    check = RowChecker(res, entry, tokenizer, mode, sample_indices(n, full, sample),
                       output_budget)

    def rows():
        i = 0
        for batch in parquet.iter_batches(batch_size=64):
            for row in batch.to_pylist():
                check(i, row)
                i += 1
                yield row
        res.rows = i

    try:
        # one pass: the content hash (builder.manifest's definition) and every row check
        content = content_sha256_rows(rows())
    except Exception as e:
        res.problems.append(Problem(rel, f"not readable as Parquet: {type(e).__name__}: {e}"))
        return res
    if res.rows != entry.get("rows"):
        res.problems.append(Problem(rel, f"{res.rows} rows, manifest.json says "
                                         f"{entry.get('rows')}"))
    if content != entry.get("content_sha256"):
        res.problems.append(Problem(rel, "row content differs from manifest.json "
                                         "(content_sha256)"))
    res.content_ok = res.rows == entry.get("rows") and content == entry.get("content_sha256")
    res.rows_ok, res.answers_ok = check.fields_ok, check.answers_ok
    return res
