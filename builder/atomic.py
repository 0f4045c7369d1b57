"""Files written whole or not at all: a temporary file beside the target, then `os.replace`.

Every writer of a file that someone else may read meanwhile (the manifest, the card, scores,
run records, reports, downloads) goes through here, so a reader never sees half a file and a
failure leaves the previous file as it was. The temporary file sits in the target's folder
(`os.replace` is atomic only within one file system) and is named `.<name>.<tag.>*.tmp`:
`temp_prefix` is the one definition of that shape, which the cleaners of files left by a
killed writer match (`remove_stale_temps` here, `ruler.builder.temp_files` for split files).

Writers that stream a large file and publish it later (the split writer, Ray's receiver,
merge's copy) take their temporary file from `temp_file_beside`, named the same way.

No `fsync`: none of ruler's writers has ever synced (a build records a file per split and
would pay for it at every step); what a power cut can cost is a file the next run rewrites,
never a mix of two versions, because readers only ever see a name after `os.replace`.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

#: Permissions of published files: mkstemp makes 0600, a dataset folder is for sharing.
FILE_MODE = 0o644


def temp_prefix(path: str | os.PathLike, tag: str = "") -> str:
    """Temporary files of `path` are named `<prefix>*.tmp` beside it; `tag` (one build's)
    narrows them to those of one writer."""
    return f".{Path(path).name}.{tag + '.' if tag else ''}"


def temp_file_beside(path: str | os.PathLike, tag: str = "") -> tuple[int, Path]:
    """A new, empty temporary file in `path`'s folder (created if needed), named after
    `path` (`temp_prefix`): its open descriptor and its path. The caller writes it, publishes
    it with `os.replace` and removes it on failure."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=temp_prefix(path, tag), suffix=".tmp")
    return fd, Path(tmp)


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write `path` whole or not at all: a temporary file beside it (removed on any failure,
    Ctrl-C included), then `os.replace`; the file is readable by all (FILE_MODE)."""
    fd, tmp = temp_file_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """`write_bytes_atomic` of `text` in UTF-8."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike, data: Any) -> None:
    """`data` as the indented, key-sorted JSON every ruler record uses (one trailing newline)."""
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
                      + "\n")


def remove_stale_temps(path: str | os.PathLike) -> None:
    """Remove the temporary files of `path` that a killed writer left. Only for a file whose
    writers hold a lock (the manifest's, the card's), by its holder: no other writer is
    mid-write then."""
    path = Path(path)
    for tmp in path.parent.glob(f"{temp_prefix(path)}*tmp"):
        tmp.unlink(missing_ok=True)
