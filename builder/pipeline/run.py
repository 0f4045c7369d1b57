"""`ruler build`: plan the split files, fit every sample, publish each finished file.

Before anything is written, every input is validated (tasks, lengths, tokenizer, sources,
sample counts, and that the smallest sample of each task fits each length), so bad input
leaves OUT untouched. Resuming, a build of another identity (refused unless `overwrite`) and
concurrent builds into one OUT are docs/building.md's "Resuming, concurrent builds and
merging": a file whose build key (`ruler.builder.identity`) is unchanged is kept, never
rebuilt. Workers fit and write whole files, longest first; this process publishes and
records them, under the manifest lock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

from ruler.builder.identity import build_differences
from ruler.builder.manifest import MANIFEST_NAME, Manifest, manifest_lock, split_file
from ruler.builder.pipeline.config import (
    BuildConfig,
    BuildReport,
    FileJob,
    FileResult,
    local_workers,
)
from ruler.builder.pipeline.executor import Executor, LocalExecutor
from ruler.builder.pipeline.plan import job_key, plan_units, preflight, resolve_sources
from ruler.builder.pipeline.publish import (
    Publisher,
    build_entry,
    drop_config,
    finish_published,
    listed_files,
)
from ruler.builder.pipeline.recipe import BuildRecipe
from ruler.builder.pipeline.worker import Worker
from ruler.builder.publish_steps import refresh_published
from ruler.builder.seed_series import seed_clash
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.kernel.atomic import STORAGE_ERRORS, temp_prefix
from ruler.kernel.errors import RulerError
from ruler.kernel.hashing import file_sha256
from ruler.kernel.temp_files import new_temp_tag, remove_stale_temp_files


def run_builds(cfgs: Sequence[BuildConfig],
               done: Callable[[BuildConfig, BuildReport], None] | None = None
               ) -> list[BuildReport]:
    """Build several configs one after the other (an axis's values, replicates: one
    command), each as `run_build` does, `done` called with each one's config and report; the
    card is rendered once, at the end (also when one fails), not after each config."""
    reports: list[BuildReport] = []
    outs = list(dict.fromkeys(Path(cfg.out) for cfg in cfgs))
    try:
        for cfg in cfgs:
            reports.append(run_build(dataclasses.replace(cfg, render_card=False)))
            if done is not None:
                done(cfg, reports[-1])
    except BaseException:
        for out in outs:  # the card of the files recorded; the error to say is the build's
            _quietly(partial(_finish_recorded, out))
        raise
    for out in outs:
        if any(not f.skipped for r in reports if Path(r.out) == out for f in r.files):
            finish_published(out)
        else:  # nothing built: leave OUT as it is, unless a killed run left the card stale
            refresh_published(out)
    return reports


def _finish_recorded(out: Path) -> None:
    """The card of what OUT's manifest records (nothing where no manifest was written)."""
    if (out / MANIFEST_NAME).is_file():
        finish_published(out)


def _quietly(step: Callable[[], object]) -> None:
    """Run a clean-up step after a failure: its own error must not hide the build's."""
    with contextlib.suppress(Exception):  # best effort: the build's error is raised after it
        step()


def run_build(cfg: BuildConfig) -> BuildReport:
    """Build one config into `cfg.out`; its card is rendered once its files are recorded,
    unless `cfg.render_card` is False (`run_builds` renders it once for several configs)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # we parallelise by process
    out = Path(cfg.out)
    check_out_folder(out)
    tok = load_tokenizer(cfg.tokenizer, cfg.tokenizers_dir)
    # A variant is its own config; its samples keep the default config's seeds (the recipe's
    # seed name), so sample i differs from the default's sample i only by the variant.
    recipe = BuildRecipe.from_config(cfg, tok)
    config = recipe.config
    worker = Worker(recipe, temp_tag=new_temp_tag())
    ctx = worker.ctx
    units = plan_units(cfg)
    resolve_sources(ctx, units)  # in the worker's context: sent with it to other processes

    manifest = Manifest.load(out)
    identity = recipe.identity()
    ours = {sid: s.sha256 for sid, s in ctx.used_sources().items()}
    differs = build_differences(manifest.build(config), identity, ours)
    if differs and not cfg.overwrite:
        n = len(listed_files(out, manifest, config))
        raise RulerError(
            f"{out} holds {n} file(s) of config {config!r} built with another identity "
            f"({'; '.join(differs)}): pass --overwrite to replace them, or build into another "
            f"--out (a new task or length of the same build is simply added)")
    clash = seed_clash(manifest.builds, config, recipe.variant.record(), recipe.seed)
    if clash:
        raise RulerError(clash.message(str(out), f"build with --seed {clash.other_seed}, or "
                                                 f"into another --out"))
    kept: list[FileResult] = []
    todo: list[FileJob] = []
    for task, L in units:
        key = job_key(identity, ctx, task, L, recipe.declared.get(task))
        job = FileJob(out, config, task, L, recipe.samples, key,
                      packages=identity.packages, tokenizer_pinned=tok.identity.pinned)
        path = split_file(out, job.path)  # never written through a link in OUT
        entry = None if differs else manifest.file(job.path)
        if entry and entry.build_key == job.build_key and path.is_file() \
                and file_sha256(path) == entry.sha256:
            kept.append(FileResult(job.path, task, L, entry.rows, skipped=True,
                                   bytes=entry.bytes))
        else:
            todo.append(job)
    preflight(worker, [(job.task, job.max_seq_length) for job in todo])
    remove_stale_temp_files(out)  # of builds that were killed; never a running build's
    if not todo:  # up to date: leave OUT exactly as it is (it may be read-only) ...
        if cfg.render_card:  # ... unless a run killed before its last card write left it stale
            refresh_published(out)
        return BuildReport(out, config, _in_plan_order(kept, units))

    publisher = Publisher(out, config, build_entry(recipe, identity), ctx)
    bar = None
    try:
        try:
            # Entered first: a Ray cluster that cannot be reached fails before OUT is touched.
            with _executor(cfg, worker) as executor:
                _make_writable_folder(out)
                if differs:  # only after every check passed, and only the manifest's own files
                    removed = drop_config(out, config)
                    print(f"ruler: --overwrite: removed {removed} file(s) of {config!r} built "
                          f"with {'; '.join(differs)}")
                bar = executor.progress = _progress(cfg, len(todo) * cfg.samples)
                executor.run(todo, publisher.publish)
        except BaseException:
            if cfg.render_card:  # the card of the files recorded before the failure
                _quietly(publisher.finish)
            raise
        if cfg.render_card:
            publisher.finish()
    except OSError as e:
        if e.errno not in STORAGE_ERRORS:
            raise
        where = e.filename2 or e.filename or out
        raise RulerError(f"cannot write {where}: {e.strerror}; the files finished before are "
                         f"recorded (free space or make {out} writable, then run the same "
                         f"command again to resume)") from None
    finally:
        if bar is not None:
            bar.close()
        for job in todo:  # what a stopped worker or a failure left unpublished
            final = out / job.path
            for tmp in final.parent.glob(temp_prefix(final, worker.temp_tag) + "*.tmp"):
                # a folder made read-only: the first error is the one to say
                with contextlib.suppress(OSError):
                    tmp.unlink(missing_ok=True)
    return BuildReport(out, config, _in_plan_order(kept + publisher.results, units))


def _executor(cfg: BuildConfig, worker: Worker) -> Executor:
    """The executor `cfg.executor` names. Ray is imported only when its executor runs."""
    if cfg.executor == "ray":
        from ruler.builder.pipeline.ray_executor import RayExecutor

        return RayExecutor(worker, cfg.ray_address, cfg.workers)
    return LocalExecutor(worker, local_workers(cfg), cfg.start_method)


def check_out_folder(out: Path) -> None:
    """OUT must be a folder or not exist yet (checked before anything is loaded)."""
    if out.exists() and not out.is_dir():
        raise RulerError(f"--out {out} is a file, not a folder: choose a folder to build into")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise RulerError(f"--out {out}: {parent} is a file, not a folder")
            break


def _make_writable_folder(out: Path) -> None:
    """Create OUT and take its lock once: a folder we cannot write fails here, clearly,
    before any work."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RulerError(f"cannot create {out}: {e.strerror or e}") from None
    with manifest_lock(out):
        pass
    if not os.access(out, os.W_OK):
        raise RulerError(f"cannot write to {out}: permission denied")


def _in_plan_order(results: list[FileResult], units) -> list[FileResult]:
    return sorted(results, key=lambda r: units.index((r.task, r.max_seq_length)))


def _progress(cfg: BuildConfig, total: int):
    if not cfg.progress or total == 0:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="sample", desc="ruler build", dynamic_ncols=True)
