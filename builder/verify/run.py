"""`verify(OUT)`: prove a build folder is what its manifest says, and loads.

Checks, per split file listed in `manifest.json`:
  bytes   - the file exists and its size and sha256 equal the manifest's;
  content - it reads as Parquet with exactly ROW_SCHEMA, the manifest's row count and the
            manifest's row-content hash;
  rows    - every row belongs to the file's (config, task, L), `index` runs 0..N-1, budgets and
            metric equal the task catalog, and `length <= L`;
  tokens  - a sample of rows (every row with `full=True`) re-tokenized with the build's
            tokenizer gives exactly the stored `length`, and the same rows' gold positions
            and depths, re-derived from where their gold items sit in `input`, are the stored
            ones (every row: one depth in [0, 1] per position, positions in order);
  answers - each row's `outputs` can be read off its `input` (`ruler.catalog.checks`),
            and in a depth-swept config (`--depths N`) row i's gold depths lie in bin i mod N;
  regen   - with `regenerate=K`, K random rows are rebuilt from the manifest's identity and
            must equal the stored rows byte for byte (needs the build's sources).
Folder-wide: no Parquet file outside the manifest, each build entry agrees with its files and
its `official` flag with its tokenizer and sources, its identity recomputed from its recorded
fields is the recorded one and gives every file's build key, every file holds the build's
sample count, the tokenizer loaded here is the recorded one (a registry tokenizer at the
pinned revision), the card is the one the manifest renders (its `configs` first), no symbolic
link sits under `data/`, and `datasets.load_dataset` reads every config and split with the
expected row counts.

Every problem names the file (and row). Problems are collected, not raised, so one run reports
all of them; a folder that cannot be verified at all (no manifest, a damaged one, a listed file
reached through a symbolic link) raises RulerError.
"""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from ruler.builder.findings import DEFAULT_SAMPLE, FileReport, VerifyReport
from ruler.builder.manifest import BuildEntry, FileEntry, load_manifest
from ruler.builder.pipeline.config import default_start_method
from ruler.builder.publish_steps import published_problems
from ruler.builder.verify.folder import manifest_problems
from ruler.builder.verify.loading import check_loading
from ruler.builder.verify.regenerate import Regenerator
from ruler.builder.verify.rows import Build, verify_file
from ruler.builder.verify.tokenizers import tokenizer_for
from ruler.catalog.benchmarks import recorded_length_rule
from ruler.catalog.variants import NO_VARIANT, Variant, variant_from_record


@dataclass(frozen=True)
class FileChecks:
    """What checking one file needs besides its manifest entry: the same for every file, sent
    once to each pool process through the initializer (inherited by fork; pickled under
    spawn, tokenizers as load recipes)."""

    out: Path
    builds: Mapping[str, BuildEntry]
    tokenizers: Mapping[str, Any]  # config -> Tokenizer, or None where it did not load
    # config -> its build's variant, read from the manifest here (sent to pool processes as
    # objects: a plug-in variant need not be registered there)
    variants: Mapping[str, Variant]
    full: bool
    sample: int
    regenerate: int = 0
    regenerator: Regenerator | None = None
    full_unpinned: bool = False  # every row re-tokenized for tokenizers outside the registry

    def __call__(self, job: tuple[str, FileEntry]) -> FileReport:
        rel, entry = job
        build = self.builds[entry.config]  # every file's config has a build entry (schema)
        full = self.full or (self.full_unpinned and not build.tokenizer.pinned)
        return verify_file(self.out, rel, entry, self.tokenizers.get(entry.config),
                           build.prompt_mode, full, self.sample, self.regenerate,
                           self.regenerator, self.variants.get(entry.config, NO_VARIANT),
                           Build(build.benchmark_id, build.axis_records(),
                                 recorded_length_rule(entry.length_rule, build.benchmark_id)))


_checks: FileChecks | None = None  # set in pool processes only, by the initializer


def _init_pool_process(checks: FileChecks) -> None:
    global _checks
    _checks = checks


def _check_in_pool(job: tuple[str, FileEntry]) -> FileReport:
    assert _checks is not None, "set by the pool process's initializer"
    return _checks(job)


def verify(out: str | Path, *, full: bool = False, sample: int = DEFAULT_SAMPLE,
           tokenizers: Mapping[str, str] | None = None, tokenizers_dir: str | None = None,
           load: bool = True, progress: Callable[[str], None] | None = None,
           workers: int = 1, start_method: str | None = None, regenerate: int = 0,
           sources_dir: str | None = None, full_unpinned: bool = False,
           step: Callable[[str], None] | None = None) -> VerifyReport:
    """Verify the build folder `out`; see the module docstring for what is checked.

    `workers` > 1 checks files in that many processes (`start_method`: default fork where
    available, else spawn). `regenerate`: rows rebuilt per file (sources from `sources_dir`,
    else $RULER_SOURCES, then the cache). `full_unpinned`: re-tokenize every row of configs
    whose tokenizer is not a pinned registry one (whose piece counting no test proves).
    `progress` is called with each file's path once it is checked, `step` with a line saying
    what is being done before each stage (tokenizers, files, loading).
    """
    say = step or (lambda text: None)
    out = Path(out)
    manifest = load_manifest(out)
    report = VerifyReport(out)
    report.problems += manifest_problems(out, manifest)
    report.problems += published_problems(out, manifest)  # the card's, ...
    say(f"loading the tokenizers of {len(manifest.configs())} config(s)")
    toks: dict[str, Any] = {}
    for config in manifest.configs():
        toks[config], problems = tokenizer_for(config, manifest.builds[config],
                                               tokenizers or {}, tokenizers_dir)
        report.problems += problems
    # The generators also give QA rows' gold documents, so they exist even without
    # `regenerate`; they load sources only when a check needs them.
    variants = {config: variant_from_record(build.variant)
                for config, build in manifest.builds.items()}
    checks = FileChecks(out, manifest.builds, toks, variants, full, sample, regenerate,
                        Regenerator(manifest.builds, toks, sources_dir), full_unpinned)
    # Most tokens first, so the workers finish together; results are reported in path order.
    jobs = sorted(manifest.files.items(), key=lambda kv: -kv[1].max_seq_length * kv[1].rows)
    rebuilt = f", up to {regenerate} row(s) of each rebuilt from the build's identity" \
        if regenerate else ""
    unpinned = sum(not build.tokenizer.pinned for build in manifest.builds.values()) \
        if full_unpinned and not full else 0
    unpinned_rows = f" (every row of {unpinned} config(s) with an unpinned tokenizer)" \
        if unpinned else ""
    say(f"checking {len(jobs)} file(s): hashes, schema, counts, "
        f"{'every row' if full else f'up to {sample} row(s) of each'} re-tokenized"
        f"{unpinned_rows}{rebuilt}")
    pool = None
    if workers > 1 and len(jobs) > 1:
        mp = multiprocessing.get_context(start_method or default_start_method())
        pool = mp.Pool(workers, initializer=_init_pool_process, initargs=(checks,))
    try:
        results = pool.imap_unordered(_check_in_pool, jobs) if pool else map(checks, jobs)
        for res in results:
            if progress:
                progress(res.path)
            report.files.append(res)
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
    report.files.sort(key=lambda r: r.path)
    if load:
        say("loading every config and split with datasets.load_dataset")
        report.loads = check_loading(out, manifest)
    return report
