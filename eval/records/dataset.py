"""The evaluated dataset: a local build folder or a Hub dataset, read through its manifest.

Both forms end up as the same thing: a folder with `manifest.json` and
`data/<config>/<task>/<L>.parquet`. For a Hub id only the manifest and the selected split
files are fetched, at the requested revision, so the rows are byte-for-byte the files the
manifest describes (what `datasets.load_dataset(repo, config, split=str(L), revision=...)`
would read), and each file's `content_sha256` fingerprints the rows a result came from: a
results folder scored against other rows is detected instead of silently mixed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import pyarrow.parquet as pq

from ruler.builder.manifest import MANIFEST_NAME, BuildEntry, Manifest, check_split_files, data_path
from ruler.catalog.benchmarks import recorded_length_rule
from ruler.kernel.errors import RulerError
from ruler.kernel.hashing import file_sha256

_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


@dataclass(frozen=True)
class SplitFile:
    """One (config, task, L) file of the dataset and its content fingerprint."""

    config: str
    task: str
    max_seq_length: int
    path: Path
    content_sha256: str
    rows: int
    # How its rows' `length` counts (catalog.length_rules), as the manifest records it
    length_rule: str

    @property
    def key(self) -> str:
        return f"{self.task}/{self.max_seq_length}"


@dataclass(frozen=True)
class Dataset:
    spec: str  # what the user passed: a folder or ORG/NAME
    revision: str | None
    root: Path
    manifest: Manifest
    # files whose bytes were checked against the manifest (each is hashed once per run)
    _checked: set = field(default_factory=set, compare=False, repr=False)

    @property
    def configs(self) -> list[str]:
        return self.manifest.configs()

    def build(self, config: str) -> BuildEntry:
        build = self.manifest.build(config)
        if build is None:
            raise RulerError(f"dataset {self.spec} has no tokenizer config {config!r}; it has: "
                             f"{', '.join(self.configs) or 'none'}")
        return build

    def files(self, config: str, tasks: Sequence[str] | None = None,
              lengths: Sequence[int] | None = None) -> list[SplitFile]:
        """The split files of a config, filtered; an asked-for task or length that is absent
        is an error (a typo must not turn into an empty, perfect-looking run)."""
        self.build(config)
        have_tasks = set(self.manifest.tasks(config))
        have_lengths = set(self.manifest.lengths(config))
        for t in tasks or ():
            if t not in have_tasks:
                raise RulerError(f"dataset {self.spec} config {config!r} has no task {t!r}; it "
                                 f"has: {', '.join(sorted(have_tasks))}")
        for L in lengths or ():
            if int(L) not in have_lengths:
                raise RulerError(f"dataset {self.spec} config {config!r} has no length {L}; it "
                                 f"has: {', '.join(map(str, sorted(have_lengths)))}")
        # by length, then in upstream's task order (files_of's order within a length)
        entries = sorted(self.manifest.files_of(config, tasks or None, lengths or None),
                         key=lambda e: e.max_seq_length)
        benchmark = self.build(config).benchmark_id
        return [SplitFile(config, e.task, e.max_seq_length, self.root / e.path,
                          e.content_sha256, e.rows,
                          recorded_length_rule(e.length_rule, benchmark)) for e in entries]

    def rows(self, f: SplitFile, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The rows of one split file (optionally only some columns), after checking its
        bytes against the manifest."""
        self._check(f)
        return pq.read_table(f.path, columns=list(columns) if columns else None).to_pylist()

    def iter_rows(self, f: SplitFile, columns: Sequence[str],
                  batch_size: int) -> Iterator[list[dict[str, Any]]]:
        """The rows of one split file in batches of `batch_size`, reading only `columns`:
        the file is never held whole (a 128K file holds ~300 MB of text)."""
        self._check(f)
        parquet = pq.ParquetFile(f.path)
        for batch in parquet.iter_batches(batch_size=batch_size, columns=list(columns)):
            yield batch.to_pylist()

    def _check(self, f: SplitFile) -> None:
        if f.path in self._checked:
            return
        entry = self.manifest.files[data_path(f.config, f.task, f.max_seq_length)]
        if not f.path.is_file():
            raise RulerError(f"{f.path} is listed in the manifest of {self.spec} but missing")
        if file_sha256(f.path) != entry.sha256:
            raise RulerError(f"{f.path} differs from the manifest of {self.spec} (sha256): the "
                             f"file was changed after the build; rebuild or re-download it")
        self._checked.add(f.path)


def default_config(ds: Dataset) -> str:
    """The config to use when none is named: the dataset's only one; with several, which one
    is meant is the user's to say (the error lists them)."""
    return _only_config(ds.spec, ds.manifest)


def _only_config(spec: str, manifest: Manifest) -> str:
    configs = manifest.configs()
    if len(configs) == 1:
        return configs[0]
    if not configs:
        raise RulerError(f"dataset {spec} has no tokenizer config")
    raise RulerError(f"dataset {spec} has {len(configs)} tokenizer configs "
                     f"({', '.join(configs)}): choose one with --tokenizer-config")


def open_dataset(spec: str, revision: str | None = None, config: str | None = None,
                 tasks: Iterable[str] | None = None,
                 lengths: Iterable[int] | None = None, one_config: bool = False) -> Dataset:
    """Open a build folder, or fetch a Hub dataset's manifest (+ the selected files: of
    `config`, of every config when it is None, or with `one_config` of the only config, see
    `default_config`, so that a Hub dataset of several is refused before any download)."""
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / MANIFEST_NAME).is_file():
            raise RulerError(f"{path} is not a ruler build: it has no {MANIFEST_NAME}")
        manifest = Manifest.load(path)  # checked: split files of known configs, tasks, lengths
        check_split_files(path, manifest.files)  # reached through no link below the folder
        return Dataset(spec, None, path, manifest)
    if _HUB_ID.match(spec):
        return _open_hub(spec, revision, config, list(tasks or ()), list(lengths or ()),
                         one_config)
    raise RulerError(f"--data {spec!r} is neither a build folder nor a Hub dataset id ORG/NAME")


def _open_hub(repo: str, revision: str | None, config: str | None, tasks: list[str],
              lengths: list[int], one_config: bool = False) -> Dataset:
    import json

    from huggingface_hub import HfApi, hf_hub_download, snapshot_download

    try:
        # Pin the commit once, so the manifest and the files come from the same revision.
        revision = HfApi().dataset_info(repo, revision=revision).sha
        manifest_file = hf_hub_download(repo, MANIFEST_NAME, repo_type="dataset",
                                        revision=revision)
        manifest = Manifest.from_json(
            json.loads(Path(manifest_file).read_text(encoding="utf-8")),
            f"{MANIFEST_NAME} of {repo}@{revision}")
        # The snapshot's files are links into huggingface_hub's own cache (its blobs), which
        # it made from these checked paths: they are not checked for links.
        if config is None and one_config:
            config = _only_config(repo, manifest)
        wanted = [f.path for c in ([config] if config is not None else manifest.configs())
                  for f in manifest.files_of(c, tasks or None, lengths or None)]
        root = Path(snapshot_download(repo, repo_type="dataset", revision=revision,
                                      allow_patterns=[MANIFEST_NAME, *wanted]))
    except RulerError:
        raise
    except Exception as e:  # network, auth, missing revision: one clear message
        raise RulerError(f"could not fetch dataset {repo}@{revision or 'main'} from the Hub: "
                         f"{type(e).__name__}: {e}") from None
    return Dataset(repo, revision, root, manifest)
