"""Planning a build: which files, under which identity, and whether they can be built at all.

The plan is (task, length) files for one tokenizer; `--shard i/n` keeps every n-th file, so
shards are disjoint and their union is the full build. A file's build key hashes everything
that shapes its rows, so a kept file is never stale and a stale one is never kept.
"""

from __future__ import annotations

from typing import Sequence

from ruler.builder.fitting import too_short_counts
from ruler.builder.identity import file_key
from ruler.builder.pipeline.config import BuildConfig
from ruler.builder.pipeline.worker import Worker
from ruler.catalog import get_task
from ruler.catalog.context import BuildContext
from ruler.catalog.declared import DeclaredTask
from ruler.catalog.manifest_records import IdentityRecord
from ruler.kernel.errors import TooShortError
from ruler.kernel.rng import sample_rng


def job_key(identity: IdentityRecord, ctx: BuildContext, task: str, L: int,
            declared: DeclaredTask | None = None) -> str:
    """A planned file's build key, with the hashes of the sources its task reads (and a
    declared task's record: `BuildRecipe.declared`)."""
    return file_key(identity, task, L, {sid: ctx.source(sid).sha256
                                        for sid in get_task(task).sources}, declared)


def plan_units(cfg: BuildConfig) -> list[tuple[str, int]]:
    """This shard's (task, length) files, shortest lengths first."""
    units = [(t, L) for L in sorted(cfg.lengths) for t in cfg.tasks]
    i, n = cfg.shard
    return [u for k, u in enumerate(units) if k % n == i]


def resolve_sources(ctx: BuildContext, units: Sequence[tuple[str, int]]) -> None:
    """Find (and hash) every source the planned tasks read: a missing one fails here."""
    for task in sorted({t for t, _ in units}):
        for source_id in get_task(task).sources:
            ctx.source(source_id)


def preflight(worker: Worker, units: Sequence[tuple[str, int]]) -> None:
    """Fail before writing anything: sample counts and the smallest samples' fit.

    The smallest draft of sample 0 is checked always; when it takes more than half of L (a
    length near a task's minimum, where samples differ in whether they fit), every sample's
    smallest draft is checked, so a too-short length never fails in the middle of a build.
    """
    ctx, samples = worker.ctx, worker.recipe.samples
    count = worker.exact.prompt_length  # small drafts: whole-prompt counts are cheap
    for task, L in units:
        gen = worker.generator(task, L)
        gen.check_samples(samples)

        def needed(index: int) -> int:
            rng = sample_rng(ctx.seed, ctx.tokenizer_name, task, L, index)
            return count(gen.draft(index, rng, gen.min_size)) + gen.reserved_tokens

        worst = needed(0)
        if L >= worst > L // 2:
            worst = max([worst, *(needed(i) for i in range(1, samples))])
        if worst > L:
            raise TooShortError(task, L, worst, too_short_counts(gen))
