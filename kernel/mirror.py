"""Where a source's URL is on a mirror (`ruler sources fetch --mirror`, `$RULER_SOURCES_MIRROR`).

A mirror holds each file at host/path below its base, the layout `wget -x` (or `wget -m`) makes:
http://www.paulgraham.com/avg.html is <base>/www.paulgraham.com/avg.html. Any base urllib opens
works: https://, http:// or file:// (a local copy).
"""

from __future__ import annotations


def mirrored(url: str, base: str | None) -> str:
    """`url` on the mirror at `base`, or `url` itself without one."""
    if not base:
        return url
    return f"{base.rstrip('/')}/{url.split('://', 1)[-1]}"


def layout_hint(base: str) -> str:
    """What a "not found" from the mirror at `base` adds: how a mirror is laid out, and where a
    plain copy of the files belongs instead."""
    return (f"--mirror {base} is read as a mirror laid out as host/path, as `wget -x` makes "
            f"it (http://host/a/b is {base.rstrip('/')}/host/a/b); a folder holding the files "
            f"themselves is a sources folder: pass it as --sources, or copy the files into "
            f"--dest as `ruler sources list` names them")
