"""RULERv2's Hub sources: `ruler sources fetch mmlu` downloads the pinned Parquet files of a
dataset repo through huggingface_hub from a loopback Hub (tests/helpers/fake_hub.py), checks
them, records the revision and hashes it got, and a build from them is official; a wrong hash,
a wrong row count or a missing revision is one line and leaves nothing behind. Without a fetch,
the stand-ins in ../shared are found and make an unofficial build."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pyarrow.parquet as pq
import pytest

from helpers.builds import build
from helpers.fake_hub import hub_for_this_process
from helpers.paths import SOURCES
from helpers.sources import swap_source
from ruler.builder.manifest import read_manifest
from ruler.catalog import sources
from ruler.catalog.hub_sources import RECORD, HubDataset, HubFile, HubSplit
from ruler.kernel.errors import RulerError

TEST = "all/test-00000-of-00001.parquet"
AUX = "all/auxiliary_train-00000-of-00001.parquet"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture()
def mmlu_hub(tmp_path, monkeypatch):
    """A loopback Hub serving cais/mmlu's two Parquet files (the stand-ins' bytes) at one
    commit, and the registry's mmlu source pinned to that commit: the test file's sha256
    pinned, the auxiliary_train file's not (as for the real repo)."""
    test = (SOURCES / "mmlu" / "test.parquet").read_bytes()
    aux = (SOURCES / "mmlu" / "auxiliary_train.standin.parquet").read_bytes()
    with hub_for_this_process(tmp_path, "hf_test_token", monkeypatch) as hub:
        hub.create_repo("cais/mmlu", private=False)
        repo = hub.repos["cais/mmlu"]
        for data in (test, aux):
            hub.store_object(repo, data)
        commit = hub.apply_commit(repo, "add all", {TEST: test, AUX: aux}, [],
                                  lfs=frozenset({TEST, AUX}))
        real = sources.SOURCES["mmlu"]
        pinned = dataclasses.replace(real, hub=dataclasses.replace(
            real.hub, revision=commit.sha, splits=(
                HubSplit("test", 14_042, (HubFile(TEST, _sha(test)),), "mmlu/test*.parquet"),
                HubSplit("auxiliary_train", 285, (HubFile(AUX),),
                         "mmlu/auxiliary_train*.parquet"))))
        swap_source(monkeypatch, pinned)
        yield hub, commit.sha, pinned


@pytest.mark.build
@pytest.mark.network
def test_fetch_downloads_checks_and_records_the_pinned_files(mmlu_hub, tmp_path, capsys):
    from ruler.commands.main import main

    hub, revision, spec = mmlu_hub
    dest = tmp_path / "sources"
    assert main(["sources", "fetch", "mmlu", "--dest", str(dest)]) == 0
    assert f"at {revision}" in capsys.readouterr().out
    folder = dest / "mmlu" / "hub"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) \
        == sorted([TEST, AUX, RECORD])
    record = json.loads((folder / RECORD).read_text())
    assert record["repo"] == "cais/mmlu" and record["revision"] == revision
    assert record["files"][AUX]["rows"] == 285
    assert record["files"][AUX]["sha256"] == _sha((folder / AUX).read_bytes())
    # every request carried the token; downloads came from the repo at the pinned commit
    assert any(f"/resolve/{revision}/{AUX}" in r for r in hub.steps())

    found = sources.resolve("mmlu", dest)
    assert found.official and found.revision == revision
    entry = found.as_manifest().to_json()
    assert entry["official_sha256"] == entry["sha256"] and set(entry["files"]) == {TEST, AUX}

    # a build from the fetched files is official and records what it read
    out = tmp_path / "out"
    build(out, "llama-3.1", ("mk_niah_easy",), (4096,), 1, workers=1, benchmark="ruler2",
          sources_dir=str(dest))
    built = read_manifest(out)["builds"]["llama-3.1--v2"]
    assert built["official"] is True
    assert built["sources"]["mmlu"]["revision"] == revision
    assert built["sources"]["mmlu"]["files"][AUX] == record["files"][AUX]["sha256"]


@pytest.mark.network
def test_a_copy_whose_unpinned_file_changed_after_the_fetch_is_unofficial(mmlu_hub, tmp_path):
    dest = tmp_path / "sources"
    sources.fetch("mmlu", dest)
    aux = dest / "mmlu" / "hub" / AUX
    table = pq.read_table(aux)
    pq.write_table(table.slice(0, 284), aux)  # one question fewer: no longer what was fetched
    found = sources.resolve("mmlu", dest)
    assert not found.official and found.hashes[AUX] == _sha(aux.read_bytes())


@pytest.mark.network
@pytest.mark.parametrize("change,message", [
    ("sha256", "sha256 [0-9a-f]{64}, pinned 0{64}"),
    ("rows", "split auxiliary_train: 285 rows at [0-9a-f]{40}, expected 99,842"),
    ("revision", "could not download cais/mmlu@0{40}:all/test-00000-of-00001.parquet from "
                 "the Hub: RevisionNotFoundError"),
])
def test_a_bad_download_is_one_line_and_leaves_nothing(mmlu_hub, tmp_path, monkeypatch,
                                                       change, message):
    _, _, spec = mmlu_hub
    hub = spec.hub
    if change == "sha256":
        test = hub.splits[0]
        hub = dataclasses.replace(hub, splits=(dataclasses.replace(
            test, files=(HubFile(TEST, "0" * 64),)), hub.splits[1]))
    elif change == "rows":
        hub = dataclasses.replace(hub, splits=(hub.splits[0], dataclasses.replace(
            hub.splits[1], rows=99_842)))
    else:
        hub = dataclasses.replace(hub, revision="0" * 40)
    swap_source(monkeypatch, dataclasses.replace(spec, hub=hub))
    dest = tmp_path / "sources"
    with pytest.raises(RulerError, match=message):
        sources.fetch("mmlu", dest)
    left = [p for p in dest.rglob("*")] if dest.exists() else []
    assert [p for p in left if p.is_file()] == []


def test_stand_ins_are_found_and_unofficial():
    mmlu = sources.resolve("mmlu", SOURCES)
    assert not mmlu.official and mmlu.revision is None
    assert dict(mmlu.files) == {"test": ("test.parquet",),
                                "auxiliary_train": ("auxiliary_train.standin.parquet",)}
    hotpot = sources.resolve("hotpotqa_hub", SOURCES)
    assert not hotpot.official
    assert dict(hotpot.files) == {"train": ("ruler2.train.standin.parquet",),
                                  "validation": ("ruler2.validation.standin.parquet",)}
    entry = hotpot.as_manifest().to_json()
    assert entry["repo"] == "hotpotqa/hotpot_qa" and entry["revision"] is None
    # the official files' hashes are all pinned for HotpotQA, so its official digest is known
    assert entry["official_sha256"] == sources.directory_digest(
        {f.path: f.sha256 for s in sources.SOURCES["hotpotqa_hub"].hub.splits for f in s.files})


def test_the_registry_pins_what_third_parties_publish():
    mmlu, hotpot = sources.SOURCES["mmlu"].hub, sources.SOURCES["hotpotqa_hub"].hub
    assert isinstance(mmlu, HubDataset) and (mmlu.repo, mmlu.config) == ("cais/mmlu", "all")
    assert mmlu.revision == "c30699e8356da336a370243923dbaf21066bb9fe"
    assert [(s.name, s.rows) for s in mmlu.splits] == [("test", 14_042),
                                                      ("auxiliary_train", 99_842)]
    assert hotpot.revision == "1908d6afbbead072334abe2965f91bd2709910ab"
    assert [(s.name, s.rows, len(s.files)) for s in hotpot.splits] == [("train", 90_447, 2),
                                                                      ("validation", 7_405, 1)]


@pytest.mark.network
def test_release_with_sources_keeps_a_fetched_copy_official(mmlu_hub, tmp_path):
    """`ruler release --with-sources` puts a fetched copy under sources/ in its repo layout,
    with its fetch record, so `--sources <release>/sources` finds it official again."""
    import shutil

    from ruler.release import _hub_source_files

    dest = tmp_path / "sources"
    sources.fetch("mmlu", dest)
    found = sources.resolve("mmlu", dest)
    planned = _hub_source_files(found)
    assert sorted(p.path_in_repo for p in planned) == sorted(
        f"sources/mmlu/hub/{name}" for name in (TEST, AUX, RECORD))
    copy = tmp_path / "release"
    for p in planned:
        (copy / p.path_in_repo).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p.local, copy / p.path_in_repo)
    again = sources.resolve("mmlu", copy / "sources")
    assert again.official and again.sha256 == found.sha256
