"""The typed manifest (`ruler.builder.manifest.Manifest`): what a real build writes reads back
and writes out byte for byte, fields it does not know survive a rewrite, and its queries."""

from __future__ import annotations

import json
import shutil

import pytest

from helpers.builds import build
from ruler.builder.manifest import MANIFEST_NAME, BuildEntry, FileEntry, Manifest, manifest_lock
from ruler.catalog.variants import OutputBudget
from ruler.kernel.errors import RulerError

TASKS = ("vt", "niah_single_1")
LENGTHS = (1024, 2048)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """gpt-4: vt and niah_single_1 at 1024 and 2048 (2 samples), and the variant config
    gpt-4--out256 of niah_single_1 at 1024: a default and a variant build entry."""
    out = tmp_path_factory.mktemp("built")
    build(out, "gpt-4", TASKS, LENGTHS, 2)
    build(out, "qwen2.5", ["niah_single_1"], [1024], 2, variant=OutputBudget(256))
    return out


def _dump(data) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.subprocess
def test_a_built_manifest_reads_and_writes_back_byte_for_byte(built, tmp_path):
    text = (built / MANIFEST_NAME).read_text(encoding="utf-8")
    m = Manifest.load(built)
    assert m.to_json() == json.loads(text)
    assert _dump(m.to_json()) == text
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    with manifest_lock(copy):
        Manifest.load(copy).save(copy)  # same environment: the same packages
    assert (copy / MANIFEST_NAME).read_bytes() == (built / MANIFEST_NAME).read_bytes()


@pytest.mark.subprocess
def test_the_records_are_typed(built):
    m = Manifest.load(built)
    assert m.format_version == 1 and m.generator["name"] == "ruler-bench"
    assert all(isinstance(b, BuildEntry) for b in m.builds.values())
    assert all(isinstance(f, FileEntry) and f.path == rel for rel, f in m.files.items())
    default, variant = m.build("gpt-4"), m.build("qwen2.5--out256")
    assert default.samples == 2 and default.seed == 42 and default.variant is None
    assert default.tokenizer.name == "gpt-4" and default.identity.samples == 2
    assert variant.variant == {"output_budget": 256}
    assert m.build("nope") is None


@pytest.mark.subprocess
def test_unknown_fields_survive_a_rewrite_by_a_build(built, tmp_path):
    """Fields a newer writer added (top level, a build entry, a file entry) are kept when this
    version adds a file to the folder and rewrites the manifest."""
    out = tmp_path / "out"
    shutil.copytree(built, out)
    data = json.loads((out / MANIFEST_NAME).read_text())
    data["future_top"] = {"x": [1, 2]}
    data["builds"]["qwen2.5--out256"]["future_build"] = "kept"
    data["builds"]["gpt-4"]["future_build"] = 7
    rel = "data/gpt-4/vt/1024.parquet"
    data["files"][rel]["future_file"] = {"a": 1}
    assert Manifest.from_json(data).to_json() == data
    (out / MANIFEST_NAME).write_text(_dump(data))

    build(out, "gpt-4", ["niah_single_2"], [1024], 2)  # adds a file, rewrites gpt-4's entry

    after = json.loads((out / MANIFEST_NAME).read_text())
    assert "data/gpt-4/niah_single_2/1024.parquet" in after["files"]
    assert after["future_top"] == {"x": [1, 2]}
    assert after["builds"]["qwen2.5--out256"]["future_build"] == "kept"
    assert after["builds"]["gpt-4"]["future_build"] == 7
    assert after["files"][rel]["future_file"] == {"a": 1}


@pytest.mark.subprocess
def test_absent_optional_fields_stay_absent(built):
    """A manifest of an older version (no identity, no counting, no build_key) round-trips
    without gaining fields."""
    data = Manifest.load(built).to_json()
    for build_entry in data["builds"].values():
        for name in ("identity", "counting", "packages", "official"):
            del build_entry[name]
    for entry in data["files"].values():
        for name in ("build_key", "packages", "counting"):
            del entry[name]
    m = Manifest.from_json(data)
    assert m.build("gpt-4").identity is None and m.file("data/gpt-4/vt/1024.parquet").counting \
        is None
    assert m.to_json() == data


@pytest.mark.subprocess
def test_queries(built):
    m = Manifest.load(built)
    assert m.configs() == ["gpt-4", "qwen2.5--out256"]
    # upstream's task order (niah_single_1 before vt), then length
    assert [(f.task, f.max_seq_length) for f in m.files_of("gpt-4")] == [
        ("niah_single_1", 1024), ("niah_single_1", 2048), ("vt", 1024), ("vt", 2048)]
    assert [f.path for f in m.files_of("gpt-4", tasks=["vt"], lengths=[2048])] == [
        "data/gpt-4/vt/2048.parquet"]
    assert m.files_of("gpt-4", lengths=[4096]) == [] and m.files_of("nope") == []
    assert m.tasks("gpt-4") == ["niah_single_1", "vt"]
    assert m.lengths("gpt-4") == [1024, 2048] and m.lengths("qwen2.5--out256") == [1024]
    entry = m.file("data/gpt-4/vt/2048.parquet")
    assert entry.rows == 2 and entry.max_seq_length == 2048 and len(entry.sha256) == 64
    assert m.file("data/gpt-4/vt/4096.parquet") is None


@pytest.mark.subprocess
def test_a_damaged_manifest_is_refused_as_load_refuses_it(built):
    data = Manifest.load(built).to_json()
    data["files"]["data/gpt-4/vt/1024.parquet"]["rows"] = "two"
    with pytest.raises(RulerError, match="malformed rows"):
        Manifest.from_json(data, "edited.json")


def test_an_empty_manifest_is_written_as_today(tmp_path):
    m = Manifest.load(tmp_path)  # no manifest yet
    assert m.builds == {} and m.files == {}
    assert set(m.to_json()) == {"format_version", "generator", "packages", "builds", "files"}


@pytest.mark.subprocess
def test_the_environment_record_holds_every_package_a_build_records(built):
    """One list of the packages that shape rows (packages.CONTENT_PACKAGES): the manifest's
    record of the writer's environment covers what every build's identity records."""
    m = Manifest.load(built)
    for config in m.configs():
        assert set(m.build(config).packages) <= set(m.packages), config
    assert "pyarrow" in m.packages  # file bytes (packages.FILE_PACKAGES)


def test_tasks_are_listed_in_upstreams_order():
    from ruler.catalog.benchmarks import BENCHMARK_SPECS, in_task_order
    from ruler.catalog.tasks import TASKS

    # each benchmark's tasks in its order, the benchmarks in theirs (whatever loaded first)
    ordered = [t for b in BENCHMARK_SPECS.values() for t in b.tasks]
    assert in_task_order(reversed(list(TASKS))) == ordered
    assert in_task_order(["qa_2", "vt", "zz", "niah_single_1", "aa", "vt"]) == [
        "niah_single_1", "vt", "qa_2", "aa", "zz"]  # unknown names last, by name; once each
