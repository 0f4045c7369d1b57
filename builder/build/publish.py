"""The driver's side of a build: publish finished files and record them.

A finished file arrives as a temporary file beside its final path. It is moved into place and
only then recorded in the manifest (and the card rendered from it), one file at a time, so an
interrupted build leaves only complete, recorded files and resumes from them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from ruler.builder.build.config import BuildConfig, FileResult
from ruler.builder.context import BuildContext
from ruler.builder.manifest import write_manifest
from ruler.builder.tasks import TASKS
from ruler.builder.variants import variant_record
from ruler.cards.render import write_card


class Publisher:
    """Publishes and records the files of one config in OUT's manifest."""

    def __init__(self, out: Path, manifest: dict[str, Any], config: str, entry_fields: dict,
                 ctx: BuildContext, previous: dict | None):
        self.out, self.manifest, self.config = out, manifest, config
        self._fields, self._ctx, self._previous = entry_fields, ctx, previous
        self.results: list[FileResult] = []

    def publish(self, result: FileResult, entry: dict[str, Any], written: Path) -> None:
        os.replace(written, self.out / result.path)  # in place first, then recorded
        self.results.append(result)
        files = self.manifest["files"]
        files[result.path] = entry
        self.manifest["files"] = dict(sorted(files.items()))
        self.commit()

    def commit(self) -> None:
        """Write the config's build entry, the manifest, then the card rendered from it."""
        self.manifest["builds"][self.config] = self._build_entry()
        write_manifest(self.out, self.manifest)
        write_card(self.out)

    def _build_entry(self) -> dict[str, Any]:
        sources = {k: v.as_manifest() for k, v in sorted(self._ctx.used_sources().items())}
        if self._previous:  # same identity (else dropped): keep the sources of earlier files
            sources = {**self._previous.get("sources", {}), **sources}
        files = [f for f in self.manifest["files"].values() if f["config"] == self.config]
        tok = self._ctx.tokenizer
        return {
            **self._fields, "tokenizer": tok.identity.as_manifest(), "sources": sources,
            "official": tok.identity.pinned and all(s["official"] for s in sources.values()),
            "tasks": [t for t in TASKS if any(f["task"] == t for f in files)],
            "lengths": sorted({f["max_seq_length"] for f in files}),
        }


def entry_fields(cfg: BuildConfig, mode: str, identity: dict[str, Any]) -> dict[str, Any]:
    """The parts of a config's build entry that come from the command, not from its files."""
    fields = {"prompt_mode": mode, "seed": cfg.seed, "samples": cfg.samples,
              "identity": identity}
    variant = variant_record(cfg.output_budget)
    if variant:
        fields["variant"] = variant
    return fields


def drop_config(out: Path, manifest: dict, config: str) -> None:
    """Remove every file of `config` (built with another identity) and its build entry."""
    stale = [rel for rel, f in manifest["files"].items() if f["config"] == config]
    if stale:
        print(f"ruler: removing {len(stale)} file(s) of {config!r} built with a different seed, "
              f"tokenizer, sample count or sources")
    for rel in stale:
        (out / rel).unlink(missing_ok=True)
        del manifest["files"][rel]
    manifest["builds"].pop(config, None)
    shutil.rmtree(out / "data" / config, ignore_errors=True)
