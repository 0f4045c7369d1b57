"""Temporary split files: how a build names them, and which ones a build that ended left.

A split file is written to `.<L>.parquet.<tag>.<random>.tmp` beside its final path and moved
into place when complete. The tag, `<host>-<pid>-<8 hex>`, names the machine and the process
of the build writing it (the driver: its workers die with it), so a later run can tell a
temporary file of a build that has ended (a `kill -9`, a power cut) from one of a build still
running into the same OUT, which must never be touched: builds of other tasks, lengths or
shards may run into one OUT at the same time. A tag without a host (written by ruler before
the host was added) is taken to be of this machine.

Only names of this exact shape, directly in `data/<config>/<task>/`, are ever considered; a
process that cannot be checked (another machine's, or a pid this user may not signal) counts
as running.
"""

from __future__ import annotations

import os
import re
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path

from ruler.kernel.lifeline import process_running

_TEMP_NAME = re.compile(r"^\.(?P<final>\d+\.parquet)\.(?:(?P<host>[A-Za-z0-9_.-]+)-)?"
                        r"(?P<pid>\d+)-[0-9a-f]{8}\.[A-Za-z0-9_]+\.tmp$")


def new_temp_tag() -> str:
    """The tag of this process's build: which machine and process write its files."""
    return f"{_host()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname()) or "localhost"


@dataclass(frozen=True)
class TempFile:
    """A temporary split file found under OUT/data/."""

    path: Path
    host: str | None  # None: a tag without a host (this machine)
    pid: int

    @property
    def final(self) -> Path:
        """The split file it was to become."""
        match = _TEMP_NAME.match(self.path.name)
        assert match is not None, "a TempFile is made of a temporary file's name only"
        return self.path.with_name(match["final"])

    @property
    def ended(self) -> bool:
        """Whether the build that wrote it has ended (so it will never be published)."""
        return writer_ended(self.host, self.pid)


def writer_ended(host: str | None, pid: int) -> bool:
    """Whether the process of a tag (`new_temp_tag`) has ended: one of this machine (or of a
    tag without a host) that no longer runs; another machine's counts as running."""
    return host in (None, _host()) and not process_running(pid)


def temp_files(out: str | os.PathLike) -> list[TempFile]:
    """The builder's temporary files in `OUT/data/<config>/<task>/` (links not followed)."""
    entries = (entry for folder in _task_folders(Path(out) / "data")
               for entry in sorted(os.scandir(folder), key=lambda e: e.name))
    return [TempFile(Path(entry.path), match["host"], int(match["pid"])) for entry in entries
            if (match := _TEMP_NAME.match(entry.name)) and entry.is_file(follow_symlinks=False)]


def stale_temp_files(out: str | os.PathLike) -> list[TempFile]:
    """Temporary files whose build has ended: never to be published, safe to remove."""
    return [t for t in temp_files(out) if t.ended]


def remove_stale_temp_files(out: str | os.PathLike) -> list[Path]:
    """Remove what `stale_temp_files` finds, as far as the folder allows; returns what was
    removed (a read-only OUT keeps them, and `ruler verify` reports them)."""
    removed = []
    for stale in stale_temp_files(out):
        try:
            stale.path.unlink()
        except OSError:  # removed meanwhile by another build, or a read-only folder
            continue
        removed.append(stale.path)
    return removed


def _task_folders(data: Path) -> list[str]:
    if not data.is_dir() or data.is_symlink():
        return []
    return [task.path for config in _subfolders(data) for task in _subfolders(config)]


def _subfolders(folder) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as entries:
            return sorted((e for e in entries if e.is_dir(follow_symlinks=False)),
                          key=lambda e: e.name)
    except OSError:
        return []
