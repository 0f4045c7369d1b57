"""A build's identity: everything that, when it changes, changes the rows of a config.

One definition serves three readers: `ruler build` (is OUT's config the same build as this
one? then resume and add files, else refuse), `ruler verify` (recompute the identity and every
file's build key from the manifest's recorded fields: an edited seed, revision or version
shows) and `ruler merge` (only builds of one identity join).

The identity is (generator version, seed, samples, prompt mode, tokenizer fingerprint and
repo@revision, versions of the packages that shape content, and a variant's parameters:
`ruler.catalog.variants`; the default config's identity has no variant key). Sources are per
file: a build of a few tasks reads fewer sources, so each file's key adds the hashes of its
task's sources.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Mapping

from ruler.benchmarks import DEFAULT

# The packages that shape rows: one list, in the lowest layer that reads it (the manifest
# records the writer's environment too); the identity records its tokenizer's share of it.
from ruler.builder.packages import CONTENT_PACKAGES  # noqa: F401 (identity.CONTENT_PACKAGES)
from ruler.catalog.manifest_records import IdentityRecord, SourceRecord, TokenizerRecord
from ruler.catalog.tokenizer import TokenizerIdentity

if TYPE_CHECKING:
    from ruler.builder.manifest import BuildEntry
    from ruler.catalog.declared import DeclaredTask

#: A package one identity records and the other does not (it does not shape that build's rows).
NOT_RECORDED = "not recorded"


def tokenizer_fingerprint(record: TokenizerRecord) -> str:
    """The fingerprint of a tokenizer as the manifest records it (kind, file hashes, chat
    template hash): equal to the loaded tokenizer's `identity.fingerprint()`."""
    return TokenizerIdentity(
        name=record.name, kind=record.kind, origin="", files=dict(record.files),
        chat_template_sha256=record.chat_template_sha256).fingerprint()


def make_identity(*, generator_version: str | None, seed: int | None, samples: int | None,
                  prompt_mode: str | None, tokenizer: TokenizerRecord,
                  packages: Mapping[str, str], variant: Mapping[str, int] | None = None,
                  benchmark: str | None = None,
                  axes: Mapping[str, Any] | None = None) -> IdentityRecord:
    """The identity of a config's build. `tokenizer` is its manifest record
    (`TokenizerIdentity.as_manifest()`); where the files came from (origin) is not identity.
    Another benchmark's build than the default's names its benchmark (the default's has no such
    key, as in the manifest, so its identities are what they always were), and its axes'
    values as the manifest records them (`axes`: a `language`)."""
    repo, revision = tokenizer.repo, tokenizer.revision
    return IdentityRecord(
        generator_version=generator_version, seed=seed, samples=samples,
        prompt_mode=prompt_mode, tokenizer=tokenizer_fingerprint(tokenizer),
        tokenizer_revision=f"{repo}@{revision}" if repo or revision else None,
        packages=dict(sorted(packages.items())),
        benchmark=None if benchmark in (None, DEFAULT) else benchmark,
        variant=dict(sorted(variant.items())) if variant else None, extra=dict(axes or {}))


def identity_of_build(build: BuildEntry) -> IdentityRecord:
    """The identity recomputed from a manifest build entry's recorded fields."""
    return make_identity(generator_version=build.generator_version, seed=build.seed,
                         samples=build.samples, prompt_mode=build.prompt_mode,
                         tokenizer=build.tokenizer, packages=build.packages or {},
                         variant=build.variant or None, benchmark=build.benchmark,
                         axes=build.axis_records())


def file_key(identity: IdentityRecord, task: str, max_seq_length: int,
             source_hashes: Mapping[str, str | None],
             declared: DeclaredTask | None = None) -> str:
    """A file's build key: its build's identity, task, length and its task's source hashes,
    and for a declared task (`catalog.declared`) its record: family and arguments (a
    task registered by code has none, so its keys are what they always were)."""
    relevant = dict(identity.to_json(), sources=dict(sorted(source_hashes.items())), task=task,
                    max_seq_length=max_seq_length)
    if declared is not None:
        relevant["declared"] = declared.to_json()
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()


def identity_differences(old: IdentityRecord | None, new: IdentityRecord) -> list[str]:
    """What differs between two identities, one phrase each ("seed 42 -> 7"); [] when equal
    or when there is no old one."""
    if old is None:
        return []
    found = [f"{label} {getattr(old, key)} -> {getattr(new, key)}"
             for key, label in IdentityRecord.LABELS.items()
             if getattr(old, key) != getattr(new, key)]
    before, after = old.packages, new.packages
    changed = [f"{p} {before.get(p, NOT_RECORDED)} -> {after.get(p, NOT_RECORDED)}"
               for p in sorted(set(before) | set(after)) if before.get(p) != after.get(p)]
    if changed:
        found.append("package versions (" + ", ".join(changed) + ")")
    # the benchmark's axes (a language), and fields of another generator version
    found += [f"{key} {old.extra[key]} -> {new.extra.get(key)}" for key in sorted(old.extra)
              if key in new.extra and old.extra[key] != new.extra[key]]
    foreign = sorted(set(old.extra) ^ set(new.extra))
    if foreign:
        found.append(f"identity fields {', '.join(foreign)}")
    return found


def source_differences(old: Mapping[str, SourceRecord],
                       new: Mapping[str, str]) -> list[str]:
    """Sources both builds read, with other bytes (manifest `sources` entries vs hashes)."""
    return [f"source {sid} sha256 {old[sid].sha256[:12]} -> {sha[:12]}"
            for sid, sha in sorted(new.items())
            if sid in old and old[sid].sha256 != sha]


def build_differences(previous: BuildEntry | None, identity: IdentityRecord,
                      sources: Mapping[str, str]) -> list[str]:
    """What differs between a folder's recorded build of a config (`previous`, its manifest
    entry) and a build of `identity` that reads `sources` (id -> sha256), one phrase each;
    [] when the folder has no build of the config yet, or the same one. The one check of
    `ruler build` (before and while it runs) and `ruler merge`: a recorded build without an
    identity (a manifest of an older ruler) is never taken for the same build."""
    if previous is None:
        return []
    if previous.identity is None:
        return ["no identity recorded (a manifest of an older ruler)"]
    return (identity_differences(previous.identity, identity)
            + source_differences(previous.sources or {}, sources))
