"""The driver's side of a build: publish finished files and record them.

A finished file arrives as a temporary file beside its final path. Under OUT's manifest lock
it is moved into place and recorded in the manifest as it is on disk at that moment (re-read,
merged, written atomically). So an interrupted build leaves only complete, recorded files and
resumes from them, and builds running into one OUT at the same time (other tasks, `--shard
i/n`, any executor feeding a driver) all end up recorded. The card (and any plug-in's publish
step) is rendered from the manifest once the build's files are recorded (`Publisher.finish`),
also when the build stops early; a run killed before that leaves it stale, and the next run
renders it again.

Deleting is as careful: only files the manifest lists for the config, only inside `data/`,
and only when the user asked (`--overwrite`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Mapping

from ruler.benchmarks import DEFAULT
from ruler.builder.identity import build_differences
from ruler.builder.manifest import BuildEntry, FileEntry, Manifest, manifest_lock, split_file
from ruler.builder.pipeline.config import FileResult
from ruler.builder.pipeline.recipe import BuildRecipe
from ruler.builder.publish_steps import write_published
from ruler.builder.seed_series import seed_clash
from ruler.catalog.benchmarks import benchmark_package
from ruler.catalog.context import BuildContext
from ruler.catalog.manifest_records import IdentityRecord, SourceRecord, is_official
from ruler.kernel.errors import RulerError


class Publisher:
    """Publishes and records the files of one config in OUT's manifest.

    It keeps no copy of the manifest: every change is made under the lock to the manifest
    then on disk, after checking that the config there is still this build's identity (a
    build with another identity may have started in the same OUT meanwhile).
    """

    def __init__(self, out: Path, config: str, entry: BuildEntry, ctx: BuildContext):
        self.out, self.config = out, config
        self._entry, self._ctx = entry, ctx
        self.results: list[FileResult] = []

    def publish(self, result: FileResult, entry: FileEntry, written: Path) -> None:
        """Move a finished file into place and record its entry (made whole by the worker)."""
        with manifest_lock(self.out):
            manifest = Manifest.load(self.out)
            self._check_same_build(manifest)
            os.replace(written, self.out / result.path)  # in place first, then recorded
            manifest.put_file(entry)
            self._record(manifest)
        self.results.append(result)

    def finish(self) -> None:
        """Render the card (and any plug-in step's files) from the manifest, once the files
        are recorded: rendering it after every file cost more than building a small file."""
        if self.results:
            finish_published(self.out)

    def _check_same_build(self, manifest: Manifest) -> None:
        ours = {sid: s.sha256 for sid, s in self._ctx.used_sources().items()}
        assert self._entry.identity is not None  # `build_entry` records it
        differs = build_differences(manifest.build(self.config), self._entry.identity, ours)
        if differs:
            raise RulerError(f"another build recorded config {self.config!r} in {self.out} "
                             f"with a different identity while this one ran "
                             f"({'; '.join(differs)}); this build stopped, its unfinished "
                             f"files were not published")
        clash = seed_clash(manifest.builds, self.config, self._entry.variant,
                           self._entry.seed)
        if clash:
            raise RulerError(clash.message(str(self.out), "another build recorded it while "
                                                          "this one ran; this build stopped, "
                                                          "its unfinished files were not "
                                                          "published"))

    def _record(self, manifest: Manifest) -> None:
        """Write the config's build entry and the manifest (the caller holds the lock); the
        card follows in `finish`."""
        sources = {k: v.as_manifest() for k, v in self._ctx.used_sources().items()}
        record_build(self.out, manifest, self.config, self._entry, sources, steps=False)


def finish_published(out: Path) -> None:
    """Render the publish steps' files (the card) from OUT's manifest, under its lock."""
    with manifest_lock(out):
        write_published(out)


def record_build(out: Path, manifest: Manifest, config: str, entry: BuildEntry,
                 sources: Mapping[str, SourceRecord], steps: bool = True) -> None:
    """Set `config`'s build entry from `entry` (identity fields and tokenizer record) and the
    manifest's files: its sources (with those earlier runs of the same build recorded), its
    official flag, tasks, lengths and counting methods are derived here; fields of a newer
    writer in the entry it replaces are kept. Then write the manifest and, with `steps`, the
    card (else the caller renders it later: `finish_published`). The caller holds the manifest
    lock."""
    previous = manifest.build(config)
    merged = dict(sorted({**((previous.sources if previous else None) or {}),
                          **sources}.items()))
    tasks = manifest.tasks(config)
    # the declared tasks of its files (earlier runs of the same build declared some)
    declared = {**((previous.declared_tasks if previous else None) or {}),
                **(entry.declared_tasks or {})}
    manifest.put_build(config, dataclasses.replace(
        entry, sources=merged, official=is_official(entry.tokenizer, merged),
        tasks=tasks, lengths=manifest.lengths(config),
        declared_tasks={t: declared[t] for t in tasks if t in declared} or None,
        suites=sorted({*((previous.suites if previous else None) or ()),
                       *(entry.suites or ())}) or None,
        counting=sorted({f.counting for f in manifest.files_of(config) if f.counting}),
        length_rules=sorted({f.length_rule for f in manifest.files_of(config)
                             if f.length_rule}) or None,
        extra={**(previous.extra if previous else {}), **entry.extra}))
    manifest.save(out)
    if steps:
        write_published(out)  # the card (and any plug-in step's files)


def build_entry(recipe: BuildRecipe, identity: IdentityRecord) -> BuildEntry:
    """The parts of a config's build entry that come from the recipe, not from its files (its
    tokenizer record and identity fields; `BuildRecipe.from_manifest` reads them back)."""
    return BuildEntry(tokenizer=recipe.tokenizer.identity.as_manifest(),
                      prompt_mode=recipe.prompt_mode, seed=recipe.seed, samples=recipe.samples,
                      generator_version=identity.generator_version,
                      packages=dict(identity.packages), identity=identity,
                      variant=recipe.variant.record() or None,
                      benchmark=None if recipe.benchmark == DEFAULT else recipe.benchmark,
                      # a plug-in's benchmark: its package, which a reader without it names
                      benchmark_package=benchmark_package(recipe.benchmark),
                      declared_tasks=dict(recipe.declared) or None,
                      suites=list(recipe.suites) or None,
                      extra=recipe.axis_records())


def listed_files(out: Path, manifest: Manifest, config: str) -> list[str]:
    """The files the manifest lists for `config`, each checked to be a split file's path
    inside OUT/data/ (a hand-edited entry never makes the builder delete anything else)."""
    data = (out / "data").resolve()
    found = []
    for rel, f in manifest.files.items():
        if f.config != config:
            continue
        split_file(out, rel)  # a link in OUT is said as such, and never deleted through
        if rel != f.path or not (out / rel).resolve().is_relative_to(data):
            raise RulerError(f"manifest.json lists {rel!r} for config {config!r}, which is not "
                             f"a split file of it; fix the manifest by hand, nothing was deleted")
        found.append(rel)
    return found


def drop_config(out: Path, config: str) -> int:
    """Remove every file of `config` that the manifest lists, and its build entry (under the
    lock). Returns how many files were removed."""
    with manifest_lock(out):
        manifest = Manifest.load(out)
        stale = listed_files(out, manifest, config)
        for rel in stale:
            (out / rel).unlink(missing_ok=True)
            manifest.remove_file(rel)
        manifest.remove_build(config)
        manifest.save(out)
        write_published(out)  # the card (and any plug-in step's files)
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
    # not empty (another build's temporary file, a user's file): keep it
    with contextlib.suppress(OSError):
        folder.rmdir()
