"""`OUT/manifest.json`: what was built, from what, with which content.

Layout (format_version 1):
  generator {name, version}; packages {dist: version} (the last writer's environment);
  builds {<config>: {tokenizer {identity}, prompt_mode, seed, samples, generator_version,
                     packages {dist: version}, identity {...}, counting [...],
                     sources {id: {...}}, official, tasks, lengths[, variant {field: value}]
                     [, benchmark[, benchmark_package]][, <axis>...]
                     [, declared_tasks {<task>: {task: <family>, args: {...}}}]
                     [, suites [<suite>...]]}};
    (a variant config, `<tokenizer>--<suffix>`, records its parameters: catalog.variants;
    a config of another benchmark than the default records its id, "benchmark", a plug-in's
    also the distribution that provides it, and each of the benchmark's build axes its value
    under the axis's name: catalog.benchmarks)
  files {"data/<config>/<task>/<L>.parquet": {config, task, max_seq_length, rows, bytes,
                                                sha256, content_sha256, build_key, packages,
                                                counting, length_rule
                                                [, repeated_share {mean, max}]}}
    (`length_rule`: how the file's rows count their `length`, catalog.length_rules; the build
    entry lists its files' rules as `length_rules`)
`sha256` hashes the file bytes (stable for a pinned pyarrow); `content_sha256` hashes the rows
themselves, so content can be compared across library versions. A build's `identity` and each
file's `build_key` are defined in `ruler.builder.identity`.

The manifest is the contract every area reads (build, merge, card, verify, release, eval), so
it is read and written only here, as a typed object: `Manifest` with its `BuildEntry` and
`FileEntry` records and the queries readers need (configs, the files of a config, its tasks
and lengths). `Manifest.load` checks what it reads (`manifest_schema`): its entries name split
files of known configs, tasks and lengths, nothing else. `to_json` gives back exactly the dict
that was read, fields of a newer writer included (kept in each record's `extra`), so a
manifest this version rewrites loses nothing.

Several processes may build into one folder at once (other tasks, `--shard i/n`): whoever
changes the manifest holds `manifest_lock(OUT)`, re-reads it, changes it and saves it
atomically before letting go, so no writer loses another's entries:

    with manifest_lock(out):
        m = Manifest.load(out)
        ...
        m.save(out)

A split file is opened only through `split_file`, which follows no symbolic link below the
folder.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.metadata
import json
import os
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, Iterable, Iterator, Mapping

import pyarrow as pa

from ruler.benchmarks import DEFAULT
from ruler.builder import __version__
from ruler.builder.manifest_schema import FORMAT_VERSION, check_manifest
from ruler.builder.packages import CONTENT_PACKAGES, FILE_PACKAGES
from ruler.builder.schema import LONG_TEXT_COLUMNS
from ruler.catalog.benchmarks import Benchmark, get_benchmark, in_task_order, task_rank
from ruler.catalog.declared import DeclaredTask
from ruler.catalog.manifest_records import (
    IdentityRecord,
    SourceRecord,
    TokenizerRecord,
    is_official,
    unofficial_reasons,
)
from ruler.kernel.atomic import write_json_atomic
from ruler.kernel.errors import RulerError
from ruler.kernel.json_record import Decode, FrozenRecord, record_map

MANIFEST_NAME = "manifest.json"
#: Held by every writer of the manifest (see the module docstring); a dot file, so neither the
#: dataset loader nor `ruler release` ever sees it.
LOCK_NAME = ".manifest.lock"
GENERATOR_NAME = "ruler-bench"

#: The environment the top-level `packages` records (the last writer's): what shapes file
#: bytes and rows (`packages.FILE_PACKAGES`, every tokenizer kind's `CONTENT_PACKAGES`), and
#: `datasets`, the loader the card's examples and `ruler verify` read the folder with.
TRACKED_PACKAGES = tuple(dict.fromkeys(
    (*FILE_PACKAGES, *(p for kind in CONTENT_PACKAGES.values() for p in kind), "datasets")))


def package_versions() -> dict[str, str]:
    """The installed versions of TRACKED_PACKAGES (those installed)."""
    return dict(_package_versions())


@functools.cache
def _package_versions() -> tuple[tuple[str, str], ...]:
    # Read once per process: a build saves the manifest after every file, and each lookup
    # scans the environment's distributions (~15 ms for all). The packages this process has
    # imported are the ones it ran, whatever is installed later.
    versions = []
    for dist in TRACKED_PACKAGES:
        with suppress(importlib.metadata.PackageNotFoundError):
            versions.append((dist, importlib.metadata.version(dist)))
    return tuple(versions)


def data_path(config: str, task: str, max_seq_length: int) -> str:
    """Path of one split file, relative to the build folder."""
    return f"data/{config}/{task}/{max_seq_length}.parquet"


# --- the records ------------------------------------------------------------------------------
# A record's optional fields are None where the manifest does not have them (a manifest of an
# older version, a build made without that option), and `to_json` leaves them out again: no
# field of the format may be null (`manifest_schema`), so None never stands for a value.
# (`kernel.json_record`: JSON <-> dataclass, keys a record does not know kept in `extra`.)

@dataclass(frozen=True)
class FileEntry(FrozenRecord):
    """One split file: what it is (config, task, L), what it holds (rows, hashes) and what
    built it (build key, package versions, how its lengths were counted)."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({
        "build_key", "packages", "counting", "repeated_share", "length_rule"})

    config: str
    task: str
    max_seq_length: int
    rows: int
    bytes: int
    sha256: str
    content_sha256: str
    build_key: str | None = None
    packages: dict[str, str] | None = None
    counting: str | None = None  # a key of builder.counting.COUNTING_METHODS
    # Present where the task's source ran out before L and was repeated (as upstream repeats
    # it): {"mean", "max"} over the rows of the share of a row's context, in characters, that
    # repeats text of the source already in that context. The card reports it.
    repeated_share: dict[str, float] | None = None
    # How its rows' `length` is counted (catalog.length_rules); None: not recorded (a file
    # built before files recorded it)
    length_rule: str | None = None

    @property
    def path(self) -> str:
        """Its path relative to the build folder: its key in the manifest."""
        return data_path(self.config, self.task, self.max_seq_length)


@dataclass(frozen=True)
class BuildEntry(FrozenRecord):
    """One config's build: the tokenizer record, the identity fields (`builder.identity`), and
    what its files and sources make of it (sources, official, tasks, lengths, counting)."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({
        "prompt_mode", "seed", "samples", "generator_version", "packages", "identity",
        "counting", "sources", "official", "tasks", "lengths", "variant", "benchmark",
        "benchmark_package", "length_rules", "declared_tasks", "suites"})
    DECODE: ClassVar[Mapping[str, Decode]] = {
        "tokenizer": TokenizerRecord.from_json, "identity": IdentityRecord.from_json,
        "sources": record_map(SourceRecord.from_json),
        "declared_tasks": record_map(DeclaredTask.from_json)}

    tokenizer: TokenizerRecord  # TokenizerIdentity.as_manifest()
    prompt_mode: str | None = None
    seed: int | None = None
    samples: int | None = None
    generator_version: str | None = None
    packages: dict[str, str] | None = None
    identity: IdentityRecord | None = None
    counting: list[str] | None = None
    # its files' length rules (catalog.length_rules), derived from them as `counting` is
    length_rules: list[str] | None = None
    sources: dict[str, SourceRecord] | None = None  # id -> ResolvedSource.as_manifest()
    official: bool | None = None
    tasks: list[str] | None = None
    lengths: list[int] | None = None
    variant: dict[str, int] | None = None  # catalog.variants: {field: value}
    # catalog.benchmarks: the benchmark's id (absent: `ruler.benchmarks.DEFAULT`), and
    # for a plug-in's, the distribution that provides it (what a reader without it names).
    # Its axes' values are recorded under their names (`axis_records`), kept in `extra`.
    benchmark: str | None = None
    benchmark_package: str | None = None
    # Its declared tasks (`catalog.declared`): task name -> {task: <family>, args:
    # {...}}, the generators' own schema; every reader of the folder declares them from here.
    declared_tasks: dict[str, DeclaredTask] | None = None
    # the suites built into it (`catalog.suites`: `ruler build --suite`), by name
    suites: list[str] | None = None

    @property
    def source_hashes(self) -> dict[str, str]:
        """id -> sha256 of the sources the build recorded."""
        return {sid: s.sha256 for sid, s in (self.sources or {}).items()}

    @property
    def benchmark_id(self) -> str:
        """The benchmark the build records (absent: the default one)."""
        return self.benchmark or DEFAULT

    def spec(self) -> Benchmark:
        """The benchmark the build records; one not installed is one line naming it and the
        package it comes from."""
        return get_benchmark(self.benchmark_id, self.benchmark_package)

    def axis_records(self) -> dict[str, Any]:
        """What the build records for each axis of its benchmark (a `language`)."""
        return {a.name: self.extra[a.name] for a in self.spec().axes if a.name in self.extra}

    def axis_values(self) -> dict[str, object]:
        """Its benchmark's axes' values as the build records them: what readers take a
        config's language from, never its name."""
        return self.spec().axis_values(self.axis_records())

    def axis_codes(self) -> dict[str, str]:
        """`axis_values` as codes ({"language": "en-ko"}): what scores record."""
        return self.spec().axis_codes(self.axis_values())

    def official_by_record(self) -> bool:
        """Whether its tokenizer and sources, as recorded, make it official (what `official`
        must say: `manifest_records.is_official`)."""
        return is_official(self.tokenizer, self.sources or {})

    def unofficial_reasons(self) -> list[str]:
        """Why the build is not official; [] when its entry says it is (or says nothing)."""
        if self.official in (True, None):
            return []
        return unofficial_reasons(self.tokenizer, self.sources or {}) or [
            "its manifest entry says so"]


@dataclass
class Manifest:
    """A build folder's manifest. Writers change it only under `manifest_lock`, after
    re-reading it (`load`), and `save` it before letting go."""

    format_version: int = FORMAT_VERSION
    generator: dict[str, str] | None = None  # {name, version} of the last writer
    packages: dict[str, str] | None = None  # the last writer's environment (TRACKED_PACKAGES)
    builds: dict[str, BuildEntry] = field(default_factory=dict)
    files: dict[str, FileEntry] = field(default_factory=dict)  # path -> entry, sorted by path
    extra: dict[str, Any] = field(default_factory=dict)

    # --- reading and writing ------------------------------------------------------------------

    @classmethod
    def empty(cls) -> Manifest:
        return cls(generator={"name": GENERATOR_NAME, "version": __version__},
                   packages=package_versions())

    @classmethod
    def load(cls, out: str | os.PathLike[str]) -> Manifest:
        """The manifest of build folder `out`, checked (`manifest_schema`), or an empty one
        when the folder has none yet."""
        path = Path(out) / MANIFEST_NAME
        if not path.exists():
            return cls.empty()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise RulerError(f"{path} is not valid JSON ({e}): restore it, or build into "
                             f"another folder") from None
        except OSError as e:
            raise RulerError(f"cannot read {path}: {e.strerror or e}") from None
        return cls._of(check_manifest(data, str(path)))

    @classmethod
    def from_json(cls, data: Any, where: str = MANIFEST_NAME) -> Manifest:
        """A manifest from its parsed JSON (one downloaded from the Hub, a test's edit),
        checked as `load` checks it; `where` names it in errors."""
        return cls._of(check_manifest(copy.deepcopy(data), where))

    @classmethod
    def _of(cls, data: dict[str, Any]) -> Manifest:
        top = {"format_version", "generator", "packages", "builds", "files"}
        return cls(format_version=data["format_version"], generator=data.get("generator"),
                   packages=data.get("packages"),
                   builds={c: BuildEntry.from_json(b) for c, b in data["builds"].items()},
                   files={r: FileEntry.from_json(f) for r, f in data["files"].items()},
                   extra={k: v for k, v in data.items() if k not in top})

    def to_json(self) -> dict[str, Any]:
        """The manifest as JSON data: exactly the dict `load` read when nothing changed."""
        data = {**copy.deepcopy(self.extra), "format_version": self.format_version,
                "builds": {c: b.to_json() for c, b in self.builds.items()},
                "files": {r: f.to_json() for r, f in self.files.items()}}
        for name in ("generator", "packages"):
            if getattr(self, name) is not None:
                data[name] = copy.deepcopy(getattr(self, name))
        return data

    def save(self, out: str | os.PathLike[str]) -> None:
        """Write `OUT/manifest.json` atomically, recording this process's package versions
        (hold `manifest_lock` when others may write too)."""
        self.packages = package_versions()
        write_json_atomic(Path(out) / MANIFEST_NAME, self.to_json())

    # --- queries ------------------------------------------------------------------------------

    def configs(self) -> list[str]:
        """The configs with a build entry, by name."""
        return sorted(self.builds)

    def build(self, config: str) -> BuildEntry | None:
        return self.builds.get(config)

    def file(self, rel: str) -> FileEntry | None:
        """The entry of split file `rel` (`data/<config>/<task>/<L>.parquet`), if listed."""
        return self.files.get(rel)

    def files_of(self, config: str, tasks: Iterable[str] | None = None,
                 lengths: Iterable[int] | None = None) -> list[FileEntry]:
        """The files of `config` (only of these tasks and lengths, when given), in upstream's
        task order, then by length."""
        tasks = None if tasks is None else set(tasks)
        lengths = None if lengths is None else {int(L) for L in lengths}
        found = [f for f in self.files.values() if f.config == config
                 and (tasks is None or f.task in tasks)
                 and (lengths is None or f.max_seq_length in lengths)]
        return sorted(found, key=lambda f: (task_rank(f.task), f.max_seq_length))

    def tasks(self, config: str) -> list[str]:
        """The tasks `config` has files of, in upstream's order."""
        return in_task_order(f.task for f in self.files_of(config))

    def lengths(self, config: str) -> list[int]:
        """The lengths `config` has files of, ascending."""
        return sorted({f.max_seq_length for f in self.files_of(config)})

    # --- changes (under the lock) -------------------------------------------------------------

    def put_file(self, entry: FileEntry) -> None:
        """Record a split file, replacing an earlier entry; files stay sorted by path."""
        self.files[entry.path] = entry
        self.files = dict(sorted(self.files.items()))

    def remove_file(self, rel: str) -> None:
        del self.files[rel]

    def put_build(self, config: str, entry: BuildEntry) -> None:
        self.builds[config] = entry

    def remove_build(self, config: str) -> None:
        self.builds.pop(config, None)


def split_file(root: str | os.PathLike[str], rel: str) -> Path:
    """`root/rel` for a split file's path relative to a build folder, refusing a symbolic
    link anywhere below `root` (`data`, a config's or task's folder, the file): a link could
    make a write land, or a read come from, outside the folder, or one config's files alias
    another's. `root` itself may be a link (a build folder on another disk)."""
    path = Path(root)
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or any(p in ("..", ".") for p in parts):
        raise RulerError(f"{rel!r} is not a path inside {root}")
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise RulerError(f"{path} is a symbolic link: ruler reads and writes split files "
                             f"only inside the build folder itself, never through a link (it "
                             f"may lead out of the folder); replace the link by the folder or "
                             f"file it points to, or link the whole build folder instead")
    return path


def check_split_files(root: str | os.PathLike[str], rels: Iterable[str]) -> None:
    """`split_file` for each path: no symbolic link below `root` on the way to any of them."""
    for rel in rels:
        split_file(root, rel)


def load_manifest(out: Path) -> Manifest:
    """The manifest, strictly: unlike `Manifest.load`, a missing one is an error here. Its
    structure is checked where it is read (`manifest_schema`), so every later check can
    index entries without guarding each access; its split files are reached through no
    symbolic link (`split_file`)."""
    path = out / MANIFEST_NAME
    if not out.is_dir():
        raise RulerError(f"{out} is not a folder")
    if not path.is_file():
        raise RulerError(f"{path} not found: {out} is not a `ruler build` output folder")
    manifest = Manifest.load(out)
    check_split_files(out, manifest.files)
    return manifest


@contextmanager
def manifest_lock(out: str | os.PathLike[str]) -> Iterator[None]:
    """Hold OUT's manifest lock (blocking; other writers hold it for milliseconds)."""
    from filelock import FileLock

    lock = FileLock(str(Path(out) / LOCK_NAME))
    try:
        lock.acquire()
    except OSError as e:
        raise RulerError(f"cannot write to {out}: {e.strerror or e}") from None
    try:
        yield
    finally:
        lock.release()


def canonical_row(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# Control characters JSON escapes other than "\n" (which the fast path replaces itself).
_OTHER_CONTROLS = bytes(c for c in range(32) if c != 10)


def canonical_row_bytes(row: dict[str, Any]) -> bytes:
    """`canonical_row(row).encode("utf-8")`, faster for long inputs: json escapes a 128K
    prompt character by character (~4 ms), while a text holding no control character but
    newlines is escaped by three byte replacements; done for the columns that hold a whole
    context (`schema.LONG_TEXT_COLUMNS`: `input`, `context`). tests/builder/test_manifest.py
    compares both encodings."""
    long = [k for k in LONG_TEXT_COLUMNS if isinstance(row.get(k), str) and row[k]]
    data = {k: row[k].encode("utf-8") for k in long}
    if not long or any(len(d.translate(None, _OTHER_CONTROLS)) != len(d) for d in data.values()):
        return canonical_row(row).encode("utf-8")
    # Each slot occurs once: a key is unique, and a quote inside a JSON string is escaped.
    text = canonical_row({**row, **dict.fromkeys(long, "")})
    parts, rest = [], text
    for k in sorted(long, key=lambda k: text.find(f'"{k}":""')):
        pieces = rest.split(f'"{k}":""')
        if len(pieces) != 2:
            return canonical_row(row).encode("utf-8")
        before, rest = pieces
        escaped = data[k].replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
        parts += [before.encode("utf-8"), f'"{k}":"'.encode("utf-8"), escaped, b'"']
    parts.append(rest.encode("utf-8"))
    return b"".join(parts)


def content_sha256_rows(rows: Iterable[dict[str, Any]]) -> str:
    h = hashlib.sha256()
    for row in rows:
        h.update(canonical_row_bytes(row))
        h.update(b"\n")
    return h.hexdigest()


def content_sha256(table: pa.Table) -> str:
    """Hash of a table's rows in order, independent of Parquet encoding details."""
    def rows() -> Iterator[dict[str, Any]]:
        for batch in table.to_batches(max_chunksize=64):
            yield from batch.to_pylist()
    return content_sha256_rows(rows())


def read_manifest(out: str | os.PathLike[str]) -> dict[str, Any]:
    """`Manifest.load(out)` as its JSON data: for tools and tests that look at the format
    itself. Code reads the typed `Manifest`."""
    return Manifest.load(out).to_json()

