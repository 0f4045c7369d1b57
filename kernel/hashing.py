"""sha256 of files and texts: the one definition every module hashes with.

Manifests, source and tokenizer pins, build keys and the evaluator's revision checks all
compare these hex digests, so they must be computed the same way everywhere.
"""

from __future__ import annotations

import hashlib
import os
from typing import Mapping


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks (split files reach hundreds of MB)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def directory_digest(hashes: Mapping[str, str]) -> str:
    """One sha256 for several files (a folder source, a Hub dataset's Parquet files): over the
    sorted "name sha256" lines."""
    lines = "".join(f"{name} {digest}\n" for name, digest in sorted(hashes.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def sha256_text(text: str) -> str:
    """Hex sha256 of a text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
