"""The Ray executor's parts that need no Ray (fast tier): a Ray worker's stream of a file,
reassembled on the driver side, is the local executor's file byte for byte; bytes that differ
from their hash are refused with nothing left behind; a worker that would build other rows
(other package versions, a changed source) refuses before any work; and the package imports,
and the executor module loads, without Ray. The cluster itself:
tests/builder/pipeline/test_build_ray.py."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ruler.builder.pipeline import BuildConfig, ray_executor
from ruler.builder.pipeline.config import FileJob
from ruler.builder.pipeline.ray_executor import Arrival, FileBuilder, environment
from ruler.builder.pipeline.recipe import BuildRecipe
from ruler.builder.pipeline.worker import Worker, write_file
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.commands.build import parse_lengths
from ruler.kernel.errors import RulerError

TOKENIZER = "gpt-4"


def _worker(sources_dir=None, tag="t1", tokenizer=TOKENIZER) -> Worker:
    cfg = BuildConfig(tokenizer=tokenizer, sources_dir=sources_dir)
    return Worker(BuildRecipe.from_config(cfg, load_tokenizer(tokenizer)), temp_tag=tag)


def _job(out: Path, task: str, L: int, samples: int) -> FileJob:
    return FileJob(out, TOKENIZER, task, L, samples, "key", packages={"numpy": "1"},
                   tokenizer_pinned=True)


def _stream(worker: Worker, job: FileJob) -> list[tuple]:
    builder = FileBuilder(pickle.dumps(worker), {}, environment(worker.ctx.tokenizer.identity.kind))
    try:
        assert builder.ready()["problems"] == []
        return list(builder.build_file(job))
    finally:
        builder.close()


@pytest.mark.build
def test_a_streamed_file_is_the_local_file_byte_for_byte(tmp_path, monkeypatch):
    monkeypatch.setattr(ray_executor, "CHUNK_BYTES", 1000)  # several chunks
    worker, job = _worker(), _job(tmp_path / "ray", "niah_single_1", 1024, 3)
    items = _stream(worker, job)
    kinds = [item[0] for item in items]
    assert kinds[:4] == ["row", "row", "row", "file"] and set(kinds[4:]) == {"chunk"}
    assert len(kinds) > 5
    arrival = Arrival(job, "t1")
    assert sum(arrival.add(item) for item in items) == 3  # rows, for progress
    result, entry, path = arrival.finish()
    assert path.parent == tmp_path / "ray" / job.path.rsplit("/", 1)[0]
    assert path.name.startswith(".1024.parquet.t1.") and path.suffix == ".tmp"
    assert result.worker  # which worker built it, for the report

    rows = (worker.make_row(job.task, 1024, i) for i in range(3))
    _, local_entry, local_path = write_file(replace(job, out=tmp_path / "local"), rows)
    assert entry == local_entry
    assert path.read_bytes() == local_path.read_bytes()
    assert pq.read_table(path).num_rows == 3


@pytest.mark.build
def test_items_arrive_whatever_the_order_of_chunks(tmp_path, monkeypatch):
    """A file re-run after a failure may resend chunks: each lands at its own offset."""
    monkeypatch.setattr(ray_executor, "CHUNK_BYTES", 500)
    worker, job = _worker(), _job(tmp_path, "vt", 1024, 2)
    items = _stream(worker, job)
    head = [i for i in items if i[0] != "chunk"]
    chunks = [i for i in items if i[0] == "chunk"]
    arrival = Arrival(job, "t1")
    for item in head + chunks[::-1] + chunks[:1]:
        arrival.add(item)
    _, entry, path = arrival.finish()
    assert path.stat().st_size == entry.bytes


@pytest.mark.build
def test_bytes_that_differ_from_their_hash_are_refused_and_removed(tmp_path):
    worker, job = _worker(), _job(tmp_path, "niah_single_1", 1024, 2)
    items = _stream(worker, job)
    arrival = Arrival(job, "t1")
    for item in items:
        if item[0] == "chunk" and item[1] == 0:
            item = ("chunk", 0, b"X" + item[2][1:])
        arrival.add(item)
    with pytest.raises(RulerError, match="arrived from its Ray worker with other bytes"):
        arrival.finish()
    assert not list(tmp_path.rglob("*.tmp")) and not list(tmp_path.rglob("*.parquet"))


def test_a_stream_that_ends_before_the_file_is_refused(tmp_path):
    job = _job(tmp_path, "niah_single_1", 1024, 1)
    arrival = Arrival(job, "t1")
    arrival.add(("row",))
    with pytest.raises(RulerError, match="stream ended before the file"):
        arrival.finish()


def test_a_worker_with_other_versions_refuses_before_any_work():
    worker = _worker()
    expected = {**environment(worker.ctx.tokenizer.identity.kind), "numpy": "0.0.1"}
    builder = FileBuilder(pickle.dumps(worker), {}, expected)
    try:
        problems = builder.ready()["problems"]
        assert len(problems) == 1 and "numpy" in problems[0] and "0.0.1" in problems[0]
        with pytest.raises(RulerError, match="cannot build: other versions here: numpy"):
            next(builder.build_file(_job(Path("unused"), "niah_single_1", 1024, 1)))
    finally:
        builder.close()


def test_a_worker_whose_source_file_differs_refuses(tmp_path):
    sources = tmp_path / "sources"
    shutil.copytree(Path(os.environ["RULER_SOURCES"]) / "squad", sources / "squad")
    worker = _worker(sources_dir=sources)
    squad = worker.ctx.source("squad")  # resolved by the driver, then sent
    pickled = pickle.dumps(worker)
    with open(squad.path, "a", encoding="utf-8") as f:  # this "node" has other bytes
        f.write(" ")
    builder = FileBuilder(pickled, {}, environment(worker.ctx.tokenizer.identity.kind))
    try:
        (problem,) = builder.ready()["problems"]
        assert f"source 'squad' at {squad.path} has other bytes" in problem
    finally:
        builder.close()


def test_a_worker_that_cannot_load_the_tokenizer_refuses(tmp_path, monkeypatch):
    worker = _worker(tokenizer="llama-3.1")
    tok = worker.recipe.tokenizer
    # this "node" has no tokenizer files and no cache, and the Hub is off
    env = {"RULER_TOKENIZERS": str(tmp_path / "nowhere"), "RULER_CACHE": str(tmp_path / "c"),
           "HF_HUB_OFFLINE": "1"}
    for key, value in env.items():
        monkeypatch.setenv(key, os.environ.get(key, value))  # restored after the test
    builder = FileBuilder(pickle.dumps(worker), env, environment(tok.identity.kind))
    try:
        (problem,) = builder.ready()["problems"]
        assert problem.startswith("cannot load the build here:") and "tokenizer" in problem
    finally:
        builder.close()


@pytest.mark.subprocess
def test_scratch_folders_of_dead_workers_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = Path(tempfile.mkdtemp(prefix=f"ruler-ray-{dead.pid}-"))
    (stale / "x.tmp").write_text("left by a killed worker")
    worker = _worker()
    builder = FileBuilder(pickle.dumps(worker), {}, environment(worker.ctx.tokenizer.identity.kind))
    try:
        assert not stale.exists()
        assert builder.scratch.is_dir()
    finally:
        builder.close()
    assert not builder.scratch.exists()


@pytest.mark.subprocess
def test_the_package_and_the_executor_module_import_without_ray():
    code = ("import sys; import ruler.builder.pipeline.run, ruler.builder.pipeline.ray_executor, "
            "ruler.commands.main; assert 'ray' not in sys.modules, 'ray was imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_executor_flags_are_checked():
    with pytest.raises(RulerError, match="--ray-address needs --executor ray"):
        BuildConfig(tokenizer=TOKENIZER, ray_address="10.0.0.1:6379")
    with pytest.raises(RulerError, match="--executor must be one of local, ray"):
        BuildConfig(tokenizer=TOKENIZER, executor="dask")
    assert BuildConfig(tokenizer=TOKENIZER, executor="ray").workers is None


def test_long_lengths_and_units():
    assert parse_lengths("long") == (262144, 524288, 1048576)
    assert parse_lengths("paper,long")[-4:] == (131072, 262144, 524288, 1048576)
    assert parse_lengths("1m,2m,1536k,3000000") == (1 << 20, 2 << 20, 1536 * 1024, 3000000)
    with pytest.raises(RulerError, match="bad length"):
        parse_lengths("1g")


def test_the_manifest_and_card_name_repeated_material(tmp_path):
    from ruler.builder.manifest import FileEntry, Manifest
    from ruler.cards.repeated import repeated_section

    def entry(task: str, share: dict | None = None) -> FileEntry:
        return FileEntry("x", task, 1048576, rows=1, bytes=1, sha256="0" * 64,
                         content_sha256="0" * 64, repeated_share=share)

    manifest = Manifest()
    manifest.put_file(entry("qa_1", {"mean": 0.8012, "max": 0.8031}))
    manifest.put_file(entry("cwe"))
    text = repeated_section(manifest)
    assert text.startswith("## Repeated source material")
    assert "| `x` | `qa_1` | 1048576 | 80.1% | 80.3% |" in text and "cwe" not in text.split(
        "|---")[1]
    manifest.remove_file("data/x/qa_1/1048576.parquet")
    assert repeated_section(manifest) == ""
    assert json.dumps(manifest.to_json())  # plain data
