"""`ruler release` against a loopback Hub-compatible server (real HfApi, real HTTP)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from datasets import load_dataset
from huggingface_hub import HfApi, constants

from helpers.fake_hub import FakeHub, hub_for_this_process
from ruler import release
from ruler.builder.manifest import LOCK_NAME, Manifest
from ruler.cards.render import write_card
from ruler.commands.main import main
from ruler.eval.integrations.lm_eval_export import TaskSource, export_files
from ruler.kernel.hashing import file_sha256

pytestmark = [pytest.mark.build]

TOKEN = "hf_loopbackSecretToken123"
REPO = "ruler-org/ruler-test"
SOURCES = Path(os.environ["RULER_SOURCES"])  # set by conftest to the pinned inputs
TASKS = ("niah_single_1", "niah_multikey_2")
LENGTHS = (1024, 2048)


@pytest.fixture
def out(built_gpt4_niah, tmp_path) -> Path:
    """A copy of gpt-4: TASKS x LENGTHS x 3 samples (conftest), for each test to change."""
    return Path(shutil.copytree(built_gpt4_niah, tmp_path / "ruler"))


@pytest.fixture
def hub(tmp_path, monkeypatch):
    # conftest sets HF_HUB_OFFLINE=1 for the whole run; huggingface_hub read it at import.
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    # The fake stores large files through LFS; with hf_xet installed huggingface_hub 2.4 would
    # send them through Xet, which the fake does not serve (see fake_hub and the Xet test).
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    with FakeHub(tmp_path / "hub", token=TOKEN) as server:
        yield server


def run(capsys, *argv) -> tuple[int, str]:
    code = main(["release", *map(str, argv)])
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert TOKEN not in text  # the token is never printed, whatever happens
    return code, text


def config_splits(folder: Path) -> list[tuple[str, str]]:
    import yaml

    meta = yaml.safe_load((folder / "README.md").read_text().split("---\n", 2)[1])
    return [(c["config_name"], d["split"]) for c in meta["configs"] for d in c["data_files"]]


@pytest.mark.network
def test_round_trip_one_commit_then_tag(out, hub, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)  # read at call time, not at import
    code, text = run(capsys, out, "--repo", REPO, "--tag", "v1")
    assert code == 0, text
    assert f"released {hub.endpoint}/datasets/{REPO}" in text

    repo = hub.repos[REPO]
    initial, released = repo.commits
    assert released.parent == initial.sha and repo.tags == {"v1": released.sha}
    posts = [s for s in hub.steps() if s.startswith("POST")]
    n_parquet = len(json.loads((out / "manifest.json").read_text())["files"])
    assert posts == [  # the Parquet files go through LFS: one batch, a verify per object
        "POST /api/repos/create", f"POST /api/datasets/{REPO}/preupload/main",
        f"POST /datasets/{REPO}.git/info/lfs/objects/batch",
        *[f"POST /datasets/{REPO}.git/info/lfs/objects/verify"] * n_parquet,
        "POST /api/validate-yaml", f"POST /api/datasets/{REPO}/commit/main",
        f"POST /api/datasets/{REPO}/tag/{released.sha}"]
    commit_body = next(b for b in hub.bodies if b.startswith(b'{"key": "header"')
                       or b.startswith(b'{"key":"header"'))
    assert json.loads(commit_body.splitlines()[0])["value"]["parentCommit"] == initial.sha
    assert all(TOKEN.encode() not in b for b in hub.bodies)

    stored = hub.stored_dir(REPO)
    local = sorted(p.relative_to(out).as_posix() for p in out.rglob("*")
                   if p.is_file() and p.name != LOCK_NAME)  # the builders' lock stays local
    remote = sorted(p.relative_to(stored).as_posix() for p in stored.rglob("*") if p.is_file())
    # + the lm-eval task folder, its tasks reading this release's tag
    tasks = export_files(Manifest.load(out), TaskSource(REPO, "v1"))
    assert remote == sorted(local + [".gitattributes"] + [f"lm_eval/{n}" for n in tasks])
    for rel in local:
        if rel != "README.md":
            assert (stored / rel).read_bytes() == (out / rel).read_bytes(), rel
    for name, text in tasks.items():
        assert (stored / "lm_eval" / name).read_text() == text
    card = (stored / "README.md").read_text()
    assert f'load_dataset("{REPO}", "gpt-4", split="1024", revision="v1")' in card
    assert config_splits(stored) == config_splits(out)
    for config, split in config_splits(out):
        got = load_dataset(str(stored), config, split=split, cache_dir=str(tmp_path / "c1"))
        want = load_dataset(str(out), config, split=split, cache_dir=str(tmp_path / "c2"))
        assert got.to_list() == want.to_list() and got.num_rows > 0


@pytest.mark.network
@pytest.mark.parametrize("step,status,message", [
    ("commit", 500, "storage backend unavailable"),
    ("commit", 409, "conflicting commit in progress"),
    # 507: a 5xx the client does not retry (it backs off ~23 s on 500/502/503/504 here)
    ("preupload", 507, "insufficient storage for this upload"),
    ("create", 401, "Invalid credentials in Authorization header"),
    ("refs", 500, "refs database timeout"),
    ("validate", 400, "configs: split names must be strings"),
])
def test_hub_failure_leaves_no_commit_and_no_tag(out, hub, capsys, step, status, message):
    hub.fail(step, status, message)
    code, text = run(capsys, out, "--repo", REPO, "--tag", "v1", "--endpoint", hub.endpoint)
    assert code != 0
    assert f"HTTP {status}: {message}" in text and "Traceback" not in text
    repo = hub.repos.get(REPO)
    assert repo is None or (len(repo.commits) == 1 and not repo.tags)
    assert not any("/tag/" in s for s in hub.steps())


@pytest.mark.network
def test_a_server_that_echoes_request_headers_never_gets_the_token_printed(out, hub, capsys):
    hub.reflect_headers = True
    hub.fail("preupload", 507, "insufficient storage for this upload")
    code, text = run(capsys, out, "--repo", REPO, "--tag", "v1", "--endpoint", hub.endpoint)
    assert code == 2 and "insufficient storage" in text and "authorization" in text.lower()
    assert "Bearer <redacted>" in text  # run() checks the token is nowhere
    assert not re.search(r"hf_[A-Za-z0-9]{8,}", text)


@pytest.mark.network
def test_a_failed_first_release_deletes_the_repo_it_created(out, hub, capsys):
    hub.fail("commit", 500, "storage backend unavailable")
    code, text = run(capsys, out, "--repo", REPO, "--tag", "v1", "--endpoint", hub.endpoint)
    assert code == 2 and f"the repo {REPO} this release created was deleted again" in text
    assert REPO not in hub.repos


@pytest.mark.network
def test_a_repo_that_cannot_be_deleted_again_is_said_to_remain(out, hub, capsys):
    hub.fail("commit", 500, "storage backend unavailable")
    hub.fail("delete", 403, "deleting repos is not allowed for this token")
    code, text = run(capsys, out, "--repo", REPO, "--tag", "v1", "--endpoint", hub.endpoint)
    assert code == 2 and "an empty repo remains" in text
    assert len(hub.repos[REPO].commits) == 1


@pytest.mark.network
def test_a_failed_release_into_an_existing_repo_leaves_it_alone(out, hub, capsys):
    assert run(capsys, out, "--repo", REPO, "--tag", "v1", "--endpoint", hub.endpoint)[0] == 0
    hub.fail("commit", 500, "storage backend unavailable")
    code, text = run(capsys, out, "--repo", REPO, "--tag", "v2", "--endpoint", hub.endpoint)
    assert code == 2 and "deleted" not in text
    assert len(hub.repos[REPO].commits) == 2


@pytest.mark.network
def test_release_rebuilds_rows_from_the_identity_before_uploading(out, hub, capsys):
    rel = "data/gpt-4/niah_single_1/1024.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ruler.builder.manifest import content_sha256
    from ruler.builder.schema import ROW_SCHEMA
    from ruler.kernel.hashing import file_sha256

    rows = pq.read_table(out / rel).to_pylist()
    for r in rows:  # a forgery every hash agrees with: another sentence in every haystack
        r["input"] = r["input"].replace(".", ";", 1)
    table = pa.Table.from_pylist(rows, schema=ROW_SCHEMA)
    pq.write_table(table, out / rel)
    m = json.loads((out / "manifest.json").read_text())
    m["files"][rel].update(bytes=(out / rel).stat().st_size, sha256=file_sha256(out / rel),
                           content_sha256=content_sha256(table))
    (out / "manifest.json").write_text(json.dumps(m))
    code, text = run(capsys, out, "--repo", REPO, "--endpoint", hub.endpoint)
    assert code == 2 and "regenerated from the manifest's identity" in text
    assert "nothing was released" in text and hub.requests == []


@pytest.mark.network
def test_tag_failure_names_the_untagged_commit(out, hub, capsys):
    """The Hub cannot commit and tag atomically: the one step after the commit says so."""
    hub.fail("tag", 500, "tag service down")
    code, text = run(capsys, out, "--repo", REPO, "--tag", "v1", "--endpoint", hub.endpoint)
    repo = hub.repos[REPO]
    assert code == 2 and "tag failed: HTTP 500: tag service down" in text
    assert f"commit {repo.head.sha} is on main but untagged" in text and not repo.tags


@pytest.mark.network
def test_unreachable_endpoint_is_one_clear_message(out, hub, capsys):
    code, text = run(capsys, out, "--repo", REPO, "--endpoint", "http://127.0.0.1:9")
    assert code == 2 and "read repo failed: " in text and "Traceback" not in text


@pytest.mark.network
def test_wrong_token_is_one_clear_message(out, hub, capsys, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_wrong")
    code, text = run(capsys, out, "--repo", REPO, "--endpoint", hub.endpoint)
    assert code == 2 and "HTTP 401" in text and "hf_wrong" not in text
    assert REPO not in hub.repos


@pytest.mark.network
def test_repo_moved_after_reading_head_commits_nothing(out, hub):
    """parent_commit: a commit that lands between our read and our commit makes ours fail."""

    class RacingApi(HfApi):
        raced = False

        def preupload_lfs_files(self, repo_id, **kwargs):
            if not self.raced:  # once: create_commit calls this again internally
                self.raced = True
                HfApi(endpoint=self.endpoint, token=TOKEN).upload_file(
                    path_or_fileobj=b"someone else", path_in_repo="other.txt",
                    repo_id=repo_id, repo_type="dataset")
            return super().preupload_lfs_files(repo_id, **kwargs)

    with pytest.raises(release.RulerError, match="HTTP 412"):
        release.release(out, REPO, tag="v1", api=RacingApi(endpoint=hub.endpoint, token=TOKEN),
                        echo=lambda *_: None)
    repo = hub.repos[REPO]
    assert len(repo.commits) == 2 and set(repo.head.files) == {".gitattributes", "other.txt"}
    assert not repo.tags


@pytest.mark.network
def test_existing_tag_is_refused_before_committing(out, hub, capsys):
    assert run(capsys, out, "--repo", REPO, "--tag", "v1", "--endpoint", hub.endpoint)[0] == 0
    code, text = run(capsys, out, "--repo", REPO, "--tag", "v1", "--endpoint", hub.endpoint)
    assert code == 2 and "tag 'v1' already exists" in text
    assert len(hub.repos[REPO].commits) == 2


@pytest.mark.network
def test_next_release_removes_files_the_build_no_longer_has(out, hub, capsys):
    assert run(capsys, out, "--repo", REPO, "--tag", "v1", "--endpoint", hub.endpoint)[0] == 0
    gone = "data/gpt-4/niah_single_1/2048.parquet"
    m = json.loads((out / "manifest.json").read_text())
    del m["files"][gone]
    (out / "manifest.json").write_text(json.dumps(m))
    (out / gone).unlink()
    write_card(out)
    code, text = run(capsys, out, "--repo", REPO, "--tag", "v2", "--endpoint", hub.endpoint)
    assert code == 0, text
    repo = hub.repos[REPO]
    assert gone in repo.commits[1].files and gone not in repo.head.files
    task = "lm_eval/ruler_gpt-4_niah_single_1_2048.yaml"  # its lm-eval task goes with it
    assert task in repo.commits[1].files and task not in repo.head.files
    assert repo.tags == {"v1": repo.commits[1].sha, "v2": repo.commits[2].sha}


@pytest.mark.network
def test_bad_input_makes_no_request(out, hub, capsys):
    code, text = run(capsys, out, "--repo", "bad org/ruler!", "--endpoint", hub.endpoint)
    assert code == 2 and "invalid repo id 'bad org/ruler!'" in text
    for bad in ("org/a--b", "org/", "org/x.git", "-org/x", "a/b/c"):
        assert run(capsys, out, f"--repo={bad}", "--endpoint", hub.endpoint)[0] == 2
    assert run(capsys, out, "--repo", REPO, "--tag", "v 1", "--endpoint", hub.endpoint)[0] == 2
    # a damaged build never reaches the Hub
    path = out / "data/gpt-4/niah_single_1/1024.parquet"
    path.write_bytes(path.read_bytes()[:-10])
    code, text = run(capsys, out, "--repo", REPO, "--endpoint", hub.endpoint)
    assert code == 2 and "verify failed" in text and "nothing was released" in text
    assert hub.requests == []


def test_unofficial_build_is_refused_unless_allowed(out, capsys):
    m = json.loads((out / "manifest.json").read_text())
    m["builds"]["gpt-4"]["official"] = False  # as a build with an unpinned tokenizer records
    m["builds"]["gpt-4"]["tokenizer"]["pinned"] = False
    (out / "manifest.json").write_text(json.dumps(m))
    write_card(out)  # as that build renders it (verify checks the card is the manifest's)
    code, text = run(capsys, out, "--repo", REPO, "--dry-run")
    assert code == 2 and "unofficial" in text and "--allow-unofficial" in text
    code, text = run(capsys, out, "--repo", REPO, "--dry-run", "--allow-unofficial")
    assert code == 0, text


def test_dry_run_prints_the_plan_and_uploads_nothing(out, capsys, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)  # a plan needs no token and no network
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    code, text = run(capsys, out, "--repo", REPO, "--dry-run")
    assert code == 0, text
    assert f"-> https://huggingface.co/datasets/{REPO} (public)" in text
    m = Manifest.load(out)
    assert f"tag {release.default_tag(m)}, one commit" in text
    for rel in m.files:
        assert rel in text
    total = sum((out / p).stat().st_size for p in m.files) + (out / "manifest.json").stat().st_size
    tasks = export_files(m, TaskSource(REPO, release.default_tag(m)))
    assert f"  {6 + len(tasks)} files, " in text and "dry run: nothing uploaded" in text
    assert all(f"lm_eval/{name}" in text for name in tasks)
    total += sum(len(t.encode()) for t in tasks.values())
    assert int(text.split("(")[-1].split(" bytes)")[0]) > total  # + the rendered card


@pytest.mark.network
def test_with_sources_uploads_the_recorded_sources_so_others_can_rebuild(out, hub, capsys):
    from ruler.catalog.sources import resolve

    recorded = {sid: resolve(sid, SOURCES)
                for sid in ("essays", "squad", "punkt_tab", "mmlu", "hotpotqa_hub")}
    m = json.loads((out / "manifest.json").read_text())
    m["builds"]["gpt-4"]["sources"] = {sid: r.as_manifest().to_json()
                                       for sid, r in recorded.items()}
    m["builds"]["gpt-4"]["official"] = all(r.official for r in recorded.values())
    (out / "manifest.json").write_text(json.dumps(m))
    write_card(out)
    code, text = run(capsys, out, "--repo", REPO, "--with-sources", "--sources", SOURCES,
                     "--allow-unofficial", "--endpoint", hub.endpoint)
    assert code == 0, text
    stored = hub.stored_dir(REPO) / "sources"
    # the partial SQuAD copy keeps its own name; a rebuild pointed at sources/ finds both
    assert (stored / "squad" / recorded["squad"].path.name).is_file()
    assert (stored / "mmlu" / "auxiliary_train.standin.parquet").is_file()  # a stand-in: named
    assert (stored / "hotpotqa" / "ruler2.train.standin.parquet").is_file()  # as --sources finds
    for sid, r in recorded.items():
        assert resolve(sid, stored).sha256 == r.sha256
    m["builds"]["gpt-4"]["sources"]["essays"].update(sha256="0" * 64, official=False)
    (out / "manifest.json").write_text(json.dumps(m))
    write_card(out)
    code, text = run(capsys, out, "--repo", REPO, "--dry-run", "--with-sources",
                     "--sources", SOURCES, "--allow-unofficial")
    assert code == 2 and "but the build used" in text


def test_offline_mode_and_missing_token_are_clear_errors(out, capsys, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    code, text = run(capsys, out, "--repo", REPO, "--endpoint", "http://127.0.0.1:9")
    assert code == 2 and "HF_HUB_OFFLINE is set" in text
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(out / "no-token"))
    code, text = run(capsys, out, "--repo", REPO, "--endpoint", "http://127.0.0.1:9")
    assert code == 2 and "no Hugging Face token" in text


# --- the large-file path: LFS as the Hub serves it ---------------------------------------------

@pytest.fixture
def hub_here(tmp_path, monkeypatch):
    """A fake Hub this process uploads to and downloads from (huggingface_hub and datasets
    read their endpoint and offline switch at import)."""
    import datasets

    with hub_for_this_process(tmp_path, TOKEN, monkeypatch) as server:
        monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", False)
        monkeypatch.setattr(datasets.config, "HF_ENDPOINT", server.endpoint)
        monkeypatch.setattr(datasets.config, "HUB_DATASETS_URL",
                            server.endpoint + "/datasets/{repo_id}/resolve/{revision}/{path}")
        yield server


def storage_puts(hub: FakeHub) -> list[str]:
    """The object ids of the PUTs the storage server got (/upload/ns/name/oid[/part])."""
    return [path.split("/")[4] for method, path, _ in hub.storage_requests if method == "PUT"]


def commit_lines(hub: FakeHub) -> list[dict]:
    body = [b for b in hub.bodies if b.startswith(b'{"key": "header"')
            or b.startswith(b'{"key":"header"')][-1]
    return [json.loads(line) for line in body.splitlines()]


def assert_tag_serves_the_build(out: Path, tag: str, tmp_path: Path) -> None:
    """Download the released revision: every file holds the build's very bytes, and
    `load_dataset` of the repo at the tag (HfFileSystem, LFS redirects) reads its rows."""
    from huggingface_hub import snapshot_download

    manifest = json.loads((out / "manifest.json").read_text())
    back = Path(snapshot_download(REPO, repo_type="dataset", revision=tag,
                                  cache_dir=str(tmp_path / "download")))
    for rel, entry in manifest["files"].items():
        assert file_sha256(back / rel) == entry["sha256"] == file_sha256(out / rel), rel
    assert (back / "manifest.json").read_bytes() == (out / "manifest.json").read_bytes()
    for config, split in config_splits(out):
        if config != "gpt-4":
            continue  # the per-task configs read the same files
        got = load_dataset(REPO, config, split=split, revision=tag,
                           cache_dir=str(tmp_path / "hub-rows"))
        want = load_dataset(str(out), config, split=split, cache_dir=str(tmp_path / "rows"))
        assert got.to_list() == want.to_list() and got.num_rows > 0


@pytest.mark.network
@pytest.mark.parametrize("multipart", [False, True], ids=["basic", "multipart"])
def test_parquet_goes_through_lfs_and_the_tag_serves_the_same_bytes(out, hub_here, capsys,
                                                                    tmp_path, multipart):
    """The path every real Parquet file takes: preupload answers "lfs", the LFS batch API
    hands out upload and verify actions, the bytes go to storage (signed URLs, never the Hub
    token), the commit names each file by sha256; the tag then serves the very bytes."""
    hub = hub_here
    if multipart:  # files above 4 KB in 4 KB parts, a completion call each
        hub.lfs_multipart_chunk = 4096
    code, text = run(capsys, out, "--repo", REPO, "--tag", "v1")
    assert code == 0, text
    manifest = json.loads((out / "manifest.json").read_text())
    oids = {rel: file_sha256(out / rel) for rel in manifest["files"]}
    assert {p for p, mode in hub.upload_modes.items() if mode == "lfs"} == set(oids)
    assert hub.upload_modes["README.md"] == hub.upload_modes["manifest.json"] == "regular"
    assert set(storage_puts(hub)) == set(oids.values())
    assert not any(auth for *_, auth in hub.storage_requests)  # the token stays on the Hub
    big = [rel for rel in oids if (out / rel).stat().st_size > 4096]
    if multipart:
        assert big and hub.steps().count("POST /api/complete_multipart") == len(big)
        assert len(storage_puts(hub)) > len(oids)
    else:
        assert len(storage_puts(hub)) == len(oids)
    lines = commit_lines(hub)
    lfs = {x["value"]["path"]: (x["value"]["oid"], x["value"]["size"])
           for x in lines if x["key"] == "lfsFile"}
    assert lfs == {rel: (oid, (out / rel).stat().st_size) for rel, oid in oids.items()}
    assert {"README.md", "manifest.json"} <= {x["value"]["path"] for x in lines
                                              if x["key"] == "file"}
    repo = hub.repos[REPO]
    assert len(repo.commits) == 2 and repo.at("v1").lfs == frozenset(oids)
    assert_tag_serves_the_build(out, "v1", tmp_path)


@pytest.mark.network
def test_an_upload_cut_off_once_is_sent_again_and_the_release_completes(out, hub_here, capsys,
                                                                        tmp_path):
    hub = hub_here
    hub.fail_uploads(1)  # the connection drops half-way through the first object's body
    code, text = run(capsys, out, "--repo", REPO, "--tag", "v1")
    assert code == 0, text
    n_files = len(json.loads((out / "manifest.json").read_text())["files"])
    assert len(storage_puts(hub)) == n_files + 1  # the cut one, once more
    repo = hub.repos[REPO]
    assert len(repo.commits) == 2 and repo.tags == {"v1": repo.head.sha}
    assert_tag_serves_the_build(out, "v1", tmp_path)


@pytest.mark.network
def test_an_upload_refused_mid_release_commits_nothing_and_a_rerun_converges(out, hub_here,
                                                                            capsys, tmp_path):
    """Storage refuses one object (an expired signed URL: not retried) while the others are
    stored: no commit, no tag, the existing repo exactly as it was. Running the same command
    again sends only what is missing and lands one commit with the right files."""
    hub = hub_here
    hub.create_repo(REPO, private=False)
    before = hub.repos[REPO].head
    hub.fail_uploads(1, status=403, after=2)
    code, text = run(capsys, out, "--repo", REPO, "--tag", "v1")
    assert code == 2 and "Traceback" not in text
    manifest = json.loads((out / "manifest.json").read_text())
    oids = {rel: file_sha256(out / rel) for rel in manifest["files"]}
    failed = next(rel for rel, oid in oids.items() if oid not in hub.repos[REPO].lfs_objects)
    # which file, what the storage said, and what to do
    assert f"uploading {failed!r} failed: HTTP 403" in text and "run the release again" in text
    assert "cannot write to this repo" not in text  # a storage URL's 403 is not the token's
    repo = hub.repos[REPO]
    assert repo.commits == [before] and not repo.tags
    assert set(repo.lfs_objects) == set(oids.values()) - {oids[failed]}  # stored, invisible
    first = len(storage_puts(hub))

    code, text = run(capsys, out, "--repo", REPO, "--tag", "v1")
    assert code == 0, text
    assert storage_puts(hub)[first:] == [oids[failed]]  # only what was missing
    assert len(repo.commits) == 2 and repo.tags == {"v1": repo.head.sha}
    assert repo.head.parent == before.sha and repo.head.lfs == frozenset(oids)
    assert_tag_serves_the_build(out, "v1", tmp_path)


@pytest.mark.network
def test_with_xet_a_hub_without_xet_storage_leaves_nothing(out, hub, capsys, monkeypatch):
    """huggingface_hub 2.4 sends every LFS-mode file through Xet whenever hf_xet is installed
    (it never asks the server), so that is the path a default install takes on the real Hub.
    The fake has no Xet storage (its write-token route answers 501): the release fails in
    pre-upload, before any commit, and the repo it created is deleted again."""
    pytest.importorskip("hf_xet")
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", False)
    code, text = run(capsys, out, "--repo", REPO, "--tag", "v1", "--endpoint", hub.endpoint)
    assert code == 2 and "pre-upload failed" in text and "501" in text, text
    assert f"GET /api/datasets/{REPO}/xet-write-token/main" in hub.steps()
    assert not any("lfs/objects" in s for s in hub.steps()) and not hub.storage_requests
    assert REPO not in hub.repos


# --- no output holds the token --------------------------------------------------------------

@pytest.mark.slow  # end to end: two releases by the command in its own process
@pytest.mark.network
@pytest.mark.subprocess
def test_no_line_release_prints_holds_the_token_when_the_hub_echoes_it(out, hub, tmp_path):
    """A Hub that echoes the caller's token into a file name of the previous release (printed
    in "removed ..."), into the upload URLs it hands out (huggingface_hub's retry warning
    prints the URL on stderr) and into its error messages. The real command in its own
    process, success and failure: neither stdout nor stderr holds the token or any hf_...
    string."""
    hub.create_repo(REPO, private=False)
    echoed = f"data/gpt-4/{TOKEN}.parquet"
    hub.apply_commit(hub.repos[REPO], "a file named by an echoing server", {echoed: b"x"}, [])
    hub.echo_token = hub.reflect_headers = True
    hub.fail_uploads(1, status=503)  # retried by the client, after a warning naming the URL
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_TOKEN": TOKEN, "HF_HUB_OFFLINE": "0",
           "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(tmp_path / "hf_home")}

    def release_cli(tag: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ruler", "release", str(out), "--repo", REPO,
                               "--tag", tag], env=env, capture_output=True, text=True,
                              timeout=300)

    ok = release_cli("v1")
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert echoed not in hub.repos[REPO].head.files
    assert "removed 1 file(s) of the previous release: data/gpt-4/<redacted>.parquet" \
        in ok.stdout
    assert "HTTP Error 503 thrown while requesting PUT" in ok.stderr  # the echoed URL's line
    hub.fail("commit", 500, "storage backend unavailable")
    failed = release_cli("v2")
    assert failed.returncode == 2 and "HTTP 500: storage backend unavailable" in failed.stderr
    for proc in (ok, failed):
        for text in (proc.stdout, proc.stderr):
            assert TOKEN not in text and not re.search(r"hf_[A-Za-z0-9]{8,}", text), text


def test_release_without_a_token_stops_before_verifying(out, capsys, monkeypatch):
    """One line and exit 2 before verify spends seconds: the build here is damaged, and the
    answer is still the missing token (verify never ran). A dry run needs no token."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(out / "no-token"))
    path = out / "data/gpt-4/niah_single_1/1024.parquet"
    path.write_bytes(path.read_bytes()[:-10])
    code, text = run(capsys, out, "--repo", REPO, "--endpoint", "http://127.0.0.1:9")
    assert code == 2
    assert text.splitlines() == [
        "ruler: error: no Hugging Face token: run `hf auth login` or set HF_TOKEN"]
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    code, text = run(capsys, out, "--repo", REPO, "--endpoint", "http://127.0.0.1:9")
    assert code == 2 and len(text.splitlines()) == 1 and "HF_HUB_OFFLINE is set" in text
    code, text = run(capsys, out, "--repo", REPO, "--dry-run")
    assert code == 2 and "verify failed" in text
