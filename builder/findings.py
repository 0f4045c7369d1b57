"""What `ruler verify` finds: problems (each naming its file and row) and per-file results."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

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
class FileReport:
    """What verify found in one split file (the build's own `FileResult` is what building
    or keeping a file gave)."""

    path: str
    rows: int = 0
    bytes_ok: bool = False
    content_ok: bool = False
    rows_ok: bool = False
    retokenized: int = 0
    answers_ok: bool = False
    gold_checked: int = 0  # rows whose gold positions and depths were re-derived
    regenerated: int = 0  # rows rebuilt from the manifest's identity and compared
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # checks that could not run here, and why

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
    files: list[FileReport] = field(default_factory=list)
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
