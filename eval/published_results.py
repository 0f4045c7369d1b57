"""Published RULER results as data: a registry of what papers, READMEs and issue threads report,
each number with where it was taken from.

The registry is the JSON files of `ruler/eval/published/` (package data), one file per source,
validated on load against `published/schema.json` (JSON Schema; format `ruler-published/1`);
a user's own files in the same format (`--reference-file`) extend it. A file names its source
exactly (URL, or repository + path + commit, and a date) and the set-up of the runs behind it
(who reported them, prompt mode, template, samples per task, decoding, what was averaged) in
`defaults`, which an entry may override. An entry gives a model's per-length scores (the mean
over the 13 tasks), Avg., wAvg. (inc/dec), claimed and effective length as the source writes
them, and per-task scores where the source has them. A value the source leaves empty or marks
as not run is null; nothing is filled in. Where an entry gives every task of a length but not
the length's mean, the mean is derived (the plain mean of the 13, as RULER averages) and says so.

The packaged numbers are checked by tests against the source text they were taken from
(tests/eval/test_published_results.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

from ruler.catalog.benchmarks import BENCHMARK_SPECS
from ruler.kernel.errors import RulerError

FORMAT = "ruler-published/1"
SCHEMA_NAME = "schema.json"
#: The fields of an entry's set-up that a file's `defaults` may give for all its entries.
SETUP_FIELDS = ("reported_by", "mode", "template", "samples_per_task", "samples_source",
                "decoding", "averaged", "notes")


@dataclass(frozen=True)
class Source:
    title: str
    date: str
    url: str | None = None
    repo: str | None = None
    path: str | None = None
    commit: str | None = None
    version: str | None = None
    format: str | None = None

    def cite(self) -> str:
        """One line: where the numbers come from."""
        where = self.url or f"{self.repo}:{self.path}"
        at = f" @ {self.commit}" if self.commit and (
            self.url is None or self.url and self.commit not in self.url) else ""
        return f"{self.title} ({where}{at}, {self.date})"


@dataclass(frozen=True)
class EffectiveLength:
    """An effective length as a source writes it: ">128K" (above the threshold at every length
    measured, the longest being 128K), "<4K" (below it already at 4K), or "32K"."""

    label: str
    length: int | None  # the longest passing length; None: fails at the shortest
    beyond: bool = False  # ">": passes at every length measured, `length` the longest of them


_LENGTH = re.compile(r"^\s*([<>]?)\s*(\d+)\s*([KkMm]?)\s*$")


def parse_length_label(label: str) -> EffectiveLength | None:
    """"64K" -> 65536; ">128k" -> 131072, beyond; "<4K" -> None passing; "" -> None."""
    m = _LENGTH.match(label or "")
    if not m:
        return None
    sign, n, unit = m.groups()
    value = int(n) * {"": 1, "k": 1024, "m": 1 << 20}[unit.lower()]
    if sign == "<":
        return EffectiveLength(label, None)
    return EffectiveLength(label, value, beyond=sign == ">")


@dataclass(frozen=True)
class PublishedResult:
    """One model's published RULER numbers, with their source and set-up."""

    name: str
    model: str
    model_ids: tuple[str, ...]
    benchmark: str
    source: Source
    origin: str  # the registry file it was read from
    scores: dict[int, float | None] = field(default_factory=dict)
    tasks: dict[str, dict[int, float | None]] = field(default_factory=dict)
    avg: float | None = None
    wavg_inc: float | None = None
    wavg_dec: float | None = None
    claimed_length: str | None = None
    effective_length: str | None = None
    link: str | None = None
    reported_by: str | None = None
    mode: str | None = None
    template: str | None = None
    samples_per_task: int | None = None
    samples_source: str | None = None
    decoding: str | None = None
    averaged: str | None = None
    notes: str | None = None

    @property
    def lengths(self) -> list[int]:
        """Every length the entry gives a number for (per length or per task)."""
        found = {L for L, v in self.scores.items() if v is not None}
        found |= {L for by in self.tasks.values() for L, v in by.items() if v is not None}
        return sorted(found)

    def score(self, L: int) -> tuple[float | None, bool]:
        """The published mean over its benchmark's tasks at L, and whether it is derived (the
        plain mean of the entry's task scores at L, where the source gives those only)."""
        value = self.scores.get(L)
        if value is not None:
            return value, False
        tasks = benchmark_tasks(self.benchmark)
        per_task = [v for t in tasks if (v := self.tasks.get(t, {}).get(L)) is not None]
        if len(per_task) == len(tasks):
            return sum(per_task) / len(per_task), True
        return None, False

    def task_score(self, task: str, L: int) -> float | None:
        return self.tasks.get(task, {}).get(L)

    @property
    def effective(self) -> EffectiveLength | None:
        return parse_length_label(self.effective_length) if self.effective_length else None

    def matches_model(self, model: str | None) -> bool:
        """Whether a run's model (a Hub id, a folder, a served name) is this entry's: the last
        path component, case-insensitively, equals that of one of the entry's model ids."""
        if not model:
            return False
        mine = _model_key(model)
        return any(_model_key(m) == mine for m in self.model_ids)

    def setup_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in SETUP_FIELDS}

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model, "model_ids": list(self.model_ids),
                "benchmark": self.benchmark, "source": vars(self.source), "origin": self.origin,
                "claimed_length": self.claimed_length, "effective_length": self.effective_length,
                "scores": {str(L): v for L, v in self.scores.items()},
                "avg": self.avg, "wavg_inc": self.wavg_inc, "wavg_dec": self.wavg_dec,
                "tasks": {t: {str(L): v for L, v in by.items()} for t, by in self.tasks.items()},
                **self.setup_json()}


def _model_key(model: str) -> str:
    return model.rstrip("/").rsplit("/", 1)[-1].strip().lower()


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return json.loads(resources.files("ruler.eval").joinpath("published").joinpath(SCHEMA_NAME)
                      .read_text(encoding="utf-8"))


def _by_length(values: Mapping[str, Any] | None) -> dict[int, float | None]:
    return {int(L): (None if v is None else float(v)) for L, v in (values or {}).items()}


def parse_file(doc: Any, origin: str) -> list[PublishedResult]:
    """The entries of one registry file's JSON, after checking it against the schema; a
    RulerError naming the file and the first problem otherwise."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise RulerError(f"{origin} is not a published-results file ({FORMAT}): at {where}: "
                         f"{error.message[:200]}")
    source = Source(**doc["source"])
    defaults = doc.get("defaults") or {}
    out = []
    for e in doc["entries"]:
        setup = {k: e.get(k, defaults.get(k)) for k in SETUP_FIELDS}
        known = benchmark_tasks(doc["benchmark"])
        unknown = sorted(set(e.get("tasks") or {}) - set(known)) if known else []
        if unknown:
            raise RulerError(f"{origin}: entry {e['name']!r} names task(s) "
                             f"{benchmark_name(doc['benchmark'])} does not have: "
                             f"{', '.join(unknown)}")
        out.append(PublishedResult(
            name=e["name"], model=e["model"], model_ids=tuple(e["model_ids"]),
            benchmark=doc["benchmark"], source=source, origin=origin,
            scores=_by_length(e.get("scores")),
            tasks={t: _by_length(by) for t, by in (e.get("tasks") or {}).items()},
            **{k: e.get(k) for k in ("avg", "wavg_inc", "wavg_dec", "claimed_length",
                                     "effective_length", "link")}, **setup))
    return out


def read_file(path: str | Path) -> list[PublishedResult]:
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise RulerError(f"cannot read the published-results file {path}: "
                         f"{e.strerror or e}") from None
    except ValueError as e:
        raise RulerError(f"{path} is not JSON ({e})") from None
    return parse_file(doc, str(path))


def packaged_files() -> list[Any]:
    folder = resources.files("ruler.eval").joinpath("published")
    return sorted((f for f in folder.iterdir() if f.name.endswith(".json")
                   and f.name != SCHEMA_NAME), key=lambda f: f.name)


@dataclass
class Registry:
    entries: dict[str, PublishedResult]

    def find(self, query: str) -> PublishedResult:
        """The entry named `query`; else the one entry whose name ends in `/query`, or whose
        model id is `query` (case-insensitive). A RulerError naming candidates otherwise."""
        if query in self.entries:
            return self.entries[query]
        q = query.strip().lower()
        hits = [e for e in self.entries.values()
                if e.name.lower().endswith("/" + q) or e.name.lower() == q
                or any(m.lower() == q for m in e.model_ids)]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            hits = [e for e in self.entries.values()
                    if q in e.name.lower() or q in e.model.lower()]
            shown = ", ".join(e.name for e in hits[:8]) if hits else \
                "none (list them with `ruler published`)"
            raise RulerError(f"no published result named {query!r}; names that contain it: "
                             f"{shown}")
        raise RulerError(f"{query!r} names {len(hits)} published results: "
                         f"{', '.join(e.name for e in hits)}: give the full name")

    def for_model(self, model: str | None, benchmark: str = "ruler") -> list[PublishedResult]:
        return [e for e in self.entries.values()
                if e.benchmark == benchmark and e.matches_model(model)]

    def search(self, text: str | None = None) -> list[PublishedResult]:
        q = (text or "").lower()
        return [e for e in self.entries.values()
                if not q or q in e.name.lower() or q in e.model.lower()
                or any(q in m.lower() for m in e.model_ids)]


def load_registry(extra_files: Iterable[str | Path] = ()) -> Registry:
    """The packaged results and a user's own files; an entry name given twice is refused."""
    entries: dict[str, PublishedResult] = {}
    parts: list[list[PublishedResult]] = [
        parse_file(json.loads(f.read_text(encoding="utf-8")), f"ruler/eval/published/{f.name}")
        for f in packaged_files()]
    parts += [read_file(p) for p in extra_files]
    for part in parts:
        for e in part:
            if e.name in entries:
                raise RulerError(f"published result {e.name!r} is in both "
                                 f"{entries[e.name].origin} and {e.origin}: rename one")
            entries[e.name] = e
    return Registry(entries)


def benchmark_tasks(benchmark: str) -> tuple[str, ...]:
    """The tasks of a published result's benchmark (none for one not installed)."""
    spec = BENCHMARK_SPECS.get(benchmark)
    return spec.tasks if spec is not None else ()


def benchmark_name(benchmark: str) -> str:
    """A published result's benchmark as people say it (its title; the id of one not
    installed)."""
    spec = BENCHMARK_SPECS.get(benchmark)
    return spec.title if spec is not None else benchmark
