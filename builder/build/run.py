"""`ruler build`: plan the split files, fit every sample, publish each finished file.

Before anything is written, every input is validated (tasks, lengths, tokenizer, sources,
sample counts, and that the smallest sample of each task fits each length), so bad input
leaves OUT untouched. Files are written atomically and recorded in the manifest one by one: an
interrupted build resumes, and a file whose build key (seed, tokenizer, sources, generator
version, sample count) is unchanged is kept, never rebuilt, while a changed key never reuses
it. Workers fit and write whole files, longest first; this process publishes and records them.
"""

from __future__ import annotations

import os
from pathlib import Path

from ruler.builder.build.config import BuildConfig, BuildReport, FileJob, FileResult
from ruler.builder.build.executor import LocalExecutor
from ruler.builder.build.plan import build_identity, file_key, plan_units, preflight, resolve_sources
from ruler.builder.build.publish import Publisher, drop_config, entry_fields
from ruler.builder.build.worker import Worker
from ruler.builder.context import BuildContext
from ruler.builder.errors import RulerError
from ruler.builder.hashing import file_sha256
from ruler.builder.manifest import data_path, read_manifest
from ruler.builder.tasks import get_task
from ruler.builder.tokenizer_registry import config_name, load_tokenizer
from ruler.builder.variants import OUTPUT_BUDGET_MODE, variant_config
from ruler.builder.writer import temp_prefix


def run_build(cfg: BuildConfig) -> BuildReport:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # we parallelise by process
    tok = load_tokenizer(cfg.tokenizer, cfg.tokenizers_dir)
    base = config_name(tok.name)
    config = variant_config(base, cfg.output_budget)
    mode = tok.default_mode()
    if cfg.output_budget is not None:
        if not tok.has_chat_template:
            raise RulerError(f"--output-budget builds prompts for reasoning models (chat template "
                             f"with a generation prompt); tokenizer {tok.name!r} has no chat "
                             f"template")
        mode = OUTPUT_BUDGET_MODE
    # Samples are seeded by the tokenizer's config name, so a variant draws the default's seeds.
    ctx = BuildContext(tok, base, cfg.seed, cfg.sources_dir)
    worker = Worker(ctx, mode, exact_counts=cfg.exact_counts, config=config,
                    output_budget=cfg.output_budget)
    units = plan_units(cfg)
    resolve_sources(ctx, units)

    out = Path(cfg.out)
    manifest = read_manifest(out)
    identity = build_identity(cfg, tok, mode, ctx.used_sources())
    previous = manifest["builds"].get(config)
    # Source hashes are compared per file (build_key): a run may use fewer sources.
    changed = bool(previous) and (previous.get("identity", {}) | {"sources": {}}
                                  != identity | {"sources": {}})
    kept: list[FileResult] = []
    todo: list[FileJob] = []
    for task, L in units:
        rel = data_path(config, task, L)
        key = file_key(identity, task, L, get_task(task).sources)
        entry = None if changed else manifest["files"].get(rel)
        if entry and entry.get("build_key") == key and (out / rel).is_file() \
                and file_sha256(out / rel) == entry["sha256"]:
            kept.append(FileResult(rel, task, L, entry["rows"], skipped=True,
                                   bytes=entry["bytes"]))
        else:
            todo.append(FileJob(task, L, rel, key))
    preflight(worker, [(job.task, job.max_seq_length) for job in todo], cfg.samples)
    if changed:  # only after every check passed: a folder holds one build identity per config
        drop_config(out, manifest, config)
        previous = None

    publisher = Publisher(out, manifest, config, entry_fields(cfg, mode, identity), ctx,
                          previous)
    bar = _progress(cfg, len(todo) * cfg.samples)
    try:
        with LocalExecutor(worker, cfg.workers, cfg.start_method, bar) as executor:
            executor.run(out, config, todo, cfg.samples, publisher.publish)
        if bar is not None:
            bar.close()
    finally:
        for job in todo:  # what a stopped worker or a failure left unpublished
            for tmp in (out / job.path).parent.glob(temp_prefix(out / job.path) + "*.tmp"):
                tmp.unlink(missing_ok=True)
    results = kept + publisher.results
    results.sort(key=lambda r: units.index((r.task, r.max_seq_length)))
    publisher.commit()
    return BuildReport(out, config, results)


def _progress(cfg: BuildConfig, total: int):
    if not cfg.progress or total == 0:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="sample", desc="ruler build", dynamic_ncols=True)
