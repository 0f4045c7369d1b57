"""`ruler build`: determinism, sharding, resume, bad input, several tokenizer backends."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from helpers.builds import all_rows, build, rows
from ruler.builder.manifest import content_sha256, read_manifest
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.commands.main import main
from ruler.kernel.errors import RulerError, TooShortError

TASKS = ("niah_single_1", "niah_single_2", "niah_multikey_3")


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    build(out, "gpt-4", TASKS, (1024, 2048), 6, workers=2)  # against one process below
    return out


@pytest.mark.build
@pytest.mark.subprocess
def test_same_command_twice_gives_identical_files(full, tmp_path):
    build(tmp_path, "gpt-4", TASKS, (1024, 2048), 6, workers=1)
    assert all_rows(tmp_path) == all_rows(full)
    m1, m2 = read_manifest(full), read_manifest(tmp_path)
    assert m1["files"] == m2["files"]  # byte hashes too: pinned pyarrow writes the same bytes


@pytest.mark.subprocess
def test_subset_build_equals_slice_of_full_build(full, tmp_path):
    build(tmp_path, "gpt-4", ["niah_single_2"], [2048], 4)
    assert rows(tmp_path, "gpt-4", "niah_single_2", 2048) == \
        rows(full, "gpt-4", "niah_single_2", 2048)[:4]


@pytest.mark.subprocess
def test_shards_are_disjoint_and_their_union_is_the_full_build(full, tmp_path):
    parts = []
    for i in range(3):
        out = tmp_path / f"s{i}"
        build(out, "gpt-4", TASKS, (1024, 2048), 6, shard=(i, 3))
        parts.append(all_rows(out))
    names = [set(p) for p in parts]
    assert all(not (a & b) for k, a in enumerate(names) for b in names[k + 1:])
    merged = {k: v for p in parts for k, v in p.items()}
    assert merged == all_rows(full)


@pytest.mark.subprocess
def test_manifest_records_hashes_identity_and_official_status(full):
    m = read_manifest(full)
    b = m["builds"]["gpt-4"]
    assert b["seed"] == 42 and b["prompt_mode"] == "base" and b["official"]
    assert b["tokenizer"]["files"]["cl100k_base.tiktoken"].startswith("223921b7")
    assert b["sources"]["essays"]["official"]
    for rel, f in m["files"].items():
        table = pq.read_table(full / rel)
        assert f["rows"] == table.num_rows == 6
        assert f["content_sha256"] == content_sha256(table)


@pytest.mark.subprocess
def test_rerun_skips_complete_files_and_rebuilds_changed_or_tampered_ones(tmp_path, capsys):
    report = build(tmp_path, "gpt-4", ["niah_single_1"], [1024], 3)
    assert not report.files[0].skipped
    assert build(tmp_path, "gpt-4", ["niah_single_1"], [1024], 3).files[0].skipped
    f = tmp_path / "data/gpt-4/niah_single_1/1024.parquet"
    f.write_bytes(f.read_bytes()[:-10])  # truncated by a crash or a bad copy
    assert not build(tmp_path, "gpt-4", ["niah_single_1"], [1024], 3).files[0].skipped
    before = rows(tmp_path, "gpt-4", "niah_single_1", 1024)
    with pytest.raises(RulerError, match="seed 42 -> 7"):  # another build: refused ...
        build(tmp_path, "gpt-4", ["niah_single_1"], [1024], 3, seed=7)
    assert rows(tmp_path, "gpt-4", "niah_single_1", 1024) == before
    build(tmp_path, "gpt-4", ["niah_single_1"], [1024], 3, seed=7, overwrite=True)  # ... unless
    after = rows(tmp_path, "gpt-4", "niah_single_1", 1024)
    assert before != after and read_manifest(tmp_path)["builds"]["gpt-4"]["seed"] == 7


@pytest.mark.subprocess
@pytest.mark.parametrize("tokenizer", ["llama-2", pytest.param("gpt-4o", marks=pytest.mark.slow),
                                       pytest.param("qwen2.5", marks=pytest.mark.slow)])
def test_stored_length_is_a_fresh_tokenization_for_each_backend(tmp_path, tokenizer):
    build(tmp_path, tokenizer, ["niah_single_1", "niah_single_3"], [4096], 4)
    tok = load_tokenizer(tokenizer)
    config = tokenizer
    for task in ("niah_single_1", "niah_single_3"):
        for r in rows(tmp_path, config, task, 4096):
            assert r["length"] == tok.prompt_length(r["input"], r["answer_prefix"]) + 128 <= 4096
            assert r["length"] >= 0.98 * 4096


def _cli(tmp_path, *args):
    return main(["build", "--tokenizer", "gpt-4", "--out", str(tmp_path / "out"),
                 "--samples", "2", "--no-progress", *args])


@pytest.mark.parametrize("args,message", [
    (["--tasks", "niah_single_9"], "unknown task"),
    (["--lengths", "4k,abc"], "bad length"),
    (["--lengths", "0"], "positive integers"),
    (["--lengths", "150", "--tasks", "niah_single_2"], "cannot be built at length 150"),
    (["--shard", "3/2"], "--shard"),
    (["--samples", "0"], "--samples"),
])
def test_bad_input_is_one_clear_error_and_nothing_is_written(tmp_path, capsys, args, message):
    assert _cli(tmp_path, *args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_unknown_tokenizer_and_missing_source_write_nothing(tmp_path, capsys, monkeypatch):
    assert main(["build", "--tokenizer", "nope", "--out", str(tmp_path / "o")]) == 2
    assert "unknown tokenizer" in capsys.readouterr().err
    monkeypatch.setenv("RULER_SOURCES", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert _cli(tmp_path, "--tasks", "niah_single_1,niah_single_2") == 2
    err = capsys.readouterr().err
    assert "essays/PaulGrahamEssays.json" in err
    assert not (tmp_path / "out").exists()


def test_too_short_length_names_task_length_and_minimum(tmp_path):
    with pytest.raises(TooShortError) as e:
        build(tmp_path, "gpt-4", ["niah_multikey_3"], [200], 1)
    assert e.value.task == "niah_multikey_3" and e.value.max_seq_length == 200
    assert e.value.minimum > 200 and str(e.value.minimum) in str(e.value)


def test_lengths_accept_k_suffix_and_paper(tmp_path):
    from ruler.commands.build import parse_lengths

    assert parse_lengths("4k,8192") == (4096, 8192)
    assert parse_lengths("paper") == (4096, 8192, 16384, 32768, 65536, 131072)
    with pytest.raises(RulerError):
        parse_lengths("x")


@pytest.mark.build
def test_interrupted_build_keeps_finished_files_and_resumes(tmp_path, monkeypatch):
    from ruler.builder.pipeline.worker import Worker

    real = Worker.make_row

    def crash_on_second_file(self, task, L, index):
        if L == 2048:
            raise KeyboardInterrupt
        return real(self, task, L, index)

    monkeypatch.setattr(Worker, "make_row", crash_on_second_file)
    with pytest.raises(KeyboardInterrupt):
        build(tmp_path, "gpt-4", ["niah_single_1"], [1024, 2048], 3, workers=1)
    assert list(read_manifest(tmp_path)["files"]) == ["data/gpt-4/niah_single_1/1024.parquet"]
    assert not list(tmp_path.glob("data/gpt-4/niah_single_1/*2048*"))  # no partial file
    assert (tmp_path / "README.md").is_file()
    monkeypatch.setattr(Worker, "make_row", real)
    report = build(tmp_path, "gpt-4", ["niah_single_1"], [1024, 2048], 3, workers=1)
    assert [f.skipped for f in report.files] == [True, False]


@pytest.mark.subprocess
def test_a_worker_failing_mid_file_leaves_finished_files_and_no_partial_one(tmp_path,
                                                                           monkeypatch):
    """Workers write whole files: one failing stops the build, the files finished before
    stay recorded, and neither its file nor the one the other worker was writing remains."""
    from ruler.builder.pipeline.worker import Worker

    real = Worker.make_row

    def fail_in_the_last_file(self, task, L, index):
        if L == 1024 and index == 2:
            raise RuntimeError("boom")
        return real(self, task, L, index)

    monkeypatch.setattr(Worker, "make_row", fail_in_the_last_file)  # before the workers fork
    with pytest.raises(RuntimeError, match="boom"):
        build(tmp_path, "gpt-4", ["niah_single_1", "vt"], [1024, 2048], 3, workers=2)
    recorded = set(read_manifest(tmp_path)["files"])
    assert recorded <= {f"data/gpt-4/{t}/2048.parquet" for t in ("niah_single_1", "vt")}
    on_disk = {str(p.relative_to(tmp_path)) for p in tmp_path.glob("data/**/*") if p.is_file()}
    assert on_disk == recorded  # no temporary or unrecorded file


def test_a_length_only_some_samples_fit_fails_before_writing(tmp_path):
    from ruler.catalog import TASKS, make_generator
    from ruler.catalog.context import BuildContext
    from ruler.kernel.rng import sample_rng

    tok = load_tokenizer("gpt-4")
    ctx = BuildContext(tok, "gpt-4", 42)

    def needs(L: int) -> list[int]:  # each sample's smallest length (seeds depend on L)
        gen = make_generator(TASKS["niah_multikey_2"], ctx, L)
        drafts = (gen.draft(i, sample_rng(42, "gpt-4", "niah_multikey_2", L, i), 1)
                  for i in range(40))
        return [tok.prompt_length(d.input, d.answer_prefix) + 128 for d in drafts]

    L, n = next((L, n) for L in range(150, 400) for n in [needs(L)] if n[0] <= L < max(n))
    with pytest.raises(TooShortError) as e:  # sample 0 fits, a later one does not
        build(tmp_path, "gpt-4", ["niah_multikey_2"], [L], 40)
    assert e.value.minimum == max(n)
    assert not tmp_path.joinpath("data").exists()


@pytest.mark.slow
def test_spawned_workers_write_the_same_files_as_forked_ones(tmp_path):
    """Workers get their state through the pool initializer: inherited by fork, sent as a
    recipe (tokenizer load spec, sources, seed) under spawn, the macOS default. Both give the
    same bytes, for tasks that read every kind of resource (essays, word lists, SQuAD)."""
    tasks = ("niah_single_2", "niah_multikey_2", "vt", "cwe", "fwe", "qa_1")
    reports = {}
    for method in ("fork", "spawn"):
        reports[method] = build(tmp_path / method, "llama-3.1", tasks, (1024, 2048), 3,
                                workers=2, start_method=method)
    assert all(not f.skipped for f in reports["spawn"].files)
    fork, spawn = read_manifest(tmp_path / "fork"), read_manifest(tmp_path / "spawn")
    assert len(fork["files"]) == 12
    assert {k: v["content_sha256"] for k, v in spawn["files"].items()} == \
        {k: v["content_sha256"] for k, v in fork["files"].items()}
    assert {k: v["sha256"] for k, v in spawn["files"].items()} == \
        {k: v["sha256"] for k, v in fork["files"].items()}


@pytest.mark.build
def test_two_builds_in_one_process_at_once_do_not_share_state(tmp_path):
    """No module-level state: two builds running in threads of one process (other
    tokenizers, other folders) write what each writes alone."""
    import threading

    jobs = {"gpt-4": ("niah_single_1", "vt"), "llama-2": ("niah_single_1", "fwe")}
    errors = []

    def run(tok, tasks, out):
        try:
            build(out, tok, tasks, (1024,), 3, workers=1)
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(t, tasks, tmp_path / "together" / t))
               for t, tasks in jobs.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for tok, tasks in jobs.items():
        build(tmp_path / "alone" / tok, tok, tasks, (1024,), 3, workers=1)
        assert all_rows(tmp_path / "together" / tok) == all_rows(tmp_path / "alone" / tok)
