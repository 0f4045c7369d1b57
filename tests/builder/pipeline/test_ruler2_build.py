"""`ruler build --benchmark v2`: RULERv2's 12 tasks as config `<tokenizer>--v2`, from the
stand-in MMLU and HotpotQA inputs; the same bytes whatever the process's string hash seed
(upstream's qa files change with PYTHONHASHSEED); verified and loaded like v1 builds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.builds import build, rows
from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS
from ruler.builder.manifest import read_manifest
from ruler.catalog.variants import DepthSweep, Replicate
from ruler.kernel.errors import RulerError

L = 4096
SAMPLES = 1


def _build_in_process(out: Path, hash_seed: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    return subprocess.run([sys.executable, "-m", "ruler", "build", "--benchmark", "v2",
                           "--tokenizer", "llama-3.1", "--lengths", str(L), "--samples",
                           str(SAMPLES), "--out", str(out), "--workers", "1", "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("ruler2")
    outs = root / "seed1", root / "seed2"
    for out, seed in zip(outs, ("1", "2")):
        done = _build_in_process(out, seed)
        assert done.returncode == 0, done.stderr
    return outs


@pytest.mark.slow  # two builds of 12 tasks in fresh processes, then verify
def test_two_processes_with_other_hash_seeds_write_the_same_bytes(two_builds):
    a, b = (read_manifest(out)["files"] for out in two_builds)
    assert sorted(a) == sorted(f"data/llama-3.1--v2/{t}/{L}.parquet" for t in RULER2_TASKS)
    assert {k: (v["sha256"], v["content_sha256"]) for k, v in a.items()} == \
        {k: (v["sha256"], v["content_sha256"]) for k, v in b.items()}
    for rel in a:
        assert (two_builds[0] / rel).read_bytes() == (two_builds[1] / rel).read_bytes()


@pytest.mark.slow  # two builds of 12 tasks in fresh processes, then verify
def test_the_manifest_says_which_benchmark_and_the_rows_count_the_prompt_only(two_builds):
    out = two_builds[0]
    build_entry = read_manifest(out)["builds"]["llama-3.1--v2"]
    assert build_entry["benchmark"] == "ruler2" and build_entry["identity"]["benchmark"] == "ruler2"
    assert build_entry["official"] is False  # stand-in MMLU and HotpotQA
    # counted as the server renders the question: the user turn and the generation prompt
    assert build_entry["prompt_mode"] == "reasoning"
    sources = build_entry["sources"]
    assert set(sources) == {"mmlu", "hotpotqa_hub"}
    assert sources["mmlu"]["repo"] == "cais/mmlu" and sources["mmlu"]["revision"] is None
    assert set(sources["mmlu"]["files"]) == {"test.parquet", "auxiliary_train.standin.parquet"}
    for task in RULER2_TASKS:
        for row in rows(out, "llama-3.1--v2", task, L):
            assert row["tokenizer"] == "llama-3.1--v2" and row["length"] <= L
            assert row["tokens_to_generate"] == 16384 and row["answer_prefix"] == ""


@pytest.mark.slow  # two builds of 12 tasks in fresh processes, then verify
def test_verify_passes_and_every_split_loads(two_builds, tmp_path):
    from datasets import load_dataset

    out = two_builds[0]
    done = subprocess.run([sys.executable, "-m", "ruler", "verify", str(out), "--regenerate", "1"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK: 12 files, 12 rows, 13 config/split loads verified" in done.stdout
    ds = load_dataset(str(out), "llama-3.1--v2", split=str(L), cache_dir=str(tmp_path))
    assert len(ds) == 12 * SAMPLES and set(ds["task"]) == set(RULER2_TASKS)
    one = load_dataset(str(out), "llama-3.1--v2--qa_basic", split=str(L),
                       cache_dir=str(tmp_path))
    assert one["task"] == ["qa_basic"] * SAMPLES


def test_a_config_holds_one_benchmark(tmp_path):
    with pytest.raises(RulerError, match="not 'ruler' tasks: build them with --benchmark v2"):
        build(tmp_path, "llama-3.1", ("niah_single_1", "qa_basic"), (L,), 1)
    with pytest.raises(RulerError, match="not 'ruler2' tasks: build them with no --benchmark"):
        build(tmp_path, "llama-3.1", ("qa_basic", "qa_1"), (L,), 1, benchmark="ruler2")
    with pytest.raises(RulerError, match="only --replicate/--replicates apply"):
        build(tmp_path, "llama-3.1", ("qa_basic",), (L,), 1, benchmark="ruler2",
              variant=DepthSweep(4))
    assert not tmp_path.joinpath("manifest.json").exists()


@pytest.mark.build
def test_a_replicate_of_a_v2_config(tmp_path):
    report = build(tmp_path, "llama-3.1", ("mk_niah_basic",), (L,), 1, benchmark="ruler2",
                   variant=Replicate(2), workers=1)
    assert report.config == "llama-3.1--v2--rep2"
    entry = read_manifest(tmp_path)["builds"]["llama-3.1--v2--rep2"]
    assert entry["benchmark"] == "ruler2" and entry["variant"] == {"replicate": 2}


@pytest.mark.subprocess
def test_the_cli_builds_v2_by_name_and_refuses_an_unknown_benchmark(tmp_path):
    done = subprocess.run([sys.executable, "-m", "ruler", "build", "--benchmark", "v3",
                           "--tokenizer", "llama-3.1", "--out", str(tmp_path / "x")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "invalid choice: 'v3'" in done.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.build
def test_the_python_api_builds_v2_for_qwen(tmp_path):
    import ruler

    report = ruler.build("qwen2.5", benchmark="v2", tasks="qa_hard,mv_niah_basic", lengths=L,
                         samples=1, out=tmp_path, workers=1)
    assert report.config == "qwen2.5--v2" and len(report.files) == 2
    ds = ruler.load(tmp_path, "qwen2.5--v2", L)
    assert sorted(ds["task"]) == ["mv_niah_basic", "qa_hard"] and max(ds["length"]) <= L


@pytest.mark.build
def test_a_manifest_whose_benchmark_and_tasks_disagree_is_refused(tmp_path):
    import json

    from ruler.builder.manifest import Manifest

    build(tmp_path, "llama-3.1", ("mk_niah_basic",), (L,), 1, benchmark="ruler2", workers=1)
    path = tmp_path / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["builds"]["llama-3.1--v2"]["benchmark"]  # as if it were a RULER config
    path.write_text(json.dumps(manifest))
    with pytest.raises(RulerError, match="benchmark 'ruler' lists another benchmark's task"):
        Manifest.load(tmp_path)
