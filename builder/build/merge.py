"""`ruler merge OUT_A OUT_B ... --out OUT`: join builds made in other folders (shards built on
other machines, tasks built apart) into one folder, as if they had been built there.

Everything is checked before anything is written: each input's manifest must load, every file
it lists must have the recorded bytes, a config must have one identity across the inputs and
OUT (`ruler.builder.identity`), and a file present in two places must have the same rows
(`content_sha256`): a conflicting file is an error, never a silent choice. Then each file is
copied beside its final path, moved into place and recorded under OUT's manifest lock, like a
build's own files, so a merge may run while builds write into OUT.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ruler.builder.build.publish import record_build
from ruler.builder.errors import RulerError
from ruler.builder.hashing import file_sha256
from ruler.builder.identity import identity_differences, source_differences
from ruler.builder.manifest import manifest_lock, read_manifest
from ruler.builder.tokenizer_registry import check_config_name
from ruler.builder.verify.folder import load_manifest
from ruler.builder.writer import temp_prefix


@dataclass(frozen=True)
class MergeResult:
    out: Path
    copied: tuple[str, ...]   # files copied into OUT
    present: tuple[str, ...]  # files OUT already had with the same rows


def merge(inputs: Sequence[str | os.PathLike], out: str | os.PathLike) -> MergeResult:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RulerError(f"--out {out} is a file, not a folder")
    sources = [Path(p) for p in inputs]
    if not sources:
        raise RulerError("name at least one build folder to merge")
    if any(p.resolve() == out.resolve() for p in sources):
        raise RulerError(f"{out} is both an input and the output")
    target = read_manifest(out)
    builds: dict[str, tuple[Path, Mapping[str, Any]]] = {}   # config -> (first input, entry)
    files: dict[str, tuple[Path, Mapping[str, Any]]] = {}    # rel -> (input, entry)
    manifests: dict[Path, Mapping[str, Any]] = {}
    for src in sources:
        manifest = manifests[src] = load_manifest(src)
        for config, build in manifest["builds"].items():
            check_config_name(config, f"{src}/manifest.json")
            _check_same_identity(config, build, builds.get(config), target["builds"].get(config),
                                 src, out)
            builds.setdefault(config, (src, build))
        for rel, entry in manifest["files"].items():
            _check_file(src, rel, entry, manifest)
            if rel in files and files[rel][1]["content_sha256"] != entry["content_sha256"]:
                raise RulerError(f"conflicting file {rel}: {files[rel][0]} and {src} hold "
                                 f"other rows (content_sha256 differs); nothing was merged")
            files.setdefault(rel, (src, entry))
    present = []
    for rel, (src, entry) in files.items():
        mine = target["files"].get(rel)
        if mine is not None:
            if mine["content_sha256"] != entry["content_sha256"]:
                raise RulerError(f"conflicting file {rel}: {out} and {src} hold other rows "
                                 f"(content_sha256 differs); nothing was merged")
            if (out / rel).is_file() and file_sha256(out / rel) == mine["sha256"]:
                present.append(rel)

    out.mkdir(parents=True, exist_ok=True)
    copied = []
    for rel, (src, entry) in sorted(files.items()):
        if rel in present:
            continue
        _publish_copy(src / rel, out / rel, entry)
        config = entry["config"]
        with manifest_lock(out):
            manifest = read_manifest(out)
            manifest["files"][rel] = dict(entry)
            manifest["files"] = dict(sorted(manifest["files"].items()))
            build = manifests[src]["builds"][config]  # the sources this file's build read
            record_build(out, manifest, config, build, build.get("sources") or {})
        copied.append(rel)
    return MergeResult(out, tuple(copied), tuple(sorted(present)))


def _check_same_identity(config: str, build: Mapping[str, Any],
                         seen: tuple[Path, Mapping[str, Any]] | None,
                         existing: Mapping[str, Any] | None, src: Path, out: Path) -> None:
    if not build.get("identity"):
        raise RulerError(f"{src}/manifest.json: config {config!r} records no build identity "
                         f"(built by an older ruler); rebuild it to merge")
    for other, where in ((seen[1] if seen else None, seen[0] if seen else None),
                         (existing, out)):
        if not other:
            continue
        differs = (identity_differences(other.get("identity") or {"?": None}, build["identity"])
                   + source_differences(other.get("sources") or {},
                                        {k: v["sha256"] for k, v in
                                         (build.get("sources") or {}).items()}))
        if differs:
            raise RulerError(f"config {config!r} of {src} is another build than in {where} "
                             f"({'; '.join(differs)}); nothing was merged")


def _check_file(src: Path, rel: str, entry: Mapping[str, Any],
                manifest: Mapping[str, Any]) -> None:
    """The input file is a split file of a recorded config, with the recorded bytes."""
    config = entry["config"]
    if config not in manifest["builds"]:
        raise RulerError(f"{src}/manifest.json lists {rel} of config {config!r}, which has no "
                         f"build entry")
    if rel != f"data/{config}/{entry['task']}/{entry['max_seq_length']}.parquet":
        raise RulerError(f"{src}/manifest.json: {rel!r} is not where its config, task and "
                         f"length belong")
    path = src / rel
    if not path.is_file() or file_sha256(path) != entry["sha256"]:
        raise RulerError(f"{path} is missing or differs from its manifest (run `ruler verify "
                         f"{src}`); nothing was merged")


def _publish_copy(source: Path, final: Path, entry: Mapping[str, Any]) -> None:
    """Copy to a temporary file beside `final`, check its bytes, move it into place."""
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=temp_prefix(final), suffix=".tmp")
    os.close(fd)
    try:
        shutil.copyfile(source, tmp)
        os.chmod(tmp, 0o644)
        if file_sha256(tmp) != entry["sha256"]:
            raise RulerError(f"{source} changed while it was copied; nothing more was merged")
        os.replace(tmp, final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

