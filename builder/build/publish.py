"""The driver's side of a build: publish finished files and record them.

A finished file arrives as a temporary file beside its final path. Under OUT's manifest lock
it is moved into place and recorded in the manifest as it is on disk at that moment (re-read,
merged, written atomically), then the card is rendered from it. So an interrupted build leaves
only complete, recorded files and resumes from them, and builds running into one OUT at the
same time (other tasks, `--shard i/n`, any executor feeding a driver) all end up recorded.

Deleting is as careful: only files the manifest lists for the config, only inside `data/`,
and only when the user asked (`--overwrite`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from ruler.builder.build.config import FileResult
from ruler.builder.build.recipe import BuildRecipe
from ruler.builder.context import BuildContext
from ruler.builder.counting import counting_method
from ruler.builder.errors import RulerError
from ruler.builder.identity import identity_differences, source_differences
from ruler.builder.manifest import (data_path, manifest_lock, read_manifest, split_file,
                                    write_manifest)
from ruler.builder.tasks import TASKS
from ruler.cards.render import write_card


class Publisher:
    """Publishes and records the files of one config in OUT's manifest.

    It keeps no copy of the manifest: every change is made under the lock to the manifest
    then on disk, after checking that the config there is still this build's identity (a
    build with another identity may have started in the same OUT meanwhile).
    """

    def __init__(self, out: Path, config: str, entry_fields: dict, ctx: BuildContext):
        self.out, self.config = out, config
        self._fields, self._ctx = entry_fields, ctx
        self.results: list[FileResult] = []

    def publish(self, result: FileResult, entry: dict[str, Any], written: Path) -> None:
        entry = {**entry, "packages": self._fields["packages"],
                 "counting": counting_method(result.rows, result.exact_rows,
                                             result.certified_rows,
                                             self._ctx.tokenizer.identity.pinned)}
        with manifest_lock(self.out):
            manifest = read_manifest(self.out)
            self._check_same_build(manifest)
            os.replace(written, self.out / result.path)  # in place first, then recorded
            files = manifest["files"]
            files[result.path] = entry
            manifest["files"] = dict(sorted(files.items()))
            self._record(manifest)
        self.results.append(result)

    def _check_same_build(self, manifest: Mapping[str, Any]) -> None:
        previous = manifest["builds"].get(self.config)
        if not previous:
            return
        ours = {sid: s.sha256 for sid, s in self._ctx.used_sources().items()}
        differs = (identity_differences(previous.get("identity"), self._fields["identity"])
                   + source_differences(previous.get("sources") or {}, ours))
        if differs:
            raise RulerError(f"another build recorded config {self.config!r} in {self.out} "
                             f"with a different identity while this one ran "
                             f"({'; '.join(differs)}); this build stopped, its unfinished "
                             f"files were not published")

    def _record(self, manifest: dict[str, Any]) -> None:
        """Write the config's build entry, the manifest, then the card rendered from it
        (the caller holds the lock)."""
        sources = {k: v.as_manifest() for k, v in self._ctx.used_sources().items()}
        record_build(self.out, manifest, self.config,
                     {**self._fields, "tokenizer": self._ctx.tokenizer.identity.as_manifest()},
                     sources)


#: Fields of a build entry derived from its files and sources (`record_build` computes them).
DERIVED_FIELDS = ("sources", "official", "tasks", "lengths", "counting")


def record_build(out: Path, manifest: dict[str, Any], config: str, entry: Mapping[str, Any],
                 sources: Mapping[str, Mapping[str, Any]]) -> None:
    """Set `config`'s build entry from `entry` (identity fields and tokenizer record) and the
    manifest's files, keeping the sources earlier runs of the same build recorded; then
    write the manifest and the card. The caller holds the manifest lock."""
    previous = manifest["builds"].get(config) or {}
    merged = dict(sorted({**previous.get("sources", {}), **sources}.items()))
    files = [f for f in manifest["files"].values() if f["config"] == config]
    manifest["builds"][config] = {
        **{k: v for k, v in entry.items() if k not in DERIVED_FIELDS}, "sources": merged,
        "official": bool(entry["tokenizer"].get("pinned"))
        and all(s["official"] for s in merged.values()),
        "tasks": [t for t in TASKS if any(f["task"] == t for f in files)],
        "lengths": sorted({f["max_seq_length"] for f in files}),
        "counting": sorted({f.get("counting") for f in files if f.get("counting")}),
    }
    write_manifest(out, manifest)
    write_card(out)


def entry_fields(recipe: BuildRecipe, identity: dict[str, Any]) -> dict[str, Any]:
    """The parts of a config's build entry that come from the recipe, not from its files
    (`BuildRecipe.from_manifest` reads them back)."""
    fields = {"prompt_mode": recipe.prompt_mode, "seed": recipe.seed,
              "samples": recipe.samples, "generator_version": identity["generator_version"],
              "packages": identity["packages"], "identity": identity}
    variant = recipe.variant.record()
    return {**fields, "variant": variant} if variant else fields


def listed_files(out: Path, manifest: Mapping[str, Any], config: str) -> list[str]:
    """The files the manifest lists for `config`, each checked to be a split file's path
    inside OUT/data/ (a hand-edited entry never makes the builder delete anything else)."""
    data = (out / "data").resolve()
    found = []
    for rel, f in manifest["files"].items():
        if f.get("config") != config:
            continue
        split_file(out, rel)  # a link in OUT is said as such, and never deleted through
        if f.get("task") not in TASKS or not isinstance(f.get("max_seq_length"), int) \
                or rel != data_path(config, f["task"], f["max_seq_length"]) \
                or not (out / rel).resolve().is_relative_to(data):
            raise RulerError(f"manifest.json lists {rel!r} for config {config!r}, which is not "
                             f"a split file of it; fix the manifest by hand, nothing was deleted")
        found.append(rel)
    return found


def drop_config(out: Path, config: str) -> int:
    """Remove every file of `config` that the manifest lists, and its build entry (under the
    lock). Returns how many files were removed."""
    with manifest_lock(out):
        manifest = read_manifest(out)
        stale = listed_files(out, manifest, config)
        for rel in stale:
            (out / rel).unlink(missing_ok=True)
            del manifest["files"][rel]
        manifest["builds"].pop(config, None)
        write_manifest(out, manifest)
        write_card(out)
    _remove_empty_folders(out / "data" / config)
    return len(stale)


def _remove_empty_folders(root: Path) -> None:
    """Remove `root` and its sub-folders where they are empty (never a file)."""
    if not root.is_dir():
        return
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        _rmdir_if_empty(folder)
    _rmdir_if_empty(root)


def _rmdir_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:  # not empty (another build's temporary file, a user's file): keep it
        pass
