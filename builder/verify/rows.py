"""One split file: its bytes, its Parquet schema and content hash, and every row's checks."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pyarrow.parquet as pq

from ruler.benchmarks import DEFAULT
from ruler.builder.findings import DEFAULT_SAMPLE, FileReport, Problem
from ruler.builder.manifest import FileEntry, canonical_row_bytes, content_sha256_rows
from ruler.builder.row_checks import FIELDS, RowRules, row_findings
from ruler.builder.schema import ROW_SCHEMA, schema_problem
from ruler.builder.verify.regenerate import Regenerator, rows_to_regenerate
from ruler.catalog.checks import check_row, gold_spans, needs_generator, with_build
from ruler.catalog.family import family_of
from ruler.catalog.length_rules import PROMPT_AND_OUTPUT, counted_output
from ruler.catalog.variants import NO_VARIANT, Variant
from ruler.kernel.hashing import file_sha256


@dataclass(frozen=True)
class RowsPlan:
    """Which rows of a file get the expensive checks, and what they need."""

    retokenize: set[int] = field(default_factory=set)  # length and gold positions re-derived
    regenerate: set[int] = field(default_factory=set)  # rebuilt and compared byte for byte
    regenerator: Regenerator | None = None


def sample_indices(n: int, full: bool, sample: int) -> set[int]:
    if full or n <= sample:
        return set(range(n))
    # evenly spaced, always including the first and the last row; deterministic
    return {round(i * (n - 1) / max(1, sample - 1)) for i in range(sample)}


@dataclass(frozen=True)
class Build:
    """What a file's checks read of its build as the manifest records it: the benchmark, its
    axes' values (a `language`, as recorded) and the file's length rule."""

    benchmark: str = DEFAULT
    axes: Mapping[str, Any] = field(default_factory=dict)
    length_rule: str = PROMPT_AND_OUTPUT


class RowChecker:
    """Every per-row check of one file, applied as rows stream past (constant memory): the
    checks the build's worker makes too (`ruler.builder.row_checks`), then those that need
    the tokenizer or the generator."""

    def __init__(self, res: FileReport, entry: FileEntry, tokenizer, mode: str | None,
                 plan: RowsPlan, variant: Variant = NO_VARIANT, build: Build = Build()):
        self.res, self.tokenizer, self.mode, self.plan = res, tokenizer, mode, plan
        self.build = build  # what the build and the file record (benchmark, axes, rule)
        self.retokenize = plan.retokenize
        self._generator: Any = None  # the task's generator (QA gold documents), made once
        self.variant = variant  # the build's: its budget and its own row rule are expected
        self.rules = RowRules.of(entry.config, entry.task, entry.max_seq_length, variant,
                                 build.benchmark)
        self.spec = spec = self.rules.spec
        if spec is None:
            res.problems.append(Problem(res.path, f"unknown task {entry.task!r}"))
        self.fields_ok = self.answers_ok = spec is not None
        self.short_at_bound = 0  # rows below the fill promise that hold all their inputs

    def __call__(self, i: int, row: dict) -> None:
        path = self.res.path
        verdict = row_findings(self.rules, i, row,
                               lambda r: check_row(with_build(r, self.build.axes)),
                               self._at_bound)
        for finding in verdict.findings:
            if finding.kind == FIELDS:
                self.fields_ok = False
            else:
                self.answers_ok = False
            self.res.problems.append(Problem(path, finding.message, row=i))
        for note in verdict.notes:
            if note not in self.res.notes:
                self.res.notes.append(note)
        self.short_at_bound += verdict.short_at_bound
        if self.spec is None or verdict.foreign:
            return  # a row of the wrong task would only add confusing findings
        if self.tokenizer is not None and self.mode is not None and i in self.retokenize:
            got = self.tokenizer.prompt_length(row["input"], row["answer_prefix"],
                                               mode=self.mode) \
                + counted_output(self.build.length_rule, row["tokens_to_generate"])
            self.res.retokenized += 1
            if got != row["length"]:
                self.res.problems.append(Problem(path, f"stored length {row['length']}, "
                                                       f"re-tokenized {got}", row=i))
            if self.variant.answers_in_input:
                self._check_gold(i, row)
        if i in self.plan.regenerate:
            self._check_regenerated(i, row)

    def _at_bound(self, row: Mapping[str, Any]) -> bool | str:
        """Whether a row holds every unit its task's inputs have (its generator's
        `max_size`), or why that cannot be told here."""
        generator = self._generator_for(row)
        if isinstance(generator, str):
            return generator
        return row["haystack_size"] == generator.max_size

    def _generator_for(self, row: Mapping[str, Any]):
        if self._generator is None:
            regen = self.plan.regenerator
            self._generator = (regen.generator(row["tokenizer"], row["task"],
                                               row["max_seq_length"]) if regen is not None
                               else "no generator here")
        return self._generator

    def _check_gold(self, i: int, row: dict) -> None:
        """Gold positions and depths re-derived: the gold items' offsets in `input`
        (ruler.catalog.checks.gold_spans), token indices by a fresh tokenization."""
        generator = None
        if needs_generator(row["task"]):
            generator = self._generator_for(row)
            if isinstance(generator, str):
                note = f"gold positions not re-derived: {generator}"
                if note not in self.res.notes:
                    self.res.notes.append(note)
                return
        spans = gold_spans(with_build(row, self.build.axes), generator)
        if isinstance(spans, str):
            self.res.problems.append(Problem(self.res.path, f"gold items: {spans}", row=i))
            return
        offsets, (c0, c1) = spans
        cut = family_of(row["task"]).question_start(row["input"], (c0, c1))
        if cut != len(row["context"]):
            self.res.problems.append(Problem(
                self.res.path, f"question starts at character {len(row['context'])}, the "
                               f"task family's split of input puts it at {cut}", row=i))
        marks = self.tokenizer.token_index_at(row["input"], [*offsets, c0, c1])
        gold, (t0, t1) = marks[:-2], marks[-2:]
        depths = [(p - t0) / max(1, t1 - t0) for p in gold]
        self.res.gold_checked += 1
        if gold != row["gold_token_positions"] or depths != row["gold_depths"]:
            self.res.problems.append(Problem(
                self.res.path, f"gold_token_positions {row['gold_token_positions']} / "
                               f"gold_depths {row['gold_depths']}, re-derived {gold} / "
                               f"{depths}", row=i))

    def _check_regenerated(self, i: int, row: dict) -> None:
        regen = self.plan.regenerator
        if regen is None:
            self.res.problems.append(Problem(self.res.path, "cannot regenerate: no generator",
                                             row=i))
            return
        rebuilt = regen.row(row["tokenizer"], row["task"], row["max_seq_length"], i)
        if isinstance(rebuilt, str):
            self.res.problems.append(Problem(self.res.path, f"cannot regenerate: {rebuilt}",
                                             row=i))
            return
        fresh, canonical = rebuilt
        self.res.regenerated += 1
        if canonical != canonical_row_bytes(row):
            fields = [k for k in fresh if fresh[k] != row.get(k)]
            self.res.problems.append(Problem(
                self.res.path, f"regenerated from the manifest's identity, the row differs "
                               f"in {', '.join(fields) or 'its encoding'}"
                               f"{regen.version_note(row['tokenizer'])}", row=i))


def verify_file(out: Path, rel: str, entry: FileEntry, tokenizer, mode: str | None,
                full: bool = False, sample: int = DEFAULT_SAMPLE, regenerate: int = 0,
                regenerator: Regenerator | None = None,
                variant: Variant = NO_VARIANT, build: Build = Build()) -> FileReport:
    """Check one split file; `variant` is its build's (read from the manifest's `variant`),
    `build` what the manifest records of its build and the file (`Build`)."""
    res = FileReport(rel)
    path = out / rel
    if not path.is_file():
        res.problems.append(Problem(rel, "missing (listed in manifest.json)"))
        return res
    size, digest = path.stat().st_size, file_sha256(path)
    if size != entry.bytes or digest != entry.sha256:
        res.problems.append(Problem(rel, f"file bytes differ from manifest.json ({size} bytes, "
                                         f"sha256 {digest}; manifest: {entry.bytes} "
                                         f"bytes, sha256 {entry.sha256})"))
    else:
        res.bytes_ok = True
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
    except Exception as e:  # pyarrow raises several types for corrupt or truncated files
        res.problems.append(Problem(rel, f"not readable as Parquet: {type(e).__name__}: {e}"))
        return res
    if not schema.remove_metadata().equals(ROW_SCHEMA):
        res.problems.append(Problem(rel, schema_problem(schema)))
        return res
    n = parquet.metadata.num_rows
    plan = RowsPlan(sample_indices(n, full, sample),
                    rows_to_regenerate(n, regenerate, entry.content_sha256), regenerator)
    check = RowChecker(res, entry, tokenizer, mode, plan, variant, build)

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
    if res.rows != entry.rows:
        res.problems.append(Problem(rel, f"{res.rows} rows, manifest.json says {entry.rows}"))
    if content != entry.content_sha256:
        res.problems.append(Problem(rel, "row content differs from manifest.json "
                                         "(content_sha256)"))
    res.content_ok = res.rows == entry.rows and content == entry.content_sha256
    res.rows_ok, res.answers_ok = check.fields_ok, check.answers_ok
    if check.short_at_bound:
        res.notes.append(f"{check.short_at_bound} row(s) fill less of L than the benchmark "
                         f"promises: they hold all of the task's inputs (kept, as upstream "
                         f"keeps them)")
    return res
