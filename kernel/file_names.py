"""A file or folder name made from a string the user chose (a model name, a run's model, a
Hub id): always one plain, non-empty component, so a path built with it stays in the folder it
is put in.

`Path("results") / Path(model).name` is not that: `--model ..` gives `results/..` (the current
folder, where the user's own report.md lives), `--model .` gives `results/` itself, and a
model name of 300 characters gives a name the file system refuses.
"""

from __future__ import annotations

import hashlib
import re

#: Characters kept as they are; every run of others becomes `--` (as `org/name` ids are
#: written in Hub cache folders).
_OTHER = re.compile(r"[^\w.-]+")
#: At most this many UTF-8 bytes: file systems allow 255, and callers append suffixes.
MAX_NAME_BYTES = 100


def safe_name(text: str, fallback: str, last_part: bool = True) -> str:
    """`text` as one file or folder name: its last path part that is not `.` or `..` (the
    name of `org/name`, of `../models/m/`; with `last_part=False` every part, `org--name`),
    other characters than letters, digits, `_`, `.` and `-` made `--`, no leading or trailing
    `.` or `-` (never `.`, `..` or a hidden name), at most `MAX_NAME_BYTES` bytes (a cut name
    ends with a hash of the whole text, so two long names stay apart); `fallback` where
    nothing is left."""
    parts = [p for p in re.split(r"[/\\]", text) if p not in ("", ".", "..")]
    kept = (parts[-1:] if last_part else parts) or [""]
    name = _OTHER.sub("--", "/".join(kept)).strip(".-")
    if not name:
        return fallback
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        cut = name.encode("utf-8")[:MAX_NAME_BYTES - len(digest) - 1]
        name = cut.decode("utf-8", "ignore").rstrip(".-") + "-" + digest
    return name
