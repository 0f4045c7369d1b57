"""`ruler verify OUT`: prove a build folder is what its manifest says, and loads.

Checks, per split file listed in `manifest.json`:
  bytes   - the file exists and its size and sha256 equal the manifest's;
  content - it reads as Parquet with exactly ROW_SCHEMA, the manifest's row count and the
            manifest's row-content hash;
  rows    - every row belongs to the file's (config, task, L), `index` runs 0..N-1, budgets and
            metric equal the task catalog, and `length <= L`;
  tokens  - a sample of rows (every row with `full=True`) re-tokenized with the build's
            tokenizer gives exactly the stored `length`;
  answers - each row's `outputs` can be read off its `input` (`builder.tasks.checks`).
Folder-wide: no Parquet file outside the manifest, each build entry agrees with its files and
its `official` flag with its tokenizer and sources, the tokenizer loaded here is the recorded
one, the card's `configs` equal the manifest's, and `datasets.load_dataset` reads every config
and split with the expected row counts.

Every problem names the file (and row). Problems are collected, not raised, so one run reports
all of them; a folder that cannot be verified at all (no manifest) raises RulerError.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pyarrow.parquet as pq
import yaml

from builder.errors import RulerError
from builder.manifest import MANIFEST_NAME, FORMAT_VERSION, content_sha256_rows, data_path
from builder.schema import ROW_SCHEMA
from builder.sources import file_sha256

DEFAULT_SAMPLE = 3  # rows re-tokenized per file without --full: first, middle, last


@dataclass(frozen=True)
class Problem:
    path: str            # file relative to OUT (or "manifest.json", "README.md", "config X")
    message: str
    row: int | None = None

    def __str__(self) -> str:
        where = self.path if self.row is None else f"{self.path} row {self.row}"
        return f"{where}: {self.message}"


@dataclass
class FileResult:
    path: str
    rows: int = 0
    bytes_ok: bool = False
    content_ok: bool = False
    rows_ok: bool = False
    retokenized: int = 0
    answers_ok: bool = False
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class LoadResult:
    config: str
    split: str
    rows: int | None
    expected: int
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.rows == self.expected


@dataclass
class VerifyReport:
    out: Path
    files: list[FileResult] = field(default_factory=list)
    loads: list[LoadResult] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # folder-wide ones

    def all_problems(self) -> list[Problem]:
        found = list(self.problems)
        for f in self.files:
            found += f.problems
        for load in self.loads:
            if not load.ok:
                found.append(Problem(f"config {load.config!r} split {load.split!r}",
                                     load.error or f"load_dataset gave {load.rows} rows, "
                                                   f"expected {load.expected}"))
        return found

    @property
    def ok(self) -> bool:
        return not self.all_problems()


# --- manifest ---------------------------------------------------------------------------------

def load_manifest(out: Path) -> dict[str, Any]:
    """The manifest, strictly: unlike `read_manifest`, a missing one is an error here."""
    path = out / MANIFEST_NAME
    if not out.is_dir():
        raise RulerError(f"{out} is not a folder")
    if not path.is_file():
        raise RulerError(f"{path} not found: {out} is not a `ruler build` output folder")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise RulerError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format_version") != FORMAT_VERSION:
        raise RulerError(f"{path}: unsupported format_version "
                         f"{manifest.get('format_version') if isinstance(manifest, dict) else None!r}"
                         f" (this ruler reads {FORMAT_VERSION})")
    for key in ("builds", "files"):
        if not isinstance(manifest.get(key), dict):
            raise RulerError(f"{path}: missing or malformed {key!r}")
    # Structure first, so every later check can index entries without guarding each access.
    for rel, entry in manifest["files"].items():
        wrong = [k for k, t in _FILE_FIELDS.items()
                 if not isinstance(entry, dict) or not isinstance(entry.get(k), t)
                 or isinstance(entry.get(k), bool)]
        if wrong:
            raise RulerError(f"{path}: entry {rel!r} has missing or malformed {', '.join(wrong)}")
    for config, build in manifest["builds"].items():
        if not isinstance(build, dict) or not isinstance(build.get("tokenizer"), dict):
            raise RulerError(f"{path}: build {config!r} has no tokenizer record")
    return manifest


_FILE_FIELDS = {"config": str, "task": str, "max_seq_length": int, "rows": int, "bytes": int,
                "sha256": str, "content_sha256": str}


def _manifest_problems(out: Path, manifest: Mapping[str, Any]) -> list[Problem]:
    problems = []
    listed = set(manifest["files"])
    on_disk = {p.relative_to(out).as_posix() for p in out.glob("data/**/*.parquet")}
    for rel in sorted(on_disk - listed):
        problems.append(Problem(rel, "Parquet file not listed in manifest.json"))
    for rel, entry in sorted(manifest["files"].items()):
        expected = data_path(entry["config"], entry["task"], entry["max_seq_length"])
        if expected != rel:
            problems.append(Problem(MANIFEST_NAME, f"entry {rel!r} says config/task/length "
                                                   f"of {expected!r}"))
        if entry["config"] not in manifest["builds"]:
            problems.append(Problem(MANIFEST_NAME, f"{rel!r} belongs to config "
                                                   f"{entry['config']!r}, which has no build"))
    for config, build in sorted(manifest["builds"].items()):
        problems += _build_problems(config, build, manifest["files"])
    return problems


def _build_problems(config: str, build: Mapping[str, Any],
                    files: Mapping[str, Mapping[str, Any]]) -> list[Problem]:
    """A build entry must agree with its files and with itself: `ruler release` trusts its
    `official` flag, so a hand-edited flag must not pass."""
    where = f"{MANIFEST_NAME} build {config!r}"
    problems = []
    mine = [f for f in files.values() if f.get("config") == config]
    tasks = {f["task"] for f in mine}
    lengths = sorted({f["max_seq_length"] for f in mine})
    if set(build.get("tasks", [])) != tasks or sorted(build.get("lengths", [])) != lengths:
        problems.append(Problem(where, f"lists tasks {build.get('tasks')} and lengths "
                                       f"{build.get('lengths')}, its files have "
                                       f"{sorted(tasks)} and {lengths}"))
    sources = build.get("sources", {})
    for sid, s in sorted(sources.items()):
        if bool(s.get("official")) != (s.get("sha256") == s.get("official_sha256")):
            problems.append(Problem(where, f"source {sid!r}: `official` disagrees with its "
                                           f"sha256 and official_sha256"))
    official = bool(build.get("tokenizer", {}).get("pinned")) and all(
        s.get("official") and s.get("sha256") == s.get("official_sha256")
        for s in sources.values())
    if bool(build.get("official")) != official:
        problems.append(Problem(where, f"`official` is {build.get('official')}, but tokenizer "
                                       f"pinned and official sources give {official}"))
    return problems


def _card_problems(out: Path, manifest: Mapping[str, Any]) -> list[Problem]:
    """The card's `configs` must be exactly those the manifest implies (load_dataset reads them)."""
    from cards.render import configs_yaml

    path = out / "README.md"
    if not path.is_file():
        return [Problem("README.md", "missing (the dataset card holds the configs)")]
    text = path.read_text(encoding="utf-8")
    parts = text.split("---\n", 2)
    if not text.startswith("---\n") or len(parts) < 3:
        return [Problem("README.md", "no YAML front matter")]
    try:
        front = yaml.safe_load(parts[1]) or {}
    except yaml.YAMLError as e:
        return [Problem("README.md", f"YAML front matter does not parse: {e}")]
    if front.get("configs") != configs_yaml(manifest):
        return [Problem("README.md", "`configs` do not match manifest.json "
                                     "(rewrite the card: it is rendered by `ruler build`)")]
    return []


# --- one split file ----------------------------------------------------------------------------

def _sample_indices(n: int, full: bool, sample: int) -> set[int]:
    if full or n <= sample:
        return set(range(n))
    # evenly spaced, always including the first and the last row; deterministic
    return {round(i * (n - 1) / max(1, sample - 1)) for i in range(sample)}


class RowChecker:
    """Every per-row check of one file, applied as rows stream past (constant memory)."""

    def __init__(self, res: FileResult, entry: Mapping[str, Any], tokenizer, mode: str | None,
                 retokenize: set[int]):
        from builder.tasks.catalog import TASKS

        self.res, self.tokenizer, self.mode, self.retokenize = res, tokenizer, mode, retokenize
        spec = TASKS.get(entry["task"])
        self.expected = {"tokenizer": entry["config"], "task": entry["task"],
                         "max_seq_length": entry["max_seq_length"]}
        if spec is not None:
            self.expected.update(tokens_to_generate=spec.tokens_to_generate, metric=spec.metric)
        else:
            res.problems.append(Problem(res.path, f"unknown task {entry['task']!r}"))
        self.L = entry["max_seq_length"]
        self.fields_ok = self.answers_ok = spec is not None

    def __call__(self, i: int, row: dict) -> None:
        from builder.tasks.checks import check_row

        path = self.res.path
        wrong = [f"{k}={row[k]!r} (expected {v!r})"
                 for k, v in (*self.expected.items(), ("index", i)) if row[k] != v]
        if row["length"] > self.L:
            wrong.append(f"length {row['length']} > L = {self.L}")
        if wrong:
            self.fields_ok = False
            self.res.problems.append(Problem(path, "; ".join(wrong), row=i))
            return  # a row of the wrong task would only add confusing answer findings
        try:
            why = check_row(row)
        except Exception as e:  # a malformed row must be reported, not crash the run
            why = f"answer check failed: {type(e).__name__}: {e}"
        if why:
            self.answers_ok = False
            self.res.problems.append(Problem(path, f"answer not recoverable: {why}", row=i))
        if self.tokenizer is not None and self.mode is not None and i in self.retokenize:
            got = self.tokenizer.prompt_length(row["input"], row["answer_prefix"],
                                               mode=self.mode) + row["tokens_to_generate"]
            self.res.retokenized += 1
            if got != row["length"]:
                self.res.problems.append(Problem(path, f"stored length {row['length']}, "
                                                       f"re-tokenized {got}", row=i))


def verify_file(out: Path, rel: str, entry: Mapping[str, Any], tokenizer, mode: str | None,
                full: bool = False, sample: int = DEFAULT_SAMPLE) -> FileResult:
    res = FileResult(rel)
    path = out / rel
    if not path.is_file():
        res.problems.append(Problem(rel, "missing (listed in manifest.json)"))
        return res
    size, digest = path.stat().st_size, file_sha256(path)
    if size != entry.get("bytes") or digest != entry.get("sha256"):
        res.problems.append(Problem(rel, f"file bytes differ from manifest.json ({size} bytes, "
                                         f"sha256 {digest}; manifest: {entry.get('bytes')} "
                                         f"bytes, sha256 {entry.get('sha256')})"))
    else:
        res.bytes_ok = True
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
    except Exception as e:  # pyarrow raises several types for corrupt or truncated files
        res.problems.append(Problem(rel, f"not readable as Parquet: {type(e).__name__}: {e}"))
        return res
    if not schema.remove_metadata().equals(ROW_SCHEMA):
        res.problems.append(Problem(rel, f"schema differs from ROW_SCHEMA: {schema}"))
        return res
    n = parquet.metadata.num_rows
    check = RowChecker(res, entry, tokenizer, mode, _sample_indices(n, full, sample))

    def rows():
        i = 0
        for batch in parquet.iter_batches(batch_size=64):
            for row in batch.to_pylist():
                check(i, row)
                i += 1
                yield row
        res.rows = i

    try:
        # one pass: the content hash (builder.manifest's definition) and every row check
        content = content_sha256_rows(rows())
    except Exception as e:
        res.problems.append(Problem(rel, f"not readable as Parquet: {type(e).__name__}: {e}"))
        return res
    if res.rows != entry.get("rows"):
        res.problems.append(Problem(rel, f"{res.rows} rows, manifest.json says "
                                         f"{entry.get('rows')}"))
    if content != entry.get("content_sha256"):
        res.problems.append(Problem(rel, "row content differs from manifest.json "
                                         "(content_sha256)"))
    res.content_ok = res.rows == entry.get("rows") and content == entry.get("content_sha256")
    res.rows_ok, res.answers_ok = check.fields_ok, check.answers_ok
    return res


# --- tokenizers ---------------------------------------------------------------------------------

def _tokenizer_for(config: str, build: Mapping[str, Any], overrides: Mapping[str, str],
                   tokenizers_dir: str | None) -> tuple[Any, list[Problem]]:
    """The build's tokenizer, checked to be the one the manifest records."""
    from builder.tokenizer_registry import load_tokenizer

    recorded = build.get("tokenizer", {})
    name = overrides.get(config) or recorded.get("name")
    where = f"config {config!r}"
    if not name:
        return None, [Problem(where, "manifest.json records no tokenizer name")]
    try:
        tok = load_tokenizer(name, tokenizers_dir)
    except RulerError as e:
        return None, [Problem(where, f"cannot load tokenizer {name!r} to re-count lengths: {e} "
                                     f"(use --tokenizer {config}=PATH)")]
    ident = tok.identity
    if dict(ident.files) != dict(recorded.get("files", {})) \
            or ident.chat_template_sha256 != recorded.get("chat_template_sha256"):
        return None, [Problem(where, f"tokenizer {name!r} loaded here has other files or chat "
                                     f"template than the build recorded in manifest.json")]
    return tok, []


# --- load_dataset -------------------------------------------------------------------------------

def expected_splits(manifest: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    """(config name, split) -> rows, for every config the card declares."""
    expected: dict[tuple[str, str], int] = {}
    for entry in manifest["files"].values():
        c, t, L, n = entry["config"], entry["task"], str(entry["max_seq_length"]), entry["rows"]
        expected[(c, L)] = expected.get((c, L), 0) + n
        expected[(f"{c}--{t}", L)] = n
    return dict(sorted(expected.items()))


def check_loading(out: Path, manifest: Mapping[str, Any]) -> list[LoadResult]:
    """`load_dataset` every config and split, as a user would, into a throw-away cache."""
    import datasets

    results = []
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        with tempfile.TemporaryDirectory(prefix="ruler-verify-") as cache:
            for (config, split), n in expected_splits(manifest).items():
                try:
                    ds = datasets.load_dataset(str(out), config, split=split, cache_dir=cache)
                    results.append(LoadResult(config, split, ds.num_rows, n))
                except Exception as e:  # any loader failure is a finding, with its message
                    results.append(LoadResult(config, split, None, n,
                                              f"load_dataset failed: {type(e).__name__}: {e}"))
    finally:
        if bars:
            datasets.enable_progress_bars()
    return results


# --- the command ----------------------------------------------------------------------------

_POOL_STATE: dict[str, Any] = {}


def _verify_job(job: tuple[str, Mapping[str, Any]]) -> FileResult:
    rel, entry = job
    s = _POOL_STATE
    build = s["manifest"]["builds"].get(entry.get("config"), {})
    return verify_file(s["out"], rel, entry, s["toks"].get(entry.get("config")),
                       build.get("prompt_mode"), s["full"], s["sample"])


def verify(out: str | Path, *, full: bool = False, sample: int = DEFAULT_SAMPLE,
           tokenizers: Mapping[str, str] | None = None, tokenizers_dir: str | None = None,
           load: bool = True, progress: Callable[[str], None] | None = None,
           workers: int = 1) -> VerifyReport:
    out = Path(out)
    manifest = load_manifest(out)
    report = VerifyReport(out)
    report.problems += _manifest_problems(out, manifest)
    report.problems += _card_problems(out, manifest)
    toks: dict[str, Any] = {}
    for config in sorted(manifest["builds"]):
        toks[config], problems = _tokenizer_for(config, manifest["builds"][config],
                                                tokenizers or {}, tokenizers_dir)
        report.problems += problems
    _POOL_STATE.update(out=out, manifest=manifest, toks=toks, full=full, sample=sample)
    # Most tokens first, so the workers finish together; results are reported in path order.
    jobs = sorted(manifest["files"].items(),
                  key=lambda kv: -int(kv[1].get("max_seq_length") or 0) * int(kv[1].get("rows") or 0))
    pool = (multiprocessing.get_context("fork").Pool(workers)  # workers share the tokenizers
            if workers > 1 and len(jobs) > 1 else None)
    try:
        results = pool.imap_unordered(_verify_job, jobs) if pool else map(_verify_job, jobs)
        for res in results:
            if progress:
                progress(res.path)
            report.files.append(res)
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        _POOL_STATE.clear()
    report.files.sort(key=lambda r: r.path)
    if load:
        report.loads = check_loading(out, manifest)
    return report


def _mark(flag: bool) -> str:
    return "ok" if flag else "FAIL"


def format_report(report: VerifyReport) -> str:
    lines = [f"{'file':<52} {'rows':>6} {'bytes':>5} {'content':>7} {'rows':>5} "
             f"{'tokens':>6} {'answers':>7}"]
    for f in report.files:
        lines.append(f"{f.path:<52} {f.rows:>6} {_mark(f.bytes_ok):>5} {_mark(f.content_ok):>7} "
                     f"{_mark(f.rows_ok):>5} {f.retokenized:>6} {_mark(f.answers_ok):>7}")
    if report.loads:
        lines += ["", f"{'load_dataset config':<52} {'split':>8} {'rows':>6} {'status':>6}"]
        for load in report.loads:
            lines.append(f"{load.config:<52} {load.split:>8} "
                         f"{'-' if load.rows is None else load.rows:>6} {_mark(load.ok):>6}")
    problems = report.all_problems()
    lines.append("")
    if problems:
        lines.append(f"FAILED: {len(problems)} problem(s)")
        lines += [f"  {p}" for p in problems]
    else:
        rows = sum(f.rows for f in report.files)
        lines.append(f"OK: {len(report.files)} files, {rows} rows, {len(report.loads)} "
                     f"config/split loads verified")
    return "\n".join(lines)


def parse_overrides(items: Sequence[str]) -> dict[str, str]:
    overrides = {}
    for item in items:
        config, sep, path = item.partition("=")
        if not sep or not config or not path:
            raise RulerError(f"--tokenizer expects CONFIG=PATH, got {item!r}")
        overrides[config] = path
    return overrides


def register_cli(subparsers) -> None:
    p = subparsers.add_parser(
        "verify", help="check a build folder against its manifest and load every split",
        description="Recompute every file's hashes against manifest.json, check schema, row "
                    "counts, lengths (re-tokenizing a sample of rows, or all with --full) and "
                    "that answers are recoverable, and load every config and split with "
                    "datasets.load_dataset. Exit status 1 on any problem.")
    p.add_argument("out", help="the build folder (holds manifest.json)")
    p.add_argument("--full", action="store_true", help="re-tokenize every row, not a sample")
    p.add_argument("--sample", type=int, default=DEFAULT_SAMPLE,
                   help=f"rows re-tokenized per file without --full (default {DEFAULT_SAMPLE})")
    p.add_argument("--tokenizer", action="append", default=[], metavar="CONFIG=PATH",
                   help="load CONFIG's tokenizer from PATH (a folder or registry name)")
    p.add_argument("--tokenizers-dir", default=None,
                   help="folder of tokenizer folders (default: $RULER_TOKENIZERS)")
    p.add_argument("--no-load", action="store_true", help="skip the load_dataset check")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="processes checking files in parallel (default: all cores)")
    p.set_defaults(func=run_cli)


def run_cli(args) -> int:
    if args.sample < 1:
        raise RulerError(f"--sample must be >= 1, got {args.sample}")
    if args.workers < 1:
        raise RulerError(f"--workers must be >= 1, got {args.workers}")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # we parallelise by process
    report = verify(args.out, full=args.full, sample=args.sample,
                    tokenizers=parse_overrides(args.tokenizer),
                    tokenizers_dir=args.tokenizers_dir, load=not args.no_load,
                    workers=args.workers)
    print(format_report(report))
    return 0 if report.ok else 1
