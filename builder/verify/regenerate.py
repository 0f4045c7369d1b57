"""Rebuild rows from the manifest's record of the build, to compare them with the stored ones.

The builder is deterministic: a row is a pure function of (seed, tokenizer, task, L, index),
the sources and the package versions. Rebuilding a few random rows of every file and finding
them byte for byte equal to the stored rows proves far more than hashes can (hashes only prove
the files are what the manifest says; this proves the manifest's build made them). The same
generators give `ruler verify` each QA question's gold documents.

A `Regenerator` holds, per config, the build's recipe as the manifest records it
(`BuildRecipe.from_manifest`: the tokenizer verify loaded and checked against the manifest,
the recorded seed, prompt mode and variant, the sources found here), and makes from it,
lazily in each process that needs one, the build's own `Worker`; each source the rows read is
checked to be the bytes the build recorded. The recipes are made here, in the process that
read the manifest, and sent to pool processes as they are (a plug-in variant travels as its
class, which pickle imports there).
"""

from __future__ import annotations

import os
import random
from typing import Any, Mapping

from ruler.builder.manifest import BuildEntry
from ruler.builder.packages import content_packages
from ruler.builder.pipeline.recipe import BuildRecipe
from ruler.kernel.errors import RulerError


def rows_to_regenerate(n: int, k: int, seed_text: str) -> set[int]:
    """`k` of a file's `n` row indices, random but the same on every run for the same file
    (seeded by its content hash), so a reported mismatch can be looked at again."""
    if k <= 0 or n <= 0:
        return set()
    return set(random.Random(seed_text).sample(range(n), min(k, n)))


def _recipe(config: str, build: BuildEntry, tok: Any,
            sources_dir: str | os.PathLike | None) -> BuildRecipe | str:
    """The recipe of `config`'s build, or a string saying why there is none."""
    if tok is None:
        return "its tokenizer did not load (see above)"
    try:
        return BuildRecipe.from_manifest(config, build, tok, sources_dir)
    except RulerError as e:
        return str(e)


class Regenerator:
    def __init__(self, builds: Mapping[str, BuildEntry], tokenizers: Mapping[str, Any],
                 sources_dir: str | os.PathLike | None):
        self.builds, self.tokenizers = builds, tokenizers
        # config -> its build's recipe, or a string saying why there is none
        self.recipes: dict[str, BuildRecipe | str] = {
            config: _recipe(config, build, tokenizers.get(config), sources_dir)
            for config, build in builds.items()}
        self._workers: dict[str, Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_workers": {}}  # each process builds its own

    def _worker(self, config: str):
        """The config's Worker, or a string saying why there is none."""
        if config not in self._workers:
            from ruler.builder.pipeline.worker import Worker

            recipe = self.recipes.get(config, "the manifest has no build of it")
            self._workers[config] = recipe if isinstance(recipe, str) else Worker(recipe)
        return self._workers[config]

    def generator(self, config: str, task: str, max_seq_length: int):
        """The task's generator for this build, or a string saying why there is none."""
        from ruler.catalog import get_task

        worker = self._worker(config)
        if isinstance(worker, str):
            return worker
        recorded = self.builds[config].sources or {}  # a worker exists: so does the build
        for sid in get_task(task).sources:
            try:
                found = worker.ctx.source(sid)
            except RulerError as e:
                return f"source {sid!r} not found here ({e})"
            want = recorded[sid].sha256 if sid in recorded else None
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
        try:  # the worker refuses a row that fails the row checks (builder.row_checks)
            made = self._worker(config).make_row(task, max_seq_length, index)
        except RulerError as e:
            return f"the build refuses it now: {e}"
        return made.row, made.canonical

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
