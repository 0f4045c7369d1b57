"""Registry, resolution and download of the third-party inputs the tasks read.

A source is identified by its official URL, size and sha256; the bytes never live in this
repository. Where they are found (`--sources DIR` alone when given, never a silent fall-back;
else `$RULER_SOURCES`, then the user cache), how they are fetched and when a copy is
unofficial is docs/building.md's "Sources".

A fetch writes only what it owns: each download is bounded (`ruler.kernel.download`: the
pinned size or the source's stated ceiling, a total time), staged beside its target
(`fetch_staging`) and installed by a rename once checked; a folder source replaces a folder
holding nothing but its own files (`owned_files`), and a partial essay download never replaces
a better corpus.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import urllib.parse
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import ruler.catalog.hub_sources as hub_sources
from ruler.catalog.essay_fetch import fetch_essays
from ruler.catalog.essay_record import read_record
from ruler.catalog.hub_sources import HubDataset
from ruler.catalog.manifest_records import SourceRecord
from ruler.kernel import owned_files
from ruler.kernel.atomic import replace_folder, replacing
from ruler.kernel.download import (
    DEFAULT_STALL,
    DEFAULT_TOTAL,
    Downloaded,
    Limits,
    NotFound,
    download,
    progress_bar,
    size_text,
)
from ruler.kernel.errors import IncompleteFetch, RulerError
from ruler.kernel.fetch_staging import remove_stale_staging, staging_folder
from ruler.kernel.fetch_staging import tag as fetch_tag
from ruler.kernel.hashing import directory_digest, file_sha256
from ruler.kernel.mirror import layout_hint, mirrored
from ruler.kernel.registry import Registry
from ruler.kernel.user_cache import user_cache_root

SOURCES_ENV = "RULER_SOURCES"
MIRROR_ENV = "RULER_SOURCES_MIRROR"


@dataclass(frozen=True, kw_only=True)
class _Source:
    """What every pinned input has. A source is one of four kinds (`SourceSpec`), each a class
    of its own with only the fields its kind has.

    Args:
        id: short name used by tasks (`essays`, `squad`, ...).
        relpath: location below a sources directory (a file, or a folder).
        alternatives: glob patterns (relative to a sources dir) of accepted non-official copies.
        how_to_get: how to get it, where nothing downloads it.
        ceiling: the most bytes one download of this source may have where its size is pinned
            nowhere (an essay's page, punkt_tab's archive, a Hub file without a pinned size):
            a server sending more is refused there.
        card_license: the Hub licence a folder whose rows quote it carries (the card's front
            matter): "other" (terms that are someone else's or not stated), "cc-by-sa-4.0"
            (share-alike text); "": the generator's own.
        card_note: what the card's Licences section adds of its terms, where a folder uses it.
    """

    id: str
    title: str
    relpath: str
    license: str
    alternatives: tuple[str, ...] = ()
    how_to_get: str = ""
    ceiling: int = 0
    card_license: str = ""
    card_note: str = ""


@dataclass(frozen=True, kw_only=True)
class FileSource(_Source):
    """One file, hashed whole.

    Args:
        urls: official download URLs, tried in order (empty when nothing official exists).
        size: size in bytes of the official file.
        sha256: sha256 of the official file.
        scraper: for a source that upstream publishes only as a procedure, what `ruler sources
            fetch` runs to make it (the file is official when the result's sha256 is `sha256`).
    """

    urls: tuple[str, ...]
    size: int
    sha256: str
    scraper: str = ""

    is_directory = False


@dataclass(frozen=True, kw_only=True)
class _HashedFolder(_Source):
    """A folder of files, each hashed (`sha256`: file -> sha256)."""

    sha256: Mapping[str, str]

    is_directory = True

    def owned_files(self) -> dict[str, str | None]:
        """The files a fetch writes into this folder source, relative to it (any bytes: a
        fetch writes them again): a folder there holding anything else is not replaced."""
        return dict.fromkeys(self.sha256)


@dataclass(frozen=True, kw_only=True)
class ArchiveSource(_HashedFolder):
    """A folder of files unpacked from the archive at `urls` (tried in order): punkt_tab."""

    urls: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class FilesSource(_HashedFolder):
    """A folder of files published one by one (a benchmark's data in its GitHub repository at a
    pinned commit): each file is downloaded from `file_base` + its path (URL-quoted), capped
    at its size in `sizes`."""

    file_base: str
    sizes: Mapping[str, int] = field(default_factory=dict)

    def file_urls(self) -> dict[str, str]:
        """Each file -> the URL it is downloaded from."""
        return {name: self.file_base + urllib.parse.quote(name) for name in self.sha256}


@dataclass(frozen=True, kw_only=True)
class HubSource(_Source):
    """A Hugging Face dataset repo at a pinned revision (`ruler.catalog.hub_sources`):
    `relpath` is the folder its files are fetched into."""

    hub: HubDataset

    is_directory = True

    def owned_files(self) -> dict[str, str | None]:
        return dict.fromkeys([*(f.path for s in self.hub.splits for f in s.files),
                              hub_sources.RECORD])


#: A pinned input: one of the kinds above (tell them apart with `isinstance`).
SourceSpec = FileSource | ArchiveSource | FilesSource | HubSource
#: The kinds that are a folder of their own files.
FolderSource = ArchiveSource | FilesSource | HubSource


#: Every pinned input by id: those the benchmarks declare (`Benchmark.sources`, registered when
#: the table is first read), in the benchmarks' order.
SOURCES: Registry[SourceSpec] = Registry(
    "source", accepts=lambda obj: isinstance(obj, SourceSpec), name_of=lambda spec: spec.id,
    on_miss=lambda: _benchmark_sources())


def _benchmark_sources() -> None:
    from ruler.catalog.benchmarks import BENCHMARK_SPECS

    for bench in BENCHMARK_SPECS.values():
        for spec in bench.sources:
            SOURCES.register(spec, origin=f"benchmark {bench.id}")


@dataclass(frozen=True)
class ResolvedSource:
    """A source found on disk, with the hash actually read."""

    spec: SourceSpec
    path: Path
    sha256: str  # for directories: sha256 over the sorted "name sha256" lines
    official: bool
    note: str = ""  # why it is not the official file, where that is known (a fetch record)
    # A Hub source (`hub_sources`): split -> its files relative to `path`, each file's sha256,
    # and the commit they were downloaded at (None for stand-ins).
    files: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    hashes: Mapping[str, str] = field(default_factory=dict)
    revision: str | None = None

    def as_manifest(self) -> SourceRecord:
        """Its record in a manifest build entry's `sources`. Made from its JSON: a local
        file's record has no Hub fields, a Hub source's records its revision even when None
        (a stand-in), as manifests always had them."""
        return SourceRecord.from_json(self._manifest_json())

    def _manifest_json(self) -> dict[str, Any]:
        spec = self.spec
        if isinstance(spec, HubSource):
            official_sha256 = self.sha256 if self.official else \
                hub_sources.official_digest(spec.hub)
            return {"id": spec.id, "file": self.path.name, "sha256": self.sha256,
                    "official": self.official, "official_sha256": official_sha256,
                    "repo": spec.hub.repo, "config": spec.hub.config,
                    "revision": self.revision, "files": dict(sorted(self.hashes.items()))}
        return {
            "id": spec.id,
            "file": self.path.name,
            "sha256": self.sha256,
            "official": self.official,
            "official_sha256": spec.sha256 if isinstance(spec, FileSource)
            else directory_digest(spec.sha256),
            **({"note": self.note} if self.note else {}),
        }


def default_cache_dir() -> Path:
    return user_cache_root() / "sources"


def search_dirs(explicit: str | os.PathLike | None = None) -> list[Path]:
    """Directories searched for sources, in priority order: `explicit` (`--sources`) alone
    when given (it must be a folder), else `$RULER_SOURCES` and the user cache."""
    if explicit:
        folder = Path(explicit)
        if not folder.is_dir():
            what = "is not a folder" if folder.exists() else "does not exist"
            raise RulerError(f"--sources {folder} {what}: point it at the folder holding the "
                             f"sources (`ruler sources list --sources DIR` shows what it has), "
                             f"or leave it out to use ${SOURCES_ENV} and {default_cache_dir()}")
        return [folder]
    env = os.environ.get(SOURCES_ENV)
    return [*([Path(env)] if env else []), default_cache_dir()]


def _candidates(spec: SourceSpec, root: Path) -> Iterable[Path]:
    yield root / spec.relpath
    for pattern in spec.alternatives:
        yield from sorted(root.glob(pattern))


def _inspect(spec: FileSource | ArchiveSource | FilesSource, path: Path) -> ResolvedSource:
    if not isinstance(spec, FileSource):
        found = {name: file_sha256(path / name) for name in spec.sha256 if (path / name).is_file()}
        missing = sorted(set(spec.sha256) - set(found))
        if missing:
            raise RulerError(f"source {spec.id!r} at {path} is missing {', '.join(missing)}")
        return ResolvedSource(spec, path, directory_digest(found), found == dict(spec.sha256))
    digest = file_sha256(path)
    official = digest == spec.sha256
    record = read_record(path, digest) if spec.scraper and not official else None
    return ResolvedSource(spec, path, digest, official, record.summary() if record else "")


def _hub_resolved(spec: HubSource, found: hub_sources.FoundFiles) -> ResolvedSource:
    checked = hub_sources.inspect(spec.hub, found)
    return ResolvedSource(spec, found.folder, checked.sha256, checked.official,
                          files=dict(found.splits), hashes=checked.hashes,
                          revision=checked.revision)


def resolve(source_id: str, sources_dir: str | os.PathLike | None = None) -> ResolvedSource:
    """Find a source on disk, or raise a RulerError saying where to put it and how to get it."""
    spec = SOURCES[source_id]
    dirs = search_dirs(sources_dir)
    for root in dirs:
        if isinstance(spec, HubSource):
            found = hub_sources.find(spec.hub, spec.relpath, root)
            if found is not None:
                return _hub_resolved(spec, found)
            continue
        for path in _candidates(spec, root):
            if path.exists() and (path.is_dir() == spec.is_directory):
                return _inspect(spec, path)
    raise RulerError(missing_message(spec, dirs, explicit=bool(sources_dir)))


def recheck(source: ResolvedSource) -> str | None:
    """Why `source` is not at its path with its bytes on this machine, or None when it is
    (another machine of a Ray build must read exactly the files the driver resolved)."""
    if not source.path.exists():
        return f"source {source.spec.id!r} not found at {source.path}"
    try:
        found = (_hub_resolved(source.spec, hub_sources.FoundFiles(
            source.path, dict(source.files), source.revision is not None))
            if isinstance(source.spec, HubSource) else _inspect(source.spec, source.path))
    except (RulerError, OSError) as e:
        return str(e)
    if found.sha256 != source.sha256:
        return (f"source {source.spec.id!r} at {source.path} has other bytes (sha256 "
                f"{found.sha256[:12]}, expected {source.sha256[:12]})")
    return None


def missing_message(spec: SourceSpec, dirs: Sequence[Path], explicit: bool = False) -> str:
    """Why `spec` was not found in `dirs` (`explicit`: the one folder --sources named)."""
    dest = f" --dest {dirs[0]}" if explicit else ""
    fetch = f"run `ruler sources fetch {spec.id}{dest}`"
    if isinstance(spec, HubSource):
        how = (f"{fetch} (downloads {spec.hub.repo} config {spec.hub.config} at "
               f"{spec.hub.revision[:12]} from the Hub)")
    elif isinstance(spec, FilesSource):
        how = f"{fetch} (downloads its {len(spec.sha256)} files from {spec.file_base})"
    elif spec.urls:
        how = f"{fetch} (downloads {spec.urls[0]})"
    else:  # a file nothing downloads (the essays: made by a scraper)
        how = spec.how_to_get.replace(f"fetch {spec.id}`", f"fetch {spec.id}{dest}`")
    if explicit:
        return (f"source {spec.id!r} ({spec.title}) not found in --sources {dirs[0]}: expected "
                f"{dirs[0] / spec.relpath}. To get it: {how}; or point --sources at a folder "
                f"that has it.")
    looked = ", ".join(str(d) for d in dirs)
    return (f"source {spec.id!r} ({spec.title}) not found: expected <sources>/{spec.relpath} "
            f"in one of [{looked}]. To get it: {how}; or point --sources / ${SOURCES_ENV} at a "
            f"folder that has it.")


def status(sources_dir: str | os.PathLike | None = None
           ) -> list[tuple[SourceSpec, ResolvedSource | None, str]]:
    """Every registered source with what was found (for `ruler sources list`)."""
    rows: list[tuple[SourceSpec, ResolvedSource | None, str]] = []
    for spec in SOURCES.values():
        try:
            rows.append((spec, resolve(spec.id, sources_dir), ""))
        except RulerError as e:
            rows.append((spec, None, str(e)))
    return rows


def mirror_base(mirror: str | None = None) -> str | None:
    """The mirror to fetch from: `mirror` (`--mirror`), else `$RULER_SOURCES_MIRROR`, else none."""
    return mirror or os.environ.get(MIRROR_ENV) or None


def fetch(source_id: str, dest_root: str | os.PathLike | None = None, *,
          urls: Sequence[str] | None = None, timeout: float = DEFAULT_STALL,
          mirror: str | None = None, total: float = DEFAULT_TOTAL,
          say: Callable[[str], object] | None = None) -> ResolvedSource:
    """Download the official file into `dest_root` (default: the user cache) and check its hash;
    for a scraped source (the essays), run upstream's procedure (`essay_fetch.fetch_essays`)
    unless `urls` names copies of the finished file.

    `mirror` (default `$RULER_SOURCES_MIRROR`) serves the same URLs laid out as host/path;
    `total` bounds the time of a download, `timeout` each read; `say` is told what is
    downloaded from where before the wait. What is written, and never, is the module
    docstring's: nothing left behind on failure, a folder holding anything else refused
    before any download. A scraped source that got every essay is written whatever its hash
    (official only with the registry's; its record says why not); one that got fewer never
    replaces a complete or official copy (`IncompleteFetch`).
    """
    spec = SOURCES[source_id]
    mirror = mirror_base(mirror)
    limits = Limits(total=total, stall=timeout)
    tell: Callable[[str], object] = say or (lambda text: None)
    if urls is not None and not isinstance(spec, (FileSource, ArchiveSource)):
        raise RulerError(f"source {spec.id!r} is not one file or archive: urls (copies to "
                         f"download) do not apply; fetch it without them")
    scrape = isinstance(spec, FileSource) and bool(spec.scraper) and urls is None
    if urls is None and isinstance(spec, (FileSource, ArchiveSource)) and not scrape:
        urls = spec.urls
    if urls is not None and not urls:
        raise RulerError(f"source {spec.id!r} has no official download URL: {spec.how_to_get}")
    root = Path(dest_root) if dest_root else default_cache_dir()
    target = root / spec.relpath
    if not isinstance(spec, FileSource):
        _check_folder_target(spec, target)  # before any download: a refusal costs nothing
    created = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_staging(target)
        if isinstance(spec, HubSource):
            hub_sources.fetch(spec.hub, target, limits, ceiling=spec.ceiling, say=tell,
                              check_old=lambda old: _refuse_foreign(spec, old, target))
            found = hub_sources.find(spec.hub, spec.relpath, root)
            assert found is not None  # just fetched there
            return _hub_resolved(spec, found)
        if isinstance(spec, FilesSource):
            return _fetch_files(spec, target, mirror, limits, tell)
        if scrape:
            assert isinstance(spec, FileSource)
            try:
                fetch_essays(target, spec.sha256, mirror=mirror, limits=limits,
                             page_bytes=spec.ceiling, say=tell)
            except IncompleteFetch as e:
                e.source = _inspect(spec, target) if target.is_file() else None
                raise
            return _inspect(spec, target)
        assert urls is not None
        return _fetch_into(spec, [mirrored(u, mirror) for u in urls], target, limits, mirror,
                           tell)
    except BaseException:
        _remove_empty(created)  # deepest first: only the folders made here, if still empty
        raise


def _check_folder_target(spec: FolderSource, target: Path) -> None:
    """A folder source is installed by replacing `target` whole: refuse a link there, a file,
    or a folder holding anything but the source's own files (naming them)."""
    if target.is_symlink():
        raise RulerError(f"{target} is a link (to {os.readlink(target)}): `ruler sources fetch "
                         f"{spec.id}` installs the source as a folder of its own there, "
                         f"replacing it whole, and never writes through a link; remove the link "
                         f"(what it points to stays as it is), or pass --dest a folder without "
                         f"one")
    if target.exists() and not target.is_dir():
        raise RulerError(f"{target} is a file, where `ruler sources fetch {spec.id}` installs a "
                         f"folder: move it away, or pass another --dest")
    if target.is_dir():
        _refuse_foreign(spec, target, target)


def _refuse_foreign(spec: FolderSource, folder: Path, shown_as: Path) -> None:
    """Refuse to replace `folder` (shown as `shown_as`) if it holds anything but the source's
    own files."""
    found = owned_files.foreign_entries(folder, spec.owned_files())
    if found:
        raise RulerError(
            f"{shown_as} holds {owned_files.listing(found)}, which `ruler sources fetch "
            f"{spec.id}` did not write there (it replaces only the source's own "
            f"{len(spec.owned_files())} file(s)): move {owned_files.them(found)} out, or pass "
            f"another --dest")


def _download_file(url: str, path: Path, max_bytes: int, limits: Limits,
                   progress: Callable[[int], object] | None = None) -> Downloaded:
    with open(path, "wb") as out:
        return download(url, out.write, max_bytes=max_bytes, limits=limits, progress=progress)


def _not_found(e: RulerError, mirror: str | None) -> str:
    """`e`'s text, with how a mirror is laid out when the mirror had no such file."""
    return f"{e} ({layout_hint(mirror)})" if mirror and isinstance(e, NotFound) else str(e)


def _fetch_into(spec: FileSource | ArchiveSource, urls: Sequence[str], target: Path,
                limits: Limits, mirror: str | None,
                say: Callable[[str], object]) -> ResolvedSource:
    errors = []
    size = spec.size if isinstance(spec, FileSource) else None
    cap = size if size is not None else spec.ceiling
    for url in urls:
        bound = f"{size_text(cap)}" if size is not None else f"at most {size_text(cap)}"
        say(f"{spec.id}: downloading {url} ({bound}, within {limits.total:g} s)")
        try:
            with progress_bar(spec.id, size) as bar:
                if isinstance(spec, ArchiveSource):
                    staging = staging_folder(target)
                    try:
                        _download_file(url, staging / "download", cap, limits, bar.update)
                        _install_zip_member_dir(spec, staging / "download", staging, target)
                    finally:
                        shutil.rmtree(staging, ignore_errors=True)
                else:
                    with replacing(target, fetch_tag()) as tmp_file:  # in place once it matches
                        _download_file(url, tmp_file, cap, limits, bar.update)
                        _check_file(spec, tmp_file, url)
        except RulerError as e:
            errors.append(_not_found(e, mirror))
            continue
        return _inspect(spec, target)
    raise RulerError(f"could not fetch source {spec.id!r}: " + "; ".join(errors))


def _fetch_files(spec: FilesSource, target: Path, mirror: str | None, limits: Limits,
                 say: Callable[[str], object]) -> ResolvedSource:
    """A `file_base` source: every file downloaded into a staging folder beside `target`, each
    capped at its pinned size and checked against its pinned sha256; the folder replaces
    `target` only when all match, so a failure leaves nothing (and an earlier copy
    untouched)."""
    urls = spec.file_urls()
    size = sum(spec.sizes.get(name, 0) for name in urls)
    say(f"{spec.id}: downloading {len(urls)} files ({size_text(size)}) from "
        f"{mirrored(spec.file_base, mirror)} (each within {limits.total:g} s)")
    staging_root = staging_folder(target)
    try:
        staging = staging_root / target.name
        with progress_bar(spec.id, size or None) as bar:
            for name, url in urls.items():
                url = mirrored(url, mirror)
                path = staging / name
                path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    got = _download_file(url, path, spec.sizes.get(name) or spec.ceiling,
                                         limits, bar.update)
                except RulerError as e:
                    raise RulerError(f"could not fetch source {spec.id!r}: "
                                     f"{_not_found(e, mirror)}") from None
                if got.sha256 != spec.sha256[name]:
                    raise RulerError(f"could not fetch source {spec.id!r}: {url} gave sha256 "
                                     f"{got.sha256}, expected {spec.sha256[name]} (the file "
                                     f"changed upstream or the download is corrupt)")
        staging.chmod(0o755)  # mkdtemp makes 0700; a sources folder is for sharing
        replace_folder(staging, target,
                       check_old=lambda old: _refuse_foreign(spec, old, target))
    finally:
        shutil.rmtree(staging_root, ignore_errors=True)
    return _inspect(spec, target)


def _remove_empty(folders: Sequence[Path]) -> None:
    for folder in folders:
        with contextlib.suppress(OSError):  # not empty (something was put there meanwhile)
            folder.rmdir()


def _check_file(spec: FileSource, path: Path, url: str) -> None:
    size = path.stat().st_size
    digest = file_sha256(path)
    if size != spec.size or digest != spec.sha256:
        raise RulerError(
            f"{url} gave {size} bytes with sha256 {digest}; expected {spec.size} bytes with "
            f"sha256 {spec.sha256} (the file changed upstream or the download is corrupt)")


#: The most bytes one member of punkt_tab's archive may unpack to (the English files are
#: some 100 kB each).
ZIP_MEMBER_CEILING = 16_000_000


def _install_zip_member_dir(spec: ArchiveSource, archive: Path, tmp: Path, target: Path) -> None:
    """Extract the English punkt_tab files from NLTK's zip and check each file's hash."""
    staging = tmp / "extract"
    staging.mkdir()
    try:
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                parts = Path(info.filename).parts
                if len(parts) >= 2 and parts[-2] == "english" and parts[-1] in spec.sha256:
                    if info.file_size > ZIP_MEMBER_CEILING:  # zipfile reads no more than this
                        raise RulerError(f"downloaded punkt_tab archive: {info.filename} "
                                         f"unpacks to {info.file_size:,} bytes, more than "
                                         f"{ZIP_MEMBER_CEILING:,}")
                    (staging / parts[-1]).write_bytes(z.read(info))
    except zipfile.BadZipFile as e:
        raise RulerError(f"downloaded punkt_tab archive is not a zip file: {e}") from None
    for name, expected in spec.sha256.items():
        got = file_sha256(staging / name) if (staging / name).exists() else "missing"
        if got != expected:
            raise RulerError(f"punkt_tab/english/{name}: sha256 {got}, expected {expected}")
    staging.chmod(0o755)
    replace_folder(staging, target, check_old=lambda old: _refuse_foreign(spec, old, target))
