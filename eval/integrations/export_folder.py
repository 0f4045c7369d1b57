"""An export folder that knows its own files, so that exporting again loses nothing of the user's.

`ruler export lm-eval` and `ruler export kvpress` write a whole folder, made complete beside it
and moved into place. Each records in the folder itself (`RECORD_NAME`) every file it wrote,
with its sha256. Exporting again into that folder replaces it only while it holds exactly those
files, unchanged: anything else there (a task YAML of the user's own, notes, a copied build, a
file edited since) is named and the export refuses, once before any work and again, with the
old folder moved aside, just before that folder is removed (a file dropped in meanwhile stays).
An empty folder is used as it is; a folder with files but no record (anything else, or an
export by a ruler that kept no record) is refused the same way, since nothing there is known to
be the export's own.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruler.kernel import owned_files
from ruler.kernel.atomic import naming, replace_folder
from ruler.kernel.errors import RulerError
from ruler.kernel.hashing import file_sha256

#: The record of the files an export wrote, inside the export folder.
RECORD_NAME = "ruler_export_files.json"


@dataclass(frozen=True)
class ExportKind:
    """What a refusal names: the command, its flag for the folder, and what its folder is."""

    command: str  # "ruler export lm-eval"
    flag: str  # "--out"
    noun: str  # "an lm-eval export of ruler"


def _recorded(folder: Path) -> dict[str, str] | None:
    """The files the record in `folder` lists (relative POSIX path -> sha256), or None when
    there is no readable record."""
    try:
        record = json.loads((folder / RECORD_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in files.items()):
        return None
    return files


def foreign_entries(folder: Path) -> list[str]:
    """What `folder` holds that its export did not write, or changed since: entries (relative
    POSIX paths; a folder with nothing of the export's is named once, with a trailing /) not in
    its record, recorded files whose bytes differ, links and special files. [] for an export
    exactly as written, or an empty folder."""
    owned: dict[str, str | None] = {**(_recorded(folder) or {}), RECORD_NAME: None}
    return owned_files.foreign_entries(folder, owned, changed="changed since the export wrote it")


def check_target(target: Path, kind: ExportKind) -> None:
    """Refuse `target` unless it is missing, an empty folder, or an earlier export holding only
    the files it wrote."""
    if not target.exists() and not target.is_symlink():
        return
    if target.is_symlink() or not target.is_dir():
        raise RulerError(f"{kind.flag} {target} exists and is not {kind.noun}: choose another "
                         f"{kind.flag}")
    _refuse_foreign(target, target, kind)


def _refuse_foreign(folder: Path, shown_as: Path, kind: ExportKind) -> None:
    found = foreign_entries(folder)
    if not found:
        return
    names, them = owned_files.listing(found), owned_files.them(found)
    if _recorded(folder) is None:
        raise RulerError(f"{kind.flag} {shown_as} exists and is not {kind.noun} (no "
                         f"{RECORD_NAME}): it holds {names}; move {them} out, or choose "
                         f"another {kind.flag}")
    raise RulerError(f"{kind.flag} {shown_as} holds {names}, which `{kind.command}` did not "
                     f"write there (an export replaces only the files it wrote, as its "
                     f"{RECORD_NAME} lists them): move {them} out, or choose another "
                     f"{kind.flag}")


def staging_folder(target: Path) -> Path:
    """A new, empty folder beside `target` to write the export in (same file system: it is
    moved into place by a rename)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))


def publish(staging: Path, target: Path, kind: ExportKind) -> None:
    """Record every file of `staging` in it, then make it `target`: an earlier export there is
    replaced whole, once it is checked again to hold only its own files. `staging` is removed
    on failure (and by the move on success)."""
    try:
        files = {p.relative_to(staging).as_posix(): file_sha256(p)
                 for p in sorted(staging.rglob("*")) if p.is_file()}
        record: dict[str, Any] = {
            "written_by": kind.command,
            "why": f"the files `{kind.command}` wrote here: exporting again replaces this "
                   f"folder only while it holds exactly these, unchanged",
            "files": files}
        with naming(target, staging):
            (staging / RECORD_NAME).write_text(json.dumps(record, indent=2, sort_keys=True)
                                               + "\n", encoding="utf-8")
        staging.chmod(0o755)  # mkdtemp makes 0700; an export is for sharing
        replace_folder(staging, target,
                       check_old=lambda old: _refuse_foreign(old, target, kind))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
