"""The record `ruler sources fetch essays` writes beside the corpus it assembled.

It lists every essay of the download with its length and sha256 and whether it equals the
pinned corpus's text at its place, differs, or is missing (its download failed), the URL its
bytes finally came from (after redirects), with the versions of the packages that shaped the
text. `ruler sources list`, a build's manifest and the
dataset card read it to say why a fetched corpus is not the pinned one.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ruler.kernel.mirror import mirrored

SAME, DIFFERS, MISSING = "same", "differs", "missing"
NAMES_SHOWN = 12  # in one-line summaries; the record itself names every essay


@dataclass(frozen=True)
class FetchedEssay:
    """One essay of a download: what it gave, and how that compares with the pinned text."""

    name: str
    url: str
    status: str  # SAME, DIFFERS or MISSING
    chars: int | None = None
    sha256: str | None = None
    error: str | None = None  # why the download failed (MISSING)
    final_url: str | None = None  # where the bytes came from, after redirects (None: none came)


@dataclass(frozen=True)
class EssayFetchRecord:
    corpus_sha256: str
    official: bool
    essays: tuple[FetchedEssay, ...]
    packages: dict[str, str] = field(default_factory=dict)  # html2text, beautifulsoup4, python
    mirror: str | None = None

    def named(self, status: str) -> list[str]:
        return [e.name for e in self.essays if e.status == status]

    def redirected(self) -> list[FetchedEssay]:
        """The essays whose bytes came from another host than the one asked (the mirror's,
        with one)."""
        return [e for e in self.essays if e.final_url is not None
                and _host(e.final_url) != _host(mirrored(e.url, self.mirror))]

    def summary(self) -> str:
        """One line: how the download compares with the pinned corpus, naming the essays."""
        tools = ", ".join(f"{p} {v}" for p, v in sorted(self.packages.items()))
        head = f"fetched with upstream's scraper procedure ({tools})"
        if self.official:
            return f"{head}: identical to the pinned corpus"
        parts = []
        for status, what in ((DIFFERS, "differ from the pinned corpus"),
                             (MISSING, "missing (download failed)")):
            names = self.named(status)
            if names:
                shown = ", ".join(names[:NAMES_SHOWN])
                more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
                parts.append(f"{len(names)} of {len(self.essays)} essays {what}: {shown}{more}")
        if not parts:  # every essay equal, yet other bytes: the joining itself differs
            parts.append("every essay equals the pinned text, but the file's bytes differ")
        return f"{head}: " + "; ".join(parts)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> EssayFetchRecord:
        d = json.loads(text)
        return cls(d["corpus_sha256"], bool(d["official"]),
                   tuple(FetchedEssay(**e) for e in d["essays"]),
                   dict(d.get("packages") or {}), d.get("mirror"))


def _host(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc.lower()


def record_path(corpus: Path) -> Path:
    """`PaulGrahamEssays.json` -> `PaulGrahamEssays.fetch.json`, beside it."""
    return corpus.with_name(corpus.stem + ".fetch.json")


def read_record(corpus: Path, corpus_sha256: str) -> EssayFetchRecord | None:
    """The fetch record beside `corpus` if it describes these bytes; None when there is none,
    it cannot be read, or it belongs to other bytes (the corpus was replaced since)."""
    try:
        record = EssayFetchRecord.from_json(record_path(corpus).read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record if record.corpus_sha256 == corpus_sha256 else None
