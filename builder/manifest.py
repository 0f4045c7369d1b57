"""`OUT/manifest.json`: what was built, from what, with which content.

Layout (format_version 1):
  generator {name, version}; packages {dist: version} (the last writer's environment);
  builds {<config>: {tokenizer {identity}, prompt_mode, seed, samples, generator_version,
                     packages {dist: version}, identity {...}, counting [...],
                     sources {id: {...}}, official, tasks, lengths[, variant {field: value}]}};
    (a variant config, `<tokenizer>--<suffix>`, records its parameters: builder.variants)
  files {"data/<config>/<task>/<L>.parquet": {config, task, max_seq_length, rows, bytes,
                                                sha256, content_sha256, build_key, packages,
                                                counting[, repeated_share {mean, max}]}}
`sha256` hashes the file bytes (stable for a pinned pyarrow); `content_sha256` hashes the rows
themselves, so content can be compared across library versions. A build's `identity` and each
file's `build_key` are defined in `ruler.builder.identity`.

Several processes may build into one folder at once (other tasks, `--shard i/n`): whoever
changes the manifest holds `manifest_lock(OUT)`, re-reads it, changes it and writes it
atomically before letting go, so no writer loses another's entries.

A manifest is read only through `read_manifest`, which checks it (`manifest_schema`): its
entries name split files of known configs, tasks and lengths, nothing else. A split file is
opened only through `split_file`, which follows no symbolic link below the folder.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Iterator

import pyarrow as pa

from ruler.builder import __version__
from ruler.builder.errors import RulerError
from ruler.builder.manifest_schema import FORMAT_VERSION, check_manifest
from ruler.builder.schema import LONG_TEXT_COLUMNS

MANIFEST_NAME = "manifest.json"
#: Held by every writer of the manifest (see the module docstring); a dot file, so neither the
#: dataset loader nor `ruler release` ever sees it.
LOCK_NAME = ".manifest.lock"
#: A file entry's field, present where a task's source ran out before L and was repeated (as
#: upstream repeats it): {"mean", "max"} over the rows of the share of a row's context, in
#: characters, that repeats text of the source already in that context. The card reports it.
REPEATED_FIELD = "repeated_share"
GENERATOR_NAME = "ruler-bench"

#: Packages whose versions can change generated content or file bytes.
TRACKED_PACKAGES = ("pyarrow", "tokenizers", "transformers", "tiktoken", "sentencepiece",
                    "mistral-common", "nltk", "wonderwords", "english-words", "numpy", "scipy",
                    "datasets")


def package_versions() -> dict[str, str]:
    versions = {}
    for dist in TRACKED_PACKAGES:
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def empty_manifest() -> dict[str, Any]:
    return {"format_version": FORMAT_VERSION,
            "generator": {"name": GENERATOR_NAME, "version": __version__},
            "packages": package_versions(), "builds": {}, "files": {}}


def read_manifest(out: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a build folder, checked (`manifest_schema`), or an empty one when the
    folder has none yet."""
    path = Path(out) / MANIFEST_NAME
    if not path.exists():
        return empty_manifest()
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise RulerError(f"{path} is not valid JSON ({e}): restore it, or build into another "
                         f"folder") from None
    except OSError as e:
        raise RulerError(f"cannot read {path}: {e.strerror or e}") from None
    return check_manifest(manifest, str(path))


def split_file(root: str | os.PathLike, rel: str) -> Path:
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


def check_split_files(root: str | os.PathLike, rels: Iterable[str]) -> None:
    """`split_file` for each path: no symbolic link below `root` on the way to any of them."""
    for rel in rels:
        split_file(root, rel)


@contextmanager
def manifest_lock(out: str | os.PathLike) -> Iterator[None]:
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


def write_text_atomic(path: Path, text: str) -> None:
    """Write `path` whole or not at all: a temporary file beside it (`.<name>.*.tmp`, removed
    on any failure), then `os.replace`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=temp_prefix(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def temp_prefix(path: Path, tag: str = "") -> str:
    """Temporary files of `path` (this module's, the split writer's) are named
    `<prefix>*.tmp` beside it; `tag` (one build's) narrows them to those of one build."""
    return f".{Path(path).name}.{tag + '.' if tag else ''}"


def remove_stale_temps(path: Path) -> None:
    """Remove temporary files of `path` that a killed writer left (`write_text_atomic`). Only
    for a file written under the manifest lock, by its holder: no other writer is mid-write."""
    for tmp in path.parent.glob(f"{temp_prefix(path)}*tmp"):
        tmp.unlink(missing_ok=True)


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
                      + "\n")


def write_manifest(out: str | os.PathLike, manifest: dict[str, Any]) -> None:
    """Write atomically (hold `manifest_lock` when others may write too)."""
    manifest["packages"] = package_versions()
    write_json_atomic(Path(out) / MANIFEST_NAME, manifest)


def canonical_row(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# Control characters JSON escapes other than "\n" (which the fast path replaces itself).
_OTHER_CONTROLS = bytes(c for c in range(32) if c != 10)


def canonical_row_bytes(row: dict[str, Any]) -> bytes:
    """`canonical_row(row).encode("utf-8")`, faster for long inputs: json escapes a 128K
    prompt character by character (~4 ms), while a text holding no control character but
    newlines is escaped by three byte replacements; done for the columns that hold a whole
    context (`schema.LONG_TEXT_COLUMNS`: `input`, `context`). tests/test_manifest.py compares
    both encodings."""
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
    def rows():
        for batch in table.to_batches(max_chunksize=64):
            yield from batch.to_pylist()
    return content_sha256_rows(rows())


def data_path(config: str, task: str, max_seq_length: int) -> str:
    """Path of one split file, relative to the build folder."""
    return f"data/{config}/{task}/{max_seq_length}.parquet"
