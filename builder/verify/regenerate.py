"""Rebuild rows from the manifest's record of the build, to compare them with the stored ones.

The builder is deterministic: a row is a pure function of (seed, tokenizer, task, L, index),
the sources and the package versions. Rebuilding a few random rows of every file and finding
them byte for byte equal to the stored rows proves far more than hashes can (hashes only prove
the files are what the manifest says; this proves the manifest's build made them). The same
generators give `ruler verify` each QA question's gold documents.

A `Regenerator` makes, per config and lazily in each process that needs one, the build's
`Worker`: the tokenizer verify loaded (and checked against the manifest), the recorded seed and
prompt mode, and the sources found here, each checked to be the bytes the build recorded.
"""

from __future__ import annotations

import os
import random
from typing import Any, Mapping

from ruler.builder.errors import RulerError
from ruler.builder.manifest import BuildEntry
from ruler.builder.packages import content_packages


def rows_to_regenerate(n: int, k: int, seed_text: str) -> set[int]:
    """`k` of a file's `n` row indices, random but the same on every run for the same file
    (seeded by its content hash), so a reported mismatch can be looked at again."""
    if k <= 0 or n <= 0:
        return set()
    return set(random.Random(seed_text).sample(range(n), min(k, n)))


class Regenerator:
    def __init__(self, builds: Mapping[str, BuildEntry], tokenizers: Mapping[str, Any],
                 sources_dir: str | os.PathLike | None):
        self.builds, self.tokenizers, self.sources_dir = builds, tokenizers, sources_dir
        self._workers: dict[str, Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_workers": {}}  # each process builds its own

    def _worker(self, config: str):
        """The config's Worker, or a string saying why there is none."""
        if config not in self._workers:
            from ruler.builder.build.worker import Worker
            from ruler.builder.context import BuildContext
            from ruler.builder.tokenizer_registry import config_name

            build, tok = self.builds.get(config), self.tokenizers.get(config)
            if build is None or tok is None:
                self._workers[config] = "its tokenizer did not load (see above)"
            else:
                # A variant config keeps the seeds of its tokenizer's default config.
                variant = build.variant or {}
                seed_name = config_name(str(build.tokenizer.get("name"))) if variant else config
                ctx = BuildContext(tok, seed_name, build.seed, self.sources_dir,
                                   depth_bins=variant.get("depth_bins"))
                self._workers[config] = Worker(ctx, build.prompt_mode, config=config,
                                               output_budget=variant.get("output_budget"))
        return self._workers[config]

    def generator(self, config: str, task: str, max_seq_length: int):
        """The task's generator for this build, or a string saying why there is none."""
        from ruler.builder.tasks import get_task

        worker = self._worker(config)
        if isinstance(worker, str):
            return worker
        recorded = self.builds[config].sources or {}  # a worker exists: so does the build
        for sid in get_task(task).sources:
            try:
                found = worker.ctx.source(sid)
            except RulerError as e:
                return f"source {sid!r} not found here ({e})"
            want = (recorded.get(sid) or {}).get("sha256")
            if found.sha256 != want:
                return (f"source {sid!r} at {found.path} has sha256 {found.sha256[:12]}, the "
                        f"build recorded {str(want)[:12]} (point --sources at the copy it used)")
        return worker.generator(task, max_seq_length)

    def row(self, config: str, task: str, max_seq_length: int,
            index: int) -> tuple[dict[str, Any], bytes] | str:
        """Row `index` of (task, L) rebuilt from scratch, with its canonical bytes; or a
        string saying why it cannot be rebuilt here."""
        gen = self.generator(config, task, max_seq_length)
        if isinstance(gen, str):
            return gen
        row, canonical, *_ = self._worker(config).make_row(task, max_seq_length, index)
        return row, canonical

    def version_note(self, config: str) -> str:
        """Why a rebuilt row may differ besides damage: other package versions here."""
        build = self.builds.get(config)
        tok = self.tokenizers.get(config)
        if tok is None or build is None or not build.packages:
            return ""
        here = content_packages(*tok.identity.content_kinds)
        changed = [f"{p} {v} recorded, {here.get(p)} here"
                   for p, v in sorted(build.packages.items()) if here.get(p) != v]
        return f" (package versions differ: {', '.join(changed)})" if changed else ""
