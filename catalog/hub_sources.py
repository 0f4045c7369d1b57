"""Sources that are Hugging Face dataset repos at a pinned revision (MMLU and
HotpotQA), found on disk or downloaded from the Hub.

Upstream's generators call `load_dataset("cais/mmlu", "all")` and
`load_dataset("hotpotqa/hotpot_qa", "distractor")` with no revision: whatever the Hub serves
that day (`cais/mmlu` once dropped `auxiliary_train` from `all` and added it back). Here a
source names the repo, the config's Parquet files per split and the commit they are read at.
`ruler sources fetch` downloads exactly those files into `<dest>/<relpath>/`, checks each
file's sha256 against the pin where one is known and always against the Hub's own LFS hash
at that commit, checks the row counts, and records what it got in `ruler-source.json` beside
them (`RECORD`: each file's sha256, size, rows and the URL its bytes came from). Each download
is streamed and bounded (`ruler.kernel.download`): capped at the file's pinned size, or the
source's stated ceiling, and in time. A build reads the files from there, or from stand-in
copies in the Hub schema (`HubSplit.standin`, e.g. a 285-row `auxiliary_train`): those make an
unofficial build, as a partial SQuAD copy does.

A copy is official when every split is read from the pinned files and each file has the
pinned sha256, or, for a file whose hash is pinned nowhere we could read, the sha256 the
download recorded from the pinned commit.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ruler.kernel.atomic import replace_folder
from ruler.kernel.download import Limits, hub_file, progress_bar, size_text
from ruler.kernel.errors import RulerError
from ruler.kernel.fetch_staging import staging_folder
from ruler.kernel.hashing import directory_digest, file_sha256

#: Written by `fetch` beside the files: the repo, the commit the Hub served, each file's sha256.
RECORD = "ruler-source.json"


@dataclass(frozen=True)
class HubFile:
    """One Parquet file of a split, as the repo holds it at the pinned revision."""

    path: str  # in the repo, e.g. "all/test-00000-of-00001.parquet"
    sha256: str | None = None  # None: published nowhere we could read; checked against the Hub
    size: int | None = None


@dataclass(frozen=True)
class HubSplit:
    name: str
    rows: int  # the official row count (checked after a download)
    files: tuple[HubFile, ...]
    #: Glob, relative to the sources folder, of an accepted stand-in copy of this split (a
    #: Parquet file or files in the Hub schema).
    standin: str


@dataclass(frozen=True)
class HubDataset:
    repo: str
    config: str
    revision: str  # a commit id
    splits: tuple[HubSplit, ...]
    #: Columns each split must have (a download, or a stand-in, in the wrong schema is refused).
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class FoundFiles:
    """A source's files on disk: the folder, each split's files relative to it, and whether
    they are the pinned files (not stand-ins)."""

    folder: Path
    splits: dict[str, tuple[str, ...]]
    pinned_layout: bool


def find(hub: HubDataset, relpath: str, root: Path) -> FoundFiles | None:
    """The pinned files under `root/<relpath>`, else stand-ins of every split under `root`,
    else None."""
    folder = root / relpath
    if all((folder / f.path).is_file() for s in hub.splits for f in s.files):
        return FoundFiles(folder, {s.name: tuple(f.path for f in s.files) for s in hub.splits},
                          True)
    found: dict[str, list[Path]] = {s.name: sorted(p for p in root.glob(s.standin)
                                                   if p.is_file()) for s in hub.splits}
    if not all(found.values()):
        return None
    parents = {p.parent for ps in found.values() for p in ps}
    base = Path(os.path.commonpath([str(p) for p in parents]))
    return FoundFiles(base, {name: tuple(p.relative_to(base).as_posix() for p in ps)
                             for name, ps in found.items()}, False)


@dataclass(frozen=True)
class Checked:
    """What a copy is: its digest over every file's sha256, whether it is the official one,
    each file's sha256 and the commit it was fetched at (None for stand-ins)."""

    sha256: str
    official: bool
    hashes: dict[str, str]
    revision: str | None


def inspect(hub: HubDataset, files: FoundFiles) -> Checked:
    """Hash the files and decide whether they are the official ones (module docstring)."""
    hashes = {rel: file_sha256(files.folder / rel)
              for rels in files.splits.values() for rel in rels}
    record = read_record(files.folder) if files.pinned_layout else None
    revision = None
    official = files.pinned_layout
    if official:
        recorded = (record or {}).get("files", {})
        pinned_commit = (record or {}).get("revision") == hub.revision
        for split in hub.splits:
            for f in split.files:
                want = f.sha256 or (recorded.get(f.path, {}).get("sha256") if pinned_commit
                                    else None)
                official = official and want is not None and hashes[f.path] == want
        revision = (record or {}).get("revision") or (hub.revision if official else None)
    return Checked(directory_digest(hashes), official, hashes, revision)


def read_record(folder: Path) -> dict | None:
    try:
        record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def official_digest(hub: HubDataset) -> str | None:
    """The digest of the official files, when every pinned hash is known (else None: the
    official bytes are known only after a download)."""
    pins = {f.path: f.sha256 for s in hub.splits for f in s.files}
    known = {path: sha256 for path, sha256 in pins.items() if sha256 is not None}
    return directory_digest(known) if len(known) == len(pins) else None


# --- the download ------------------------------------------------------------------------------

def fetch(hub: HubDataset, target: Path, limits: Limits, *, ceiling: int = 0,
          say: Callable[[str], object] | None = None,
          check_old: Callable[[Path], None] | None = None) -> None:
    """Download the pinned files of `hub` into the folder `target`, checked (module
    docstring); the folder appears whole or not at all. Each file is capped at its pinned size,
    or `ceiling` where none is pinned, and bounded in time by `limits`; `say` is told what is
    waited for; `check_old` (`atomic.replace_folder`) may refuse the folder being replaced."""
    tell: Callable[[str], object] = say or (lambda text: None)
    staging_root = staging_folder(target)
    try:
        staging = staging_root / "files"
        staging.mkdir()
        files: dict[str, dict] = {}  # repo path -> what was downloaded
        for split in hub.splits:
            rows = 0
            for f in split.files:
                got = _download(hub, f, staging / f.path, limits, f.size or ceiling, tell)
                if got["revision"] != hub.revision:
                    raise RulerError(f"{hub.repo}: asked for revision {hub.revision}, the Hub "
                                     f"served {got['revision']}")
                rows += got["rows"]
                files[f.path] = {"sha256": got["sha256"], "size": got["size"],
                                 "rows": got["rows"], "url": got["url"]}
            if rows != split.rows:
                raise RulerError(f"{hub.repo} ({hub.config}) split {split.name}: {rows:,} rows "
                                 f"at {hub.revision}, expected {split.rows:,}")
        record = {"repo": hub.repo, "config": hub.config, "revision": hub.revision,
                  "files": files}
        (staging / RECORD).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n",
                                      encoding="utf-8")
        staging.chmod(0o755)
        replace_folder(staging, target, check_old=check_old)
    finally:
        shutil.rmtree(staging_root, ignore_errors=True)


def _download(hub: HubDataset, f: HubFile, dest: Path, limits: Limits, cap: int,
              say: Callable[[str], object]) -> dict:
    """One file at the pinned revision: its bytes at `dest`, checked; what was served."""
    from ruler.kernel.scrub import scrub

    # Read at call time, never at import, so a mirror or a test server can be chosen per run.
    endpoint = os.environ.get("HF_ENDPOINT") or None
    where = f"{hub.repo}@{hub.revision}:{f.path}"
    size_said = size_text(f.size) if f.size else f"at most {size_text(cap)}"
    say(f"{hub.repo}: downloading {f.path} at {hub.revision[:12]} ({size_said}, within "
        f"{limits.total:g} s) from {endpoint or 'the Hub'}")
    try:
        with progress_bar(f.path.rsplit("/", 1)[-1], f.size) as bar:
            meta, got = hub_file(hub.repo, f.path, hub.revision, dest, max_bytes=cap,
                                 limits=limits, repo_type="dataset", endpoint=endpoint,
                                 progress=bar.update)
    except Exception as e:  # network, auth, offline mode, a missing file: one clear line
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        kind = "" if isinstance(e, RulerError) else f"{type(e).__name__}: "
        raise RulerError(scrub(f"could not download {where} from the Hub: {kind}{first}")
                         ) from None
    digest, size = got.sha256, got.size
    hub_sha = (meta.etag or "").strip('"').lower()
    if len(hub_sha) == 64 and digest != hub_sha:  # an LFS file's ETag is its sha256
        raise RulerError(f"{where}: downloaded sha256 {digest}, the Hub says {hub_sha} "
                         f"(corrupt download)")
    if f.sha256 and digest != f.sha256:
        raise RulerError(f"{where}: sha256 {digest}, pinned {f.sha256} (the file changed "
                         f"upstream at this revision, or the download is corrupt)")
    if f.size is not None and size != f.size:
        raise RulerError(f"{where}: {size:,} bytes, pinned {f.size:,}")
    return {"revision": meta.commit_hash, "sha256": digest, "size": size,
            "url": _without_query(got.final_url),
            "rows": parquet_rows([dest], hub.columns, where)}


def _without_query(url: str) -> str:
    """`url` as recorded: a storage server's signed query (a credential for a while) left
    out."""
    return url.split("?", 1)[0]


def parquet_rows(paths: Sequence[Path], columns: Sequence[str], what: str) -> int:
    """The rows of Parquet files that have `columns`, or a RulerError naming `what`."""
    import pyarrow.parquet as pq

    rows = 0
    for path in paths:
        try:
            meta = pq.ParquetFile(path)
        except Exception as e:  # pyarrow raises several types for a file that is no Parquet
            raise RulerError(f"{what}: not a Parquet file ({type(e).__name__}: {e})") from None
        missing = [c for c in columns if c not in meta.schema_arrow.names]
        if missing:
            raise RulerError(f"{what}: no column(s) {', '.join(missing)} (not the "
                             f"{'/'.join(columns)} schema)")
        rows += meta.metadata.num_rows
    return rows


def split_paths(source, split: str) -> list[Path]:
    """The files a resolved Hub source reads for `split`."""
    return [source.path / rel for rel in source.files[split]]


def read_split(source, split: str, columns: Sequence[str]) -> list[dict]:
    """A split's rows (only `columns`), in file order, as dicts (`source`: a resolved Hub
    source, `ruler.catalog.sources.ResolvedSource`)."""
    import pyarrow.parquet as pq

    paths = split_paths(source, split)
    parquet_rows(paths, columns, f"source {source.spec.id!r} split {split}")
    # ParquetFile.read, not read_table: that imports pyarrow.dataset and pandas (a quarter of
    # a second of every build's start-up)
    return [row for p in paths for row in pq.ParquetFile(p).read(columns=list(columns))
            .to_pylist()]
