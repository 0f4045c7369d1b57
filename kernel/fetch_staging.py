"""Where a fetch stages what it downloads, and the staging a killed fetch left.

A fetch stages beside its target (one file system: it is installed by a rename), named after it
and tagged with the process that made it (`temp_files.new_temp_tag`: host, pid, random): a
downloaded file at `.<name>.fetch-<tag>.<random>.tmp`, a folder of files at
`.<name>.fetch-<tag>.<random>/`. The fetch removes its own staging when it ends, however it
ends (an error, Ctrl-C, SIGTERM: `ruler sources fetch` takes SIGTERM as Ctrl-C). What a fetch
that could not clean up left (`kill -9`, a power cut, a full disk) is removed by the next fetch
of the same target, once the process that made it has ended: another fetch of that target may
be running.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from ruler.kernel.temp_files import new_temp_tag, writer_ended

_TAG = re.compile(r"fetch-(?:(?P<host>[A-Za-z0-9_.-]+)-)?(?P<pid>\d+)-[0-9a-f]{8}\.")


def tag() -> str:
    """This process's staging tag (the part after `.<name>.`, before the random part)."""
    return "fetch-" + new_temp_tag()


def staging_folder(target: Path) -> Path:
    """A new, empty folder beside `target` to assemble it in."""
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.{tag()}."))


def stale_staging(target: Path) -> list[Path]:
    """The staging beside `target` of fetches that have ended."""
    prefix = f".{target.name}."
    try:
        entries = sorted(target.parent.iterdir())
    except OSError:
        return []
    tagged = ((e, _TAG.match(e.name, len(prefix))) for e in entries if e.name.startswith(prefix))
    return [e for e, match in tagged if match and writer_ended(match["host"], int(match["pid"]))]


def remove_stale_staging(target: Path) -> list[Path]:
    """Remove what `stale_staging` finds, as far as the folder allows; returns what went."""
    removed = []
    for stale in stale_staging(target):
        try:
            if stale.is_dir() and not stale.is_symlink():
                shutil.rmtree(stale)
            else:
                stale.unlink()
        except OSError:  # removed meanwhile by another fetch, or a read-only folder
            continue
        removed.append(stale)
    return removed
