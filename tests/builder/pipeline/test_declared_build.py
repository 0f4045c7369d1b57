"""Declared tasks build, verify and load like the 13 (issue 42 item 1): their arguments in each
file's build key and in the manifest (a record, declared again by every reader from there),
workers in other processes declaring them from the recipe, the card showing their
configuration; upstream's own synthetic.yaml builds the 13 byte for byte as `--tasks all`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helpers.builds import build
from helpers.declared import forget_declared_tasks  # noqa: F401 (autouse)
from ruler.builder.identity import file_key, identity_of_build
from ruler.builder.manifest import Manifest
from ruler.catalog.declared import DeclaredTask, forget
from ruler.kernel.errors import RulerError

UPSTREAM_YAML = Path(__file__).parents[1] / "tasks" / "data" / "upstream_synthetic.yaml"

#: One declared task per family, at the edges of what each builds.
DECLARED = (
    "decl_build_k8=niah:num_needle_k=8;"
    "decl_build_kuvu=niah:type_needle_k=uuids,type_needle_v=uuids,num_needle_q=2,num_needle_v=2;"
    "decl_build_full=niah:type_haystack=needle,type_needle_v=words,num_needle_q=3;"
    "decl_build_rep=niah:type_haystack=repeat,num_needle_v=8;"
    "decl_build_h10=variable_tracking:num_hops=10;"
    "decl_build_c8=variable_tracking:num_chains=8,num_hops=2;"
    "decl_build_cwe0=common_words_extraction:num_fewshot=0;"
    "decl_build_cwe2=common_words_extraction:freq_cw=4,freq_ucw=2,num_fewshot=2;"
    "decl_build_cw5=common_words_extraction:num_cw=5;"
    "decl_build_a12=freq_words_extraction:alpha=1.2;"
    "decl_build_voc=freq_words_extraction:alpha=3.5,vocab_size=40,coded_wordlen=4;"
    "decl_build_qa=qa:dataset=hotpotqa,tokens_to_generate=48")



@pytest.mark.build
def test_upstream_synthetic_yaml_builds_the_13_byte_identical_to_tasks_all(tmp_path):
    build(tmp_path / "yaml", "llama-3.1", (), [4096], 2, task_file=UPSTREAM_YAML)
    build(tmp_path / "all", "llama-3.1", (), [4096], 2)
    yaml_m, all_m = (Manifest.load(tmp_path / n) for n in ("yaml", "all"))
    assert len(all_m.files) == 13
    assert {r: (f.sha256, f.content_sha256, f.build_key) for r, f in yaml_m.files.items()} \
        == {r: (f.sha256, f.content_sha256, f.build_key) for r, f in all_m.files.items()}
    assert yaml_m.builds["llama-3.1"].declared_tasks is None  # the 13 are nobody's declaration
    for rel in all_m.files:
        assert (tmp_path / "yaml" / rel).read_bytes() == (tmp_path / "all" / rel).read_bytes()


@pytest.mark.build
@pytest.mark.subprocess
@pytest.mark.slow
def test_declared_tasks_build_in_spawned_workers_record_and_verify(tmp_path):
    out = tmp_path / "out"
    build(out, "qwen2.5", (), [4096], 2, declare=DECLARED, workers=2, start_method="spawn")
    manifest = Manifest.load(out)
    entry = manifest.builds["qwen2.5"]
    names = [part.split("=")[0] for part in DECLARED.split(";")]
    assert sorted(entry.tasks or ()) == sorted(names)  # built by default: the declared ones
    declared = entry.declared_tasks or {}
    assert sorted(declared) == sorted(names)
    # the effective arguments, in upstream's schema (defaults filled in, budgets said)
    assert declared["decl_build_rep"].to_json() == {"task": "niah", "args": {
        "type_haystack": "noise", "type_needle_k": "words", "type_needle_v": "numbers",
        "num_needle_k": 1, "num_needle_v": 8, "num_needle_q": 1}}
    assert declared["decl_build_h10"].args == {"type_haystack": "noise", "num_chains": 1,
                                               "num_hops": 10, "tokens_to_generate": 66}
    assert declared["decl_build_kuvu"].args["tokens_to_generate"] == 160
    rows = pq.read_table(out / "data/qwen2.5/decl_build_h10/4096.parquet").to_pylist()
    assert [r["tokens_to_generate"] for r in rows] == [66, 66]
    assert all(len(r["outputs"]) == 11 for r in rows)
    rows = pq.read_table(out / "data/qwen2.5/decl_build_cwe0/4096.parquet").to_pylist()
    assert all(r["input"].startswith("Below is a numbered list of words.") for r in rows)
    assert all(r["input"].count("Below is a numbered list of words.") == 1 for r in rows)
    rows = pq.read_table(out / "data/qwen2.5/decl_build_cw5/4096.parquet").to_pylist()
    for r in rows:  # asks for the words it is scored on (upstream's keeps "10")
        assert len(r["outputs"]) == 5 and "10" not in r["answer_prefix"]
        assert r["input"].endswith("Question: What are the 5 most common words in the above "
                                   "list?")
        assert r["answer_prefix"] == " Answer: The top 5 words that appear most often in the " \
            "list are:"
        assert r["input"].count("Question: What are the 5 most common words") == 2  # example
    # a fresh process declares them from the manifest, verifies every row and makes two again
    proc = subprocess.run([sys.executable, "-m", "ruler", "verify", str(out), "--regenerate",
                           "2"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"OK: {len(names)} files, {2 * len(names)} rows" in proc.stdout
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "`decl_build_h10`" in card and "num_hops=10" in card
    # beside the standard configuration, and the record as a task file that builds it again
    assert "- `decl_build_h10`: its family's own task closest to it, `vt`, with " \
        "`num_hops 4 -> 10`; `tokens_to_generate 30 -> 66`." in card
    assert "decl_build_h10:\n  task: variable_tracking\n  args:\n" in card


@pytest.mark.build
def test_arguments_are_part_of_each_file_key_and_one_name_is_one_task(tmp_path):
    out = tmp_path / "out"
    build(out, "llama-3.1", ("decl_build_key",), [4096], 1,
          declare="decl_build_key=variable_tracking:num_chains=2,num_hops=2")
    m = Manifest.load(out)
    b, f = m.builds["llama-3.1"], m.files["data/llama-3.1/decl_build_key/4096.parquet"]
    rec = (b.declared_tasks or {})["decl_build_key"]
    ident = identity_of_build(b)
    assert f.build_key == file_key(ident, "decl_build_key", 4096, {}, rec)
    other = DeclaredTask(task="variable_tracking", args={**rec.args, "num_chains": 3})
    assert file_key(ident, "decl_build_key", 4096, {}, other) != f.build_key
    assert file_key(ident, "decl_build_key", 4096, {}) != f.build_key
    with pytest.raises(RulerError, match="'decl_build_key' is variable_tracking.*num_chains=3"):
        build(out, "llama-3.1", ("decl_build_key",), [4096], 1,
              declare="decl_build_key=variable_tracking:num_chains=3,num_hops=2")
    # a standard task beside it keeps its own key, and the record stays the declared one's
    build(out, "llama-3.1", ("niah_single_1",), [4096], 1)
    again = json.loads((out / "manifest.json").read_text())["builds"]["llama-3.1"]
    assert again["declared_tasks"] == {"decl_build_key": rec.to_json()}
    assert again["tasks"] == ["niah_single_1", "decl_build_key"]


@pytest.mark.build
def test_a_manifest_whose_declaration_is_damaged_is_refused_in_one_line(tmp_path):
    out = tmp_path / "out"
    build(out, "llama-3.1", ("decl_build_dmg",), [4096], 1,
          declare="decl_build_dmg=freq_words_extraction:alpha=1.5")
    data = json.loads((out / "manifest.json").read_text())
    for damage, says in [({"task": "freq_words_extraction", "args": {"alpha": 0.5}},
                          "alpha: must be a number > 1"),
                         ({"task": "nope", "args": {}}, "unknown task family 'nope'"),
                         ("fwe", "must be a mapping with `task`")]:
        data["builds"]["llama-3.1"]["declared_tasks"] = {"decl_build_dmg2": damage}
        with pytest.raises(RulerError, match=says):
            Manifest.from_json(data)
    del data["builds"]["llama-3.1"]["declared_tasks"]
    data["files"] = {k.replace("decl_build_dmg", "decl_build_gone"): {
        **v, "task": "decl_build_gone"} for k, v in data["files"].items()}
    with pytest.raises(RulerError, match="unknown task 'decl_build_gone'"):
        Manifest.from_json(data)


@pytest.mark.build
@pytest.mark.slow
def test_a_reader_knows_declared_tasks_from_the_folder_alone(tmp_path):
    """What a process that never saw the declaration does (a fresh `ruler eval`, `score`,
    `merge`, `load`): every name it reads comes from the manifest's record."""
    import ruler
    from ruler.builder.pipeline.merge import merge

    shards = [tmp_path / f"s{i}" for i in range(2)]
    for i, out in enumerate(shards):
        build(out, "llama-3.1", (), [4096], 2, shard=(i, 2),
              declare="decl_read_q8=niah:num_needle_q=8;decl_read_c2=variable_tracking:"
                      "num_chains=2,num_hops=2")
    for name in ("decl_read_q8", "decl_read_c2"):
        forget(name)
    merged = merge(shards, tmp_path / "m")
    assert sorted(Manifest.load(tmp_path / "m").builds["llama-3.1"].declared_tasks or {}) \
        == ["decl_read_c2", "decl_read_q8"]
    forget("decl_read_q8")
    forget("decl_read_c2")
    assert len(merged.copied) == 2
    run = ruler.evaluate("fake", tmp_path / "m", backend="fake", tasks="decl_read_q8",
                         out=tmp_path / "run", no_report=True)
    scores = ruler.score(run.out / "predictions.jsonl", tmp_path / "m", tasks="decl_read_q8")
    assert [(c.task, c.score) for c in scores.cells] == [("decl_read_q8", 100.0)]
    forget("decl_read_q8")
    forget("decl_read_c2")
    assert len(ruler.load(tmp_path / "m", "llama-3.1", 4096, task="decl_read_c2")) == 2


def _random_declaration(rng, i: int) -> str:
    """A declaration drawn across the domains of `task_args` (sizes kept to what 8K holds)."""
    family = rng.choice(["niah", "variable_tracking", "common_words_extraction",
                         "freq_words_extraction", "qa"])
    if family == "niah":
        haystack = rng.choice(["essay", "noise", "needle", "repeat"])
        k, v = rng.randint(1, 6), rng.randint(1, 6)
        args = dict(type_haystack=haystack, type_needle_k=rng.choice(["words", "numbers",
                                                                      "uuids"]),
                    type_needle_v=rng.choice(["words", "numbers", "uuids"]),
                    num_needle_k=k, num_needle_v=v, num_needle_q=rng.randint(1, k + 1))
    elif family == "variable_tracking":
        args = dict(num_chains=rng.randint(1, 6), num_hops=rng.randint(1, 10))
    elif family == "common_words_extraction":
        ucw = rng.randint(1, 5)
        args = dict(freq_cw=rng.randint(ucw + 1, 40), freq_ucw=ucw,
                    num_fewshot=rng.randint(0, 3))
    elif family == "freq_words_extraction":
        args = dict(alpha=round(rng.uniform(1.1, 4.0), 2), coded_wordlen=rng.randint(4, 13),
                    vocab_size=rng.choice([-1, rng.randint(5, 200)]))
    else:
        args = dict(dataset=rng.choice(["squad", "hotpotqa"]))
    return f"decl_fuzz_{i}={family}:" + ",".join(f"{k}={v}" for k, v in args.items())


@pytest.mark.build
@pytest.mark.slow
def test_declarations_across_the_domains_build_rows_their_verify_accepts(tmp_path):
    """No declared task builds a row its own verify rejects: the build's workers make verify's
    row checks of every row before a file is written, and `ruler verify` reads them again."""
    import random

    import ruler

    rng = random.Random(42)
    declare = ";".join(_random_declaration(rng, i) for i in range(24))
    build(tmp_path, "llama-3.1", (), [8192], 2, declare=declare)
    report = ruler.verify(tmp_path)
    assert report.ok, report.all_problems()
    assert len(Manifest.load(tmp_path).files) == 24


@pytest.mark.build
def test_a_suite_builds_in_one_command_its_standard_tasks_the_default_rows(tmp_path):
    from ruler.benchmarks.ruler.suites import FIG2_DISTRACTORS

    build(tmp_path / "suite", "qwen2.5", (), [4096], 2, suite="fig2_distractors")
    standard = [t.name for t in FIG2_DISTRACTORS.tasks if not t.declared]
    build(tmp_path / "std", "qwen2.5", standard, [4096], 2)
    suite_m, std_m = (Manifest.load(tmp_path / n) for n in ("suite", "std"))
    assert sorted(suite_m.tasks("qwen2.5")) == sorted(FIG2_DISTRACTORS.task_names)
    for t in standard:  # byte for byte the default config's rows of that task
        rel = f"data/qwen2.5/{t}/4096.parquet"
        assert (tmp_path / "suite" / rel).read_bytes() == (tmp_path / "std" / rel).read_bytes()
        assert suite_m.files[rel].build_key == std_m.files[rel].build_key
    entry = suite_m.builds["qwen2.5"]
    assert entry.suites == ["fig2_distractors"] and list(entry.declared_tasks or {}) == \
        ["niah_multikey_k8"]
    card = (tmp_path / "suite" / "README.md").read_text(encoding="utf-8")
    assert "`fig2_distractors`: Figure 2 middle-left: distractor needles (#K)." in card
    assert "| `niah_multikey_k8` | \\#K=8 | [figure] | type_haystack=essay, num_needle_k=8 |" \
        in card
    with pytest.raises(RulerError, match="--suite fig9: RULER has no such suite"):
        build(tmp_path / "x", "qwen2.5", (), [4096], 2, suite="fig9")
