"""A folder one writer owns the files of: what else it holds, named.

ruler replaces a folder it writes whole (an export, a fetched source folder) only while that
folder holds nothing but the writer's own files, so a user's file is never deleted: anything
else is named and the write refused. The writer says what it owns, as relative POSIX paths:
each with the sha256 it must still have (an export, which records what it wrote: a file edited
since is the user's now), or None (any bytes: a source's pinned paths, which its fetch writes
again whatever is there).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence

from ruler.kernel.hashing import file_sha256

#: Entries a refusal names before "... and N more".
SHOWN = 3


def foreign_entries(folder: Path, owned: Mapping[str, str | None],
                    changed: str = "changed since it was written") -> list[str]:
    """What `folder` holds that is not the writer's: entries (relative POSIX paths; a folder
    with nothing owned in it is named once, with a trailing /) not in `owned`, owned files
    whose bytes differ from a sha256 `owned` gives (`changed` says so), links and special
    files. [] for a folder holding only owned files, or an empty one."""
    owned_dirs = {p.rsplit("/", i)[0] for p in owned for i in range(1, p.count("/") + 1)}
    found: list[str] = []
    for root, dirs, files in os.walk(folder):
        rel_root = Path(root).relative_to(folder).as_posix()
        prefix = "" if rel_root == "." else rel_root + "/"
        for d in sorted(dirs):
            path = prefix + d
            if path not in owned_dirs or Path(root, d).is_symlink():
                found.append(path + "/")
        dirs[:] = [d for d in dirs if prefix + d in owned_dirs
                   and not Path(root, d).is_symlink()]
        for f in sorted(files):
            path, full = prefix + f, Path(root, f)
            if path not in owned or full.is_symlink() or not full.is_file():
                found.append(path)
            elif owned[path] is not None and file_sha256(full) != owned[path]:
                found.append(f"{path} ({changed})")
    return found


def listing(found: Sequence[str], shown: int = SHOWN) -> str:
    """`found` for a one-line message: the first `shown`, then "and N more"."""
    more = f" and {len(found) - shown} more" if len(found) > shown else ""
    return ", ".join(found[:shown]) + more


def them(found: Sequence[str]) -> str:
    """The pronoun a message uses for `found`."""
    return "it" if len(found) == 1 else "them"
