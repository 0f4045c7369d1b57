"""`verify(OUT)`: prove a build folder is what its manifest says, and loads.

Checks, per split file listed in `manifest.json`:
  bytes   - the file exists and its size and sha256 equal the manifest's;
  content - it reads as Parquet with exactly ROW_SCHEMA, the manifest's row count and the
            manifest's row-content hash;
  rows    - every row belongs to the file's (config, task, L), `index` runs 0..N-1, budgets and
            metric equal the task catalog, and `length <= L`;
  tokens  - a sample of rows (every row with `full=True`) re-tokenized with the build's
            tokenizer gives exactly the stored `length`;
  answers - each row's `outputs` can be read off its `input` (`ruler.builder.tasks.checks`).
Folder-wide: no Parquet file outside the manifest, each build entry agrees with its files and
its `official` flag with its tokenizer and sources, the tokenizer loaded here is the recorded
one, the card's `configs` equal the manifest's, and `datasets.load_dataset` reads every config
and split with the expected row counts.

Every problem names the file (and row). Problems are collected, not raised, so one run reports
all of them; a folder that cannot be verified at all (no manifest) raises RulerError.
"""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from ruler.builder.build.config import default_start_method
from ruler.builder.verify.findings import DEFAULT_SAMPLE, FileResult, VerifyReport
from ruler.builder.verify.folder import card_problems, load_manifest, manifest_problems
from ruler.builder.verify.loading import check_loading
from ruler.builder.verify.rows import verify_file
from ruler.builder.variants import reserved_output_budget
from ruler.builder.verify.tokenizers import tokenizer_for

@dataclass(frozen=True)
class FileChecks:
    """What checking one file needs besides its manifest entry: the same for every file, sent
    once to each pool process through the initializer (inherited by fork; pickled under
    spawn, tokenizers as load recipes)."""

    out: Path
    builds: Mapping[str, Any]
    tokenizers: Mapping[str, Any]  # config -> Tokenizer, or None where it did not load
    full: bool
    sample: int

    def __call__(self, job: tuple[str, Mapping[str, Any]]) -> FileResult:
        rel, entry = job
        config = entry.get("config")
        build = self.builds.get(config, {})
        return verify_file(self.out, rel, entry, self.tokenizers.get(config),
                           build.get("prompt_mode"), self.full, self.sample,
                           reserved_output_budget(build))


_checks: FileChecks | None = None  # set in pool processes only, by the initializer


def _init_pool_process(checks: FileChecks) -> None:
    global _checks
    _checks = checks


def _check_in_pool(job: tuple[str, Mapping[str, Any]]) -> FileResult:
    return _checks(job)


def verify(out: str | Path, *, full: bool = False, sample: int = DEFAULT_SAMPLE,
           tokenizers: Mapping[str, str] | None = None, tokenizers_dir: str | None = None,
           load: bool = True, progress: Callable[[str], None] | None = None,
           workers: int = 1, start_method: str | None = None) -> VerifyReport:
    """Verify the build folder `out`; see the module docstring for what is checked.

    `workers` > 1 checks files in that many processes (`start_method`: default fork where
    available, else spawn).
    """
    out = Path(out)
    manifest = load_manifest(out)
    report = VerifyReport(out)
    report.problems += manifest_problems(out, manifest)
    report.problems += card_problems(out, manifest)
    toks: dict[str, Any] = {}
    for config in sorted(manifest["builds"]):
        toks[config], problems = tokenizer_for(config, manifest["builds"][config],
                                               tokenizers or {}, tokenizers_dir)
        report.problems += problems
    checks = FileChecks(out, manifest["builds"], toks, full, sample)
    # Most tokens first, so the workers finish together; results are reported in path order.
    jobs = sorted(manifest["files"].items(),
                  key=lambda kv: -int(kv[1].get("max_seq_length") or 0)
                  * int(kv[1].get("rows") or 0))
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
        report.loads = check_loading(out, manifest)
    return report
