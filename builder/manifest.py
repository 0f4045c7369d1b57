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
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

import pyarrow as pa

from ruler.builder import __version__
from ruler.builder.errors import RulerError

MANIFEST_NAME = "manifest.json"
#: Held by every writer of the manifest (see the module docstring); a dot file, so neither the
#: dataset loader nor `ruler release` ever sees it.
LOCK_NAME = ".manifest.lock"
FORMAT_VERSION = 1
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
    """The manifest of a build folder, or an empty one when the folder has none yet."""
    path = Path(out) / MANIFEST_NAME
    if not path.exists():
        return empty_manifest()
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise RulerError(f"{path} is not valid JSON ({e}): restore it, or build into another "
                         f"folder") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict) \
            or not isinstance(manifest.get("builds"), dict):
        raise RulerError(f"{path} is not a ruler manifest (no `builds` and `files`)")
    return manifest


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


def write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, sort_keys=True, ensure_ascii=False)
            f.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_manifest(out: str | os.PathLike, manifest: dict[str, Any]) -> None:
    """Write atomically (hold `manifest_lock` when others may write too)."""
    manifest["packages"] = package_versions()
    write_json_atomic(Path(out) / MANIFEST_NAME, manifest)


def canonical_row(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# Control characters JSON escapes other than "\n" (which the fast path replaces itself).
_OTHER_CONTROLS = bytes(c for c in range(32) if c != 10)
_INPUT_SLOT = '"input":""'


def canonical_row_bytes(row: dict[str, Any]) -> bytes:
    """`canonical_row(row).encode("utf-8")`, faster for long inputs: json escapes a 128K
    prompt character by character (~4 ms), while an input holding no control character but
    newlines is escaped by three byte replacements (tests/test_manifest.py compares both)."""
    text = row["input"]
    data = text.encode("utf-8") if isinstance(text, str) else b""
    # The slot occurs once: a key is unique, and a quote inside a JSON string is escaped.
    parts = canonical_row({**row, "input": ""}).split(_INPUT_SLOT)
    if not data or len(parts) != 2 or len(data.translate(None, _OTHER_CONTROLS)) != len(data):
        return canonical_row(row).encode("utf-8")
    before, after = parts
    escaped = data.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
    return b"".join((before.encode("utf-8"), b'"input":"', escaped, b'"', after.encode("utf-8")))


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
