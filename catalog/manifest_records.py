"""The records inside a manifest build entry: its tokenizer, its sources and its identity; and
whether a build is official, decided here only.

A build is official when its tokenizer is a pinned registry tokenizer and every source it
read is the official file (its sha256 is the official one). `ruler build` records the flag,
`ruler verify` recomputes it from the entry (a hand-edited flag does not pass), `ruler build`
says why a build is not, and `ruler release` and the card trust the recorded flag.

Each record keeps the keys it does not know and writes back exactly the JSON it read
(`kernel.json_record`); the manifest checks their shapes before they are made
(`builder.manifest_schema`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Mapping

from ruler.kernel.json_record import FrozenRecord


@dataclass(frozen=True)
class TokenizerRecord(FrozenRecord):
    """The tokenizer a config was built with (`TokenizerIdentity.as_manifest()`): its name
    and kind, where its files came from, their hashes, its chat template's hash, and whether
    it is the registry's pinned tokenizer."""

    name: str
    kind: str
    origin: str | None = None  # where the files were loaded from (not identity)
    repo: str | None = None
    revision: str | None = None
    files: dict[str, str] = field(default_factory=dict)  # file name -> sha256
    chat_template_sha256: str | None = None
    pinned: bool = False


@dataclass(frozen=True)
class SourceRecord(FrozenRecord):
    """A source a build read (`ResolvedSource.as_manifest()`): the file (or folder) and its
    sha256, the official sha256, and why it is not the official file where that is known. A
    Hub source (`catalog.hub_sources`) adds its repo, config, revision and files' hashes."""

    sha256: str
    id: str | None = None
    file: str | None = None
    official: bool = False
    # None: the official bytes are not known (a Hub source whose files are pinned by the
    # commit alone, read from a stand-in)
    official_sha256: str | None = None
    note: str | None = None
    repo: str | None = None
    config: str | None = None
    revision: str | None = None
    files: dict[str, str] | None = None  # a Hub source's repo path -> sha256

    @property
    def is_official(self) -> bool:
        """Whether this is the official file: flagged so, with the official bytes."""
        return self.official and self.sha256 == self.official_sha256

    @property
    def flag_consistent(self) -> bool:
        """Whether its `official` flag says what its hashes say (a hand edit may not)."""
        return self.official == (self.sha256 == self.official_sha256)

    def unofficial_reason(self, sid: str) -> str:
        note = f": {self.note}" if self.note else ""
        return (f"source {sid} is not the official file ({self.file}, sha256 "
                f"{self.sha256[:12]}, official {str(self.official_sha256)[:12]}){note}")


@dataclass(frozen=True)
class IdentityRecord(FrozenRecord):
    """A build's identity (`builder.identity.make_identity`): what, when it changes, changes
    the rows of a config. The default benchmark's builds have no `benchmark`, a default
    config no `variant`; a benchmark's axes' values are kept in `extra` under their names."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"benchmark", "variant"})

    generator_version: str | None = None
    seed: int | None = None
    samples: int | None = None
    prompt_mode: str | None = None
    tokenizer: str | None = None  # the tokenizer's fingerprint
    tokenizer_revision: str | None = None  # "repo@revision", None for a tokenizer without
    packages: dict[str, str] = field(default_factory=dict)
    benchmark: str | None = None
    variant: dict[str, int] | None = None  # catalog.variants: {field: value}

    #: The fields `identity_differences` names, with how it names them.
    LABELS: ClassVar[Mapping[str, str]] = {
        "generator_version": "generator version", "seed": "seed", "samples": "samples",
        "prompt_mode": "prompt mode", "tokenizer": "tokenizer hash (files or chat template)",
        "tokenizer_revision": "tokenizer revision", "variant": "variant",
        "benchmark": "benchmark"}


def is_official(tokenizer: TokenizerRecord, sources: Mapping[str, SourceRecord]) -> bool:
    """Whether a build of this tokenizer from these sources is official (module docstring)."""
    return tokenizer.pinned and all(s.is_official for s in sources.values())


def unofficial_reasons(tokenizer: TokenizerRecord,
                       sources: Mapping[str, SourceRecord]) -> list[str]:
    """Why such a build is not official, one phrase each; [] when it is."""
    reasons = [] if tokenizer.pinned else [
        f"tokenizer {tokenizer.name!r} is not a pinned registry tokenizer"]
    return reasons + [s.unofficial_reason(sid) for sid, s in sorted(sources.items())
                      if not s.is_official]
