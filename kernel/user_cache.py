"""Where downloaded inputs are cached: the user's cache folder, never the installed package.

The package may be read-only (a system or wheel install), so downloads go to
`$RULER_CACHE`, else `$XDG_CACHE_HOME/ruler`, else `~/.cache/ruler` (the convention the Hugging
Face cache follows too). Each kind of download has its own sub-folder and its own override.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "RULER_CACHE"


def user_cache_root() -> Path:
    """The root of ruler's cache, read from the environment at call time."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "ruler"
