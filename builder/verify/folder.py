"""Folder-wide checks: the manifest's structure, its build entries, stray files (Parquet
files outside the manifest, temporary files of builds that were killed). The card and any
other file a publish step writes are checked by their step (`builder.publish_steps`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from ruler.benchmarks import DEFAULT
from ruler.builder.findings import Problem
from ruler.builder.identity import file_key, identity_differences, identity_of_build
from ruler.builder.manifest import MANIFEST_NAME, BuildEntry, FileEntry, Manifest
from ruler.builder.tokenizer_registry import config_name
from ruler.catalog.benchmarks import benchmark_config
from ruler.catalog.tasks import TASKS
from ruler.catalog.variants import variant_from_record
from ruler.kernel.temp_files import stale_temp_files


def manifest_problems(out: Path, manifest: Manifest) -> list[Problem]:
    on_disk, links = _data_tree(out)
    problems = [Problem(rel, "Parquet file not listed in manifest.json")
                for rel in sorted(on_disk - set(manifest.files))]
    problems += [Problem(rel, "symbolic link inside the build folder (the dataset loader "
                              "follows it; ruler never reads or writes through one)")
                 for rel in links]
    problems += [Problem(stale.path.relative_to(out).as_posix(),
                         f"temporary file of a build that ended without publishing it "
                         f"(process {stale.pid} no longer runs): run the build again, "
                         f"which removes it, or delete it") for stale in stale_temp_files(out)]
    for config, build in sorted(manifest.builds.items()):
        files = manifest.files_of(config)
        problems += build_problems(config, build, files)
        problems += identity_problems(config, build, files)
    return problems


def _data_tree(out: Path) -> tuple[set[str], list[str]]:
    """The Parquet files under `out/data` and the symbolic links there (not followed)."""
    files: set[str] = set()
    links: list[str] = []
    if (out / "data").is_symlink():
        return files, ["data"]
    for folder, dirs, names in os.walk(out / "data"):
        for name in sorted(dirs + names):
            path = Path(folder) / name
            rel = path.relative_to(out).as_posix()
            if path.is_symlink():
                links.append(rel)
            elif name in names and name.endswith(".parquet"):
                files.add(rel)
    return files, sorted(links)


def identity_problems(config: str, build: BuildEntry,
                      files: Iterable[FileEntry]) -> list[Problem]:
    """The build identity, recomputed from the entry's recorded fields (seed, samples, prompt
    mode, tokenizer record, package versions, generator version), must equal the recorded
    identity, and each file's build key must be the one that identity gives: an edited seed,
    revision or version cannot pass. Each file holds the build's sample count."""
    where = f"{MANIFEST_NAME} build {config!r}"
    recomputed = identity_of_build(build)
    differs = ["no identity recorded"] if build.identity is None \
        else identity_differences(build.identity, recomputed)
    problems = []
    if differs:
        problems.append(Problem(where, f"its recorded identity does not match its fields "
                                       f"(identity -> fields: {'; '.join(differs)})"))
    sources = build.sources or {}
    for entry in sorted(files, key=lambda f: f.path):
        rel = entry.path
        if entry.rows != build.samples:
            problems.append(Problem(rel, f"{entry.rows} rows, the build's samples are "
                                         f"{build.samples}"))
        spec = TASKS[entry.task]  # a known task: checked where the manifest is read
        hashes = {sid: sources[sid].sha256 if sid in sources else None for sid in spec.sources}
        key = file_key(recomputed, entry.task, entry.max_seq_length, hashes,
                       (build.declared_tasks or {}).get(entry.task))
        if entry.build_key != key:
            problems.append(Problem(rel, "build_key is not the one the build's recorded seed, "
                                         "samples, tokenizer, package versions, sources and "
                                         "declared tasks give (an edited manifest?)"))
        if entry.packages != build.packages:
            problems.append(Problem(rel, "package versions differ from its build's"))
    return problems


def build_problems(config: str, build: BuildEntry, files: Iterable[FileEntry]) -> list[Problem]:
    """A build entry must agree with its files and with itself: `ruler release` trusts its
    `official` flag, so a hand-edited flag must not pass."""
    where = f"{MANIFEST_NAME} build {config!r}"
    problems = []
    mine = list(files)
    tasks = {f.task for f in mine}
    lengths = sorted({f.max_seq_length for f in mine})
    if set(build.tasks or []) != tasks or sorted(build.lengths or []) != lengths:
        problems.append(Problem(where, f"lists tasks {build.tasks} and lengths "
                                       f"{build.lengths}, its files have "
                                       f"{sorted(tasks)} and {lengths}"))
    problems += [Problem(where, f"source {sid!r}: `official` disagrees with its sha256 and "
                                f"official_sha256")
                 for sid, s in sorted((build.sources or {}).items()) if not s.flag_consistent]
    official = build.official_by_record()
    if bool(build.official) != official:
        problems.append(Problem(where, f"`official` is {build.official}, but tokenizer "
                                       f"pinned and official sources give {official}"))
    variant = build.variant or {}
    recorded = build.identity.variant if build.identity else None
    recorded_benchmark = (build.identity.benchmark if build.identity else None) or DEFAULT
    benchmark = build.benchmark_id
    if variant or recorded or benchmark != DEFAULT:
        named = variant_from_record(variant).config_name(benchmark_config(
            config_name(build.tokenizer.name), benchmark, build.axis_values()))
        axes = build.axis_records()
        recorded_axes = {k: v for k, v in (build.identity.extra if build.identity else {}).items()
                         if k in axes}
        if named != config or (recorded or {}) != variant or \
                recorded_benchmark != benchmark or recorded_axes != axes:
            problems.append(Problem(where, f"variant {variant} (benchmark {benchmark!r}) "
                                           f"does not match the config name (expected "
                                           f"{named!r}) or the build identity"))
    return problems
