"""`ruler merge OUT_A OUT_B ... --out OUT`: join builds made in other folders (shards built on
other machines, tasks built apart) into one folder, as if they had been built there.

Everything is checked before anything is written: each input's manifest must load, every file
it lists must have the recorded bytes, a config must have one identity across the inputs and
OUT (`ruler.builder.identity`), and a file present in two places must have the same rows
(`content_sha256`): a conflicting file is an error, never a silent choice. Every manifest is
checked where it is read (`manifest_schema`: known configs, tasks and lengths only) and no path
goes through a symbolic link below an input or OUT (`split_file`), so nothing is written
outside OUT. Then each file is copied beside its final path and, under OUT's manifest lock,
OUT's build of its config is checked again (another merge or build may have recorded another
identity, or the same rows, since) before it is moved into place and recorded, like a build's
own files: merges and builds may run into one OUT at the same time, the second of two
identities refuses, and a file already recorded with the same rows is never replaced.
The card is re-rendered when it is stale (a run killed before its last card write).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ruler.builder.identity import build_differences
from ruler.builder.manifest import (
    BuildEntry,
    FileEntry,
    Manifest,
    check_split_files,
    load_manifest,
    manifest_lock,
    split_file,
)
from ruler.builder.pipeline.publish import record_build
from ruler.builder.publish_steps import refresh_published
from ruler.builder.seed_series import seed_clash
from ruler.kernel.atomic import FILE_MODE, temp_file_beside
from ruler.kernel.errors import RulerError
from ruler.kernel.hashing import file_sha256


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
    target = Manifest.load(out)
    builds: dict[str, tuple[Path, BuildEntry]] = {}   # config -> (first input, entry)
    files: dict[str, tuple[Path, FileEntry]] = {}     # rel -> (input, entry)
    manifests: dict[Path, Manifest] = {}
    for src in sources:
        # Manifest.load has checked every entry: known configs, tasks and lengths only, and
        # load_manifest that no link below `src` leads to a listed file
        manifest = manifests[src] = load_manifest(src)
        for config, build in manifest.builds.items():
            _check_same_identity(config, build, builds.get(config), target.build(config),
                                 src, out)
            builds.setdefault(config, (src, build))
            _check_same_seed(config, build, src, builds)
            _check_same_seed(config, build, src, {c: (out, b) for c, b in target.builds.items()})
        for rel, entry in manifest.files.items():
            _check_file(src, rel, entry)
            if rel in files and files[rel][1].content_sha256 != entry.content_sha256:
                raise RulerError(f"conflicting file {rel}: {files[rel][0]} and {src} hold "
                                 f"other rows (content_sha256 differs); nothing was merged")
            files.setdefault(rel, (src, entry))
    check_split_files(out, [*target.files, *files])  # no link in OUT: nothing lands elsewhere
    present = []
    for rel, (src, entry) in files.items():
        mine = target.file(rel)
        if mine is not None:
            if mine.content_sha256 != entry.content_sha256:
                raise RulerError(f"conflicting file {rel}: {out} and {src} hold other rows "
                                 f"(content_sha256 differs); nothing was merged")
            if _holds(out, rel, mine):
                present.append(rel)

    out.mkdir(parents=True, exist_ok=True)
    copied: list[str] = []
    for rel, (src, entry) in sorted(files.items()):
        if rel in present:
            continue
        if _publish_copy(src, out, rel, entry, manifests[src].builds[entry.config],
                         len(copied)):
            copied.append(rel)
        else:  # another merge or build recorded the same rows meanwhile
            present.append(rel)
    refresh_published(out)  # a run killed before its last card write left a stale one
    return MergeResult(out, tuple(copied), tuple(sorted(present)))


def _holds(out: Path, rel: str, entry: FileEntry) -> bool:
    """OUT has the file `entry` records, with its bytes."""
    path = split_file(out, rel)
    return path.is_file() and file_sha256(path) == entry.sha256


def _check_same_identity(config: str, build: BuildEntry, seen: tuple[Path, BuildEntry] | None,
                         existing: BuildEntry | None, src: Path, out: Path,
                         outcome: str = "nothing was merged") -> None:
    if build.identity is None:
        raise RulerError(f"{src}/manifest.json: config {config!r} records no build identity "
                         f"(built by an older ruler); rebuild it to merge")
    for other, where in ((seen[1] if seen else None, seen[0] if seen else None),
                         (existing, out)):
        if not other:
            continue
        differs = build_differences(other, build.identity, build.source_hashes)
        if differs:
            raise RulerError(f"config {config!r} of {src} is another build than in {where} "
                             f"({'; '.join(differs)}); {outcome}")


def _check_same_seed(config: str, build: BuildEntry, src: Path,
                     others: Mapping[str, tuple[Path, BuildEntry]],
                     outcome: str = "nothing was merged") -> None:
    """`config` of `src` shares the base seed of the configs of its tokenizer config among
    `others` (config -> (the folder holding it, its entry): the inputs', or OUT's)."""
    clash = seed_clash({c: b for c, (_, b) in others.items()}, config, build.variant,
                       build.seed)
    if clash:
        where = others[clash.other][0]
        raise RulerError(clash.message(f"{where}" if where == src
                                       else f"{where} (merging {src})", outcome))


def _check_file(src: Path, rel: str, entry: FileEntry) -> None:
    """The input file has the recorded bytes (its entry's shape was checked when read)."""
    path = split_file(src, rel)
    if not path.is_file() or file_sha256(path) != entry.sha256:
        raise RulerError(f"{path} is missing or differs from its manifest (run `ruler verify "
                         f"{src}`); nothing was merged")


def _publish_copy(src: Path, out: Path, rel: str, entry: FileEntry, build: BuildEntry,
                  merged: int) -> bool:
    """Copy `src/rel` to a temporary file beside its place in OUT and check its bytes; then,
    under OUT's manifest lock, check again that OUT's build of the config is this one (another
    merge or build may have recorded it since the checks before copying), move the file into
    place and record it. False when OUT recorded the same rows meanwhile (nothing replaced)."""
    final = split_file(out, rel)
    fd, tmp = temp_file_beside(final)
    os.close(fd)
    try:
        shutil.copyfile(src / rel, tmp)
        os.chmod(tmp, FILE_MODE)
        if file_sha256(tmp) != entry.sha256:
            raise RulerError(f"{src / rel} changed while it was copied; nothing more was merged")
        config = entry.config
        outcome = (f"another merge or build recorded it in {out} while this merge ran; "
                   f"{merged} file(s) were merged before, nothing more was")
        with manifest_lock(out):
            manifest = Manifest.load(out)
            _check_same_identity(config, build, None, manifest.build(config), src, out,
                                 outcome)
            _check_same_seed(config, build, src,
                             {c: (out, b) for c, b in manifest.builds.items()}, outcome)
            mine = manifest.file(rel)
            if mine is not None and mine.content_sha256 != entry.content_sha256:
                raise RulerError(f"conflicting file {rel}: {out} and {src} hold other rows "
                                 f"(content_sha256 differs); {outcome}")
            if mine is not None and _holds(out, rel, mine):
                return False
            os.replace(tmp, final)  # in place first, then recorded
            manifest.put_file(entry)
            record_build(out, manifest, config, build, build.sources or {})
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)
