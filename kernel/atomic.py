"""Files written whole or not at all: a temporary file beside the target, then `os.replace`.

Every writer of a file that someone may read meanwhile (the manifest, the card, scores, run
records, reports and plots, downloads) goes through here, so a reader never sees half a file
and a failure (a full disk, Ctrl-C, an error while rendering) leaves the previous file as it
was and no temporary file behind. The temporary file sits in the target's folder (`os.replace`
is atomic only within one file system) and is named `.<name>.[<tag>.]<random>.tmp`:
`temp_prefix` is the one definition of that shape, which the cleaners of files a killed writer
left match (`remove_stale_temps` here, `ruler.kernel.temp_files` for split files).

- `write_bytes_atomic` / `write_text_atomic` / `write_json_atomic`: data in memory;
- `replacing(path)`: a writer that fills a path itself (a download, a plot, a copy);
- `temp_file_beside(path, tag)`: a temporary file that its writer publishes later, by its own
  `os.replace` (split files: written by a worker, moved into place under the manifest lock);
- `replace_folder`: a folder made complete beside its target (an export, a download of
  several files), moved into place by renames.

No `fsync`: none of ruler's writers has synced (a build rewrites the manifest after every
file); a power cut can cost a file the next run writes again, never a mix of two versions,
because a name appears only through `os.replace`.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

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


#: Errors of the file system a file is written to (full, over quota, a file too large,
#: read-only, not permitted, failing): a user can fix them, and the command line says them in
#: one line (`storage_message`, `ruler.commands.main`) instead of a traceback.
STORAGE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES,
                            errno.EPERM, errno.EIO})


@contextmanager
def naming(path: str | os.PathLike, *temporary: str | os.PathLike) -> Iterator[None]:
    """A storage error (`STORAGE_ERRORS`) raised in the block about no file (a write to an
    open file names none), or about one of `temporary` (the writer's own temporary file, or
    the staging folder of `path`: a file in it), is raised again naming `path` (or the file in
    it): what is being written, as a user knows it."""
    try:
        yield
    except OSError as e:
        if e.errno not in STORAGE_ERRORS:
            raise
        named = _as_published(e.filename, Path(path), [Path(t) for t in temporary])
        if named is None:
            raise
        raise OSError(e.errno, e.strerror, os.fspath(named)) from None


def _as_published(filename: Any, path: Path, temporary: list[Path]) -> Path | None:
    if filename is None:
        return path
    filename = Path(os.fsdecode(filename)) if isinstance(filename, (str, bytes)) else None
    for tmp in temporary:
        if filename == tmp:
            return path
        if filename is not None and filename.is_relative_to(tmp):
            return path / filename.relative_to(tmp)
    return None


def storage_message(e: OSError) -> str:
    """A storage error in one line: the file, what happened, what to do."""
    what = os.fspath(e.filename) if e.filename else "a file being written"
    do = ("free some space" if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
          else "check the disk" if e.errno == errno.EIO
          else "make its folder writable")
    return (f"{what}: {e.strerror or e}; what was finished before is kept ({do}, then run the "
            f"same command again)")


@contextmanager
def replacing(path: str | os.PathLike, tag: str = "") -> Iterator[Path]:
    """A temporary path beside `path` for the block to write; when the block ends without an
    exception it replaces `path` (readable by all, FILE_MODE), else it is removed (Ctrl-C
    included). A storage error of the temporary file names `path` (`naming`)."""
    with naming(path):
        fd, tmp = temp_file_beside(path, tag)
    os.close(fd)
    try:
        with naming(path, tmp):
            yield tmp
            os.chmod(tmp, FILE_MODE)
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write `path` whole or not at all (`replacing`)."""
    with replacing(path) as tmp:
        tmp.write_bytes(data)


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


def replace_folder(staging: str | os.PathLike, target: str | os.PathLike,
                   check_old: Callable[[Path], None] | None = None) -> None:
    """Move the complete folder `staging` to `target` (in the same folder, so one file system),
    replacing the folder there: the old one is renamed aside, the new one moved in, the old
    one removed, so `target` is the old folder or the new one, never a mix of the two.
    `check_old(old)` runs on the old folder once it is aside (it sees whatever was added to
    `target` until then): an exception from it puts the old folder back and leaves `staging`
    where it is. A link at `target` is replaced as a folder is, never followed: the folder it
    points to stays as it was."""
    staging, target = Path(staging), Path(target)
    if not target.exists() and not target.is_symlink():
        staging.rename(target)
        return
    old = target.with_name(f".{target.name}.old")
    _remove(old)  # left by a writer killed between two renames
    target.rename(old)
    try:
        if check_old is not None:
            check_old(old)
        staging.rename(target)
    except BaseException:
        old.rename(target)
        raise
    _remove(old)


def _remove(path: Path) -> None:
    """Remove `path` as far as possible: a folder with its files; a link or a file itself (a
    link's target is never touched; `shutil.rmtree` refuses a link, and one left at `old`
    made every later rename onto it fail)."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)
