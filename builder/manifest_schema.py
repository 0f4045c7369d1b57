"""What a well-formed `manifest.json` holds, checked once, where it is read.

Every command that reads a manifest (build, merge, verify, release, eval, score, export) reads
it through `ruler.builder.manifest.Manifest.load` (or `.from_json`), which calls
`check_manifest`: a manifest is input from disk, possibly damaged or hostile (a shard from
another machine), and its entries become paths and arguments. So before any command uses it:

- each file entry is a split file: a config the manifest has a build of, a task of the catalog
  (a build's `declared_tasks` are declared first: `catalog.declared`),
  a positive integer length, and its key is exactly `data/<config>/<task>/<L>.parquet`: a
  path built from them can never leave `data/` (`lnk/../../pwn` is no task);
- each config name is a plain folder and Hub config name (`check_config_name`), with the
  suffix its variant gives (`<tokenizer>--depth10`, `<tokenizer>--out16k`);
- every field the readers use has its type (counts are non-negative integers, hashes are
  sha256 hex digests, records are objects), so damage is one line naming the entry, never a
  traceback in whichever reader meets it first.

Optional fields (written by later versions of the format, or by builds with other options)
are checked when present. How a reader may then open `<root>/<rel>` without following a link
out of the folder is `ruler.builder.manifest.split_file`.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from ruler.benchmarks import DEFAULT
from ruler.catalog.benchmarks import get_benchmark, tasks_of
from ruler.catalog.declared import declare_json
from ruler.catalog.tasks import TASKS
from ruler.catalog.variants import record_ok, variant_from_record, variant_kinds
from ruler.kernel.errors import RulerError
from ruler.kernel.hub_names import check_config_name

FORMAT_VERSION = 1

Check = Callable[[Any], bool]


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _count(v: Any) -> bool:
    return _int(v) and v >= 0


def _positive(v: Any) -> bool:
    return _int(v) and v > 0


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _dict(v: Any) -> bool:
    return isinstance(v, dict)


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _sha256(v: Any) -> bool:
    return isinstance(v, str) and _SHA256.fullmatch(v) is not None


def _str_map(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(x, str) for kv in v.items() for x in kv)


def _list_of(check: Check) -> Check:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _or_none(check: Check) -> Check:
    return lambda v: v is None or check(v)


def _share(v: Any) -> bool:
    return isinstance(v, dict) and all(
        isinstance(v.get(k), (int, float)) and not isinstance(v.get(k), bool)
        for k in ("mean", "max"))


def _source(v: Any) -> bool:
    return isinstance(v, dict) and _sha256(v.get("sha256")) \
        and _bool(v.get("official", False)) and _or_none(_str)(v.get("official_sha256")) \
        and _or_none(_str)(v.get("file")) and _or_none(_str)(v.get("note"))


def _unknown_variant(v: Any) -> str | None:
    """The first field of a `variant` entry that no registered variant has, if any."""
    if not isinstance(v, dict):
        return None
    known = {kind.field for kind in variant_kinds()}
    return next((k for k in v if k not in known), None)


def _identity(v: Any) -> bool:
    return isinstance(v, dict) and _str_map(v.get("packages", {})) \
        and record_ok(v.get("variant", {}))


def _tokenizer(v: Any) -> bool:
    return isinstance(v, dict) and _str(v.get("name")) and _str(v.get("kind")) \
        and _str_map(v.get("files", {})) and _bool(v.get("pinned", False)) \
        and all(_or_none(_str)(v.get(k)) for k in ("repo", "revision", "chat_template_sha256",
                                                     "origin"))


#: field -> (check, required). `config`, `task` and `max_seq_length` have messages of their own.
FILE_FIELDS: Mapping[str, tuple[Check, bool]] = {
    "config": (_str, True), "task": (_str, True), "max_seq_length": (_positive, True),
    "rows": (_count, True), "bytes": (_count, True),
    "sha256": (_sha256, True), "content_sha256": (_sha256, True),
    "build_key": (_str, False), "packages": (_str_map, False), "counting": (_str, False),
    "repeated_share": (_share, False), "length_rule": (_str, False),
}
BUILD_FIELDS: Mapping[str, tuple[Check, bool]] = {
    "tokenizer": (_tokenizer, True), "identity": (_identity, False),
    "seed": (_int, False), "samples": (_positive, False), "prompt_mode": (_str, False),
    "generator_version": (_str, False), "packages": (_str_map, False),
    "sources": (lambda v: isinstance(v, dict) and all(map(_source, v.values())), False),
    "official": (_bool, False), "tasks": (_list_of(lambda t: t in TASKS), False),
    "lengths": (_list_of(_positive), False), "counting": (_list_of(_str), False),
    "length_rules": (_list_of(_str), False),
    # asked of the registry when a manifest is read: a variant registered after this module
    # was imported (a plug-in) is known
    "variant": (record_ok, False),
    "benchmark": (_str, False), "benchmark_package": (_str, False),
    "declared_tasks": (_dict, False), "suites": (_list_of(_str), False),
}
TOP_FIELDS: Mapping[str, tuple[Check, bool]] = {
    "builds": (_dict, True), "files": (_dict, True),
    "generator": (lambda v: isinstance(v, dict) and _str(v.get("name"))
                  and _str(v.get("version")), False),
    "packages": (_str_map, False),
}


def _wrong(record: Mapping[str, Any], fields: Mapping[str, tuple[Check, bool]]) -> list[str]:
    """The fields of `record` that are missing (when required) or of the wrong shape."""
    return [name for name, (check, required) in fields.items()
            if (name in record and not check(record[name])) or (required and name not in record)]


def check_manifest(manifest: Any, where: str) -> dict[str, Any]:
    """`manifest` (parsed JSON) if it is a well-formed manifest, else RulerError naming the
    file (`where`) and the first bad entry (see the module docstring)."""
    if not isinstance(manifest, dict) or not _dict(manifest.get("builds")) \
            or not _dict(manifest.get("files")):
        raise RulerError(f"{where} is not a ruler manifest (no `builds` and `files`): restore "
                         f"it, or build into another folder")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise RulerError(f"{where}: unsupported format_version "
                         f"{manifest.get('format_version')!r} (this ruler reads {FORMAT_VERSION})")
    wrong = _wrong(manifest, TOP_FIELDS)
    if wrong:
        raise RulerError(f"{where}: missing or malformed {', '.join(wrong)}")
    for config, build in manifest["builds"].items():
        _check_build(config, build, where)
    for rel, entry in manifest["files"].items():
        _check_file(rel, entry, manifest["builds"], where)
    return manifest


def _check_build(config: str, build: Any, where: str) -> None:
    if not isinstance(build, dict):
        raise RulerError(f"{where}: build {config!r} is not a record (a JSON object)")
    # Its declared tasks join the catalog first: its tasks and files name them.
    if "declared_tasks" in build:
        declare_json(build["declared_tasks"], f"{where}: build {config!r}")
    unknown = _unknown_variant(build.get("variant"))
    if unknown:
        raise RulerError(f"{where}: build {config!r} records variant {unknown!r}, which no "
                         f"registered variant knows: import the module that registers it "
                         f"(ruler.catalog.variants.register_variant) before reading this "
                         f"folder, install the plug-in that offers it (entry point group "
                         f"ruler.variants), or use the ruler that built it")
    # the benchmark it records, first (one not installed: one line naming its package, if
    # recorded; its tasks are unknown too, which would only say the tasks are malformed)
    recorded = build.get("benchmark", DEFAULT)
    package = build.get("benchmark_package")
    if _str(recorded) and _or_none(_str)(package):
        get_benchmark(recorded, package)
    wrong = _wrong(build, BUILD_FIELDS)
    if wrong:
        raise RulerError(f"{where}: build {config!r} has missing or malformed {', '.join(wrong)}")
    # A variant's config is its tokenizer's config name plus the suffix its parameters give.
    base = variant_from_record(build.get("variant")).base_config(config)
    check_config_name(base, f"build {config!r} of {where}")
    bench = get_benchmark(recorded, package)
    for axis in bench.axes:  # one value of each of its axes, under the axis's name
        if axis.name not in build:
            raise RulerError(f"{where}: build {config!r} of benchmark {bench.id!r} lacks a "
                             f"`{axis.name}`")
        try:
            axis.from_record(build[axis.name])
        except RulerError as e:
            raise RulerError(f"{where}: build {config!r} has a malformed `{axis.name}`: "
                             f"{e}") from None
    benchmark = bench.id
    other = [t for t in build.get("tasks") or () if t not in tasks_of(bench.id)]
    if other:
        raise RulerError(f"{where}: build {config!r} of benchmark {benchmark!r} lists "
                         f"another benchmark's task(s) {', '.join(other)}")


def _check_file(rel: str, entry: Any, builds: Mapping[str, Any], where: str) -> None:
    if not isinstance(entry, dict):
        raise RulerError(f"{where}: entry {rel!r} is not a record (a JSON object)")
    if "task" in entry and _str(entry["task"]) and entry["task"] not in TASKS:
        raise RulerError(f"{where}: entry {rel!r} names unknown task {entry['task']!r} "
                         f"(known: {', '.join(TASKS)})")
    if "max_seq_length" in entry and not _positive(entry["max_seq_length"]):
        raise RulerError(f"{where}: entry {rel!r} has max_seq_length "
                         f"{entry['max_seq_length']!r}, not a positive integer")
    wrong = _wrong(entry, FILE_FIELDS)
    if wrong:
        raise RulerError(f"{where}: entry {rel!r} has missing or malformed {', '.join(wrong)}")
    expected = f"data/{entry['config']}/{entry['task']}/{entry['max_seq_length']}.parquet"
    if rel != expected:
        raise RulerError(f"{where}: entry {rel!r} is not a split file of its config, task and "
                         f"length (they give {expected!r}); restore the manifest")
    if entry["config"] not in builds:
        raise RulerError(f"{where}: entry {rel!r} belongs to config {entry['config']!r}, "
                         f"which has no build entry")
    build = builds[entry["config"]]
    benchmark = build.get("benchmark", DEFAULT) if isinstance(build, dict) else DEFAULT
    if entry["task"] not in tasks_of(benchmark):
        raise RulerError(f"{where}: entry {rel!r} is task {entry['task']!r}, not one of "
                         f"benchmark {benchmark!r}, in config {entry['config']!r}")
