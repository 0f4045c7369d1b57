"""Shared helpers for tests that build real splits."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from ruler.builder.pipeline import BuildConfig, run_build

NIAH_TASKS = ("niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1",
              "niah_multikey_2", "niah_multikey_3", "niah_multivalue", "niah_multiquery")


def build(out: Path, tokenizer: str, tasks, lengths, samples: int, **kw):
    # In this process by default: pytest's workers already keep the cores busy, and forking a
    # worker that holds several tokenizers costs more than these small builds gain. The
    # process pools have their own tests (pipeline/test_build.py, test_build_processes.py).
    kw.setdefault("workers", 1)
    kw.setdefault("progress", False)
    return run_build(BuildConfig(tokenizer=tokenizer, tasks=tuple(tasks), lengths=tuple(lengths),
                                 samples=samples, out=out, **kw))


def rows(out: Path, config: str, task: str, length: int) -> list[dict]:
    return pq.read_table(out / f"data/{config}/{task}/{length}.parquet").to_pylist()


def all_rows(out: Path) -> dict[str, list[dict]]:
    return {str(p.relative_to(out)): pq.read_table(p).to_pylist()
            for p in sorted(out.glob("data/*/*/*.parquet"))}
