"""Folder-wide checks: the manifest's structure, its build entries, stray files (Parquet
files outside the manifest, temporary files of builds that were killed), the card."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import yaml

from ruler.builder.errors import RulerError
from ruler.builder.identity import file_key, identity_differences, identity_of_build
from ruler.builder.manifest import FORMAT_VERSION, MANIFEST_NAME, data_path
from ruler.builder.tasks.catalog import TASKS
from ruler.builder.temp_files import stale_temp_files
from ruler.builder.tokenizer_registry import config_name
from ruler.builder.variants import variant_config
from ruler.builder.verify.findings import Problem
from ruler.cards.render import configs_yaml


def load_manifest(out: Path) -> dict[str, Any]:
    """The manifest, strictly: unlike `read_manifest`, a missing one is an error here."""
    path = out / MANIFEST_NAME
    if not out.is_dir():
        raise RulerError(f"{out} is not a folder")
    if not path.is_file():
        raise RulerError(f"{path} not found: {out} is not a `ruler build` output folder")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise RulerError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format_version") != FORMAT_VERSION:
        raise RulerError(f"{path}: unsupported format_version "
                         f"{manifest.get('format_version') if isinstance(manifest, dict) else None!r}"
                         f" (this ruler reads {FORMAT_VERSION})")
    for key in ("builds", "files"):
        if not isinstance(manifest.get(key), dict):
            raise RulerError(f"{path}: missing or malformed {key!r}")
    # Structure first, so every later check can index entries without guarding each access.
    for rel, entry in manifest["files"].items():
        wrong = [k for k, t in _FILE_FIELDS.items()
                 if not isinstance(entry, dict) or not isinstance(entry.get(k), t)
                 or isinstance(entry.get(k), bool)]
        if wrong:
            raise RulerError(f"{path}: entry {rel!r} has missing or malformed {', '.join(wrong)}")
    for config, build in manifest["builds"].items():
        if not isinstance(build, dict) or not isinstance(build.get("tokenizer"), dict):
            raise RulerError(f"{path}: build {config!r} has no tokenizer record")
    return manifest


_FILE_FIELDS = {"config": str, "task": str, "max_seq_length": int, "rows": int, "bytes": int,
                "sha256": str, "content_sha256": str}


def manifest_problems(out: Path, manifest: Mapping[str, Any]) -> list[Problem]:
    problems = []
    listed = set(manifest["files"])
    on_disk = {p.relative_to(out).as_posix() for p in out.glob("data/**/*.parquet")}
    for rel in sorted(on_disk - listed):
        problems.append(Problem(rel, "Parquet file not listed in manifest.json"))
    for stale in stale_temp_files(out):
        problems.append(Problem(stale.path.relative_to(out).as_posix(),
                                f"temporary file of a build that ended without publishing it "
                                f"(process {stale.pid} no longer runs): run the build again, "
                                f"which removes it, or delete it"))
    for rel, entry in sorted(manifest["files"].items()):
        expected = data_path(entry["config"], entry["task"], entry["max_seq_length"])
        if expected != rel:
            problems.append(Problem(MANIFEST_NAME, f"entry {rel!r} says config/task/length "
                                                   f"of {expected!r}"))
        if entry["config"] not in manifest["builds"]:
            problems.append(Problem(MANIFEST_NAME, f"{rel!r} belongs to config "
                                                   f"{entry['config']!r}, which has no build"))
    for config, build in sorted(manifest["builds"].items()):
        problems += build_problems(config, build, manifest["files"])
        problems += identity_problems(config, build, manifest["files"])
    return problems


def identity_problems(config: str, build: Mapping[str, Any],
                      files: Mapping[str, Mapping[str, Any]]) -> list[Problem]:
    """The build identity, recomputed from the entry's recorded fields (seed, samples, prompt
    mode, tokenizer record, package versions, generator version), must equal the recorded
    identity, and each file's build key must be the one that identity gives: an edited seed,
    revision or version cannot pass. Each file holds the build's sample count."""
    where = f"{MANIFEST_NAME} build {config!r}"
    recomputed = identity_of_build(build)
    differs = identity_differences(build.get("identity") or {"identity": "missing"}, recomputed)
    problems = []
    if differs:
        problems.append(Problem(where, f"its recorded identity does not match its fields "
                                       f"(identity -> fields: {'; '.join(differs)})"))
    sources = build.get("sources") or {}
    for rel, entry in sorted(files.items()):
        if entry.get("config") != config:
            continue
        if entry["rows"] != build.get("samples"):
            problems.append(Problem(rel, f"{entry['rows']} rows, the build's samples are "
                                         f"{build.get('samples')}"))
        spec = TASKS.get(entry["task"])
        if spec is None:
            continue  # reported per file (unknown task)
        hashes = {sid: (sources.get(sid) or {}).get("sha256") for sid in spec.sources}
        key = file_key(recomputed, entry["task"], entry["max_seq_length"], hashes)
        if entry.get("build_key") != key:
            problems.append(Problem(rel, "build_key is not the one the build's recorded seed, "
                                         "samples, tokenizer, package versions and sources "
                                         "give (an edited manifest?)"))
        if entry.get("packages") != build.get("packages"):
            problems.append(Problem(rel, "package versions differ from its build's"))
    return problems


def build_problems(config: str, build: Mapping[str, Any],
                    files: Mapping[str, Mapping[str, Any]]) -> list[Problem]:
    """A build entry must agree with its files and with itself: `ruler release` trusts its
    `official` flag, so a hand-edited flag must not pass."""
    where = f"{MANIFEST_NAME} build {config!r}"
    problems = []
    mine = [f for f in files.values() if f.get("config") == config]
    tasks = {f["task"] for f in mine}
    lengths = sorted({f["max_seq_length"] for f in mine})
    if set(build.get("tasks", [])) != tasks or sorted(build.get("lengths", [])) != lengths:
        problems.append(Problem(where, f"lists tasks {build.get('tasks')} and lengths "
                                       f"{build.get('lengths')}, its files have "
                                       f"{sorted(tasks)} and {lengths}"))
    sources = build.get("sources", {})
    for sid, s in sorted(sources.items()):
        if bool(s.get("official")) != (s.get("sha256") == s.get("official_sha256")):
            problems.append(Problem(where, f"source {sid!r}: `official` disagrees with its "
                                           f"sha256 and official_sha256"))
    official = bool(build.get("tokenizer", {}).get("pinned")) and all(
        s.get("official") and s.get("sha256") == s.get("official_sha256")
        for s in sources.values())
    if bool(build.get("official")) != official:
        problems.append(Problem(where, f"`official` is {build.get('official')}, but tokenizer "
                                       f"pinned and official sources give {official}"))
    variant = build.get("variant") or {}
    if variant or build.get("identity", {}).get("variant"):
        named = variant_config(config_name(str(build["tokenizer"].get("name"))), variant)
        if named != config or build.get("identity", {}).get("variant") != variant:
            problems.append(Problem(where, f"variant {variant} does not match the config name "
                                           f"(expected {named!r}) or the build identity"))
    return problems


def card_problems(out: Path, manifest: Mapping[str, Any]) -> list[Problem]:
    """The card's `configs` must be exactly those the manifest implies (load_dataset reads them)."""
    path = out / "README.md"
    if not path.is_file():
        return [Problem("README.md", "missing (the dataset card holds the configs)")]
    text = path.read_text(encoding="utf-8")
    parts = text.split("---\n", 2)
    if not text.startswith("---\n") or len(parts) < 3:
        return [Problem("README.md", "no YAML front matter")]
    try:
        front = yaml.safe_load(parts[1]) or {}
    except yaml.YAMLError as e:
        return [Problem("README.md", f"YAML front matter does not parse: {e}")]
    if front.get("configs") != configs_yaml(manifest):
        return [Problem("README.md", "`configs` do not match manifest.json "
                                     "(rewrite the card: it is rendered by `ruler build`)")]
    return []
