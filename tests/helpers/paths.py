"""Where the repository and the pinned inputs are.

The pinned inputs (tokenizers, sources) live in `../shared`, beside the checkout, also in CI;
`RULER_SHARED` points elsewhere. Library code never names that folder: conftest points the
documented environment variables (`RULER_TOKENIZERS`, `RULER_SOURCES`) at it.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository: the package `ruler` itself
SHARED = Path(os.environ.get("RULER_SHARED") or ROOT.parent / "shared")
TOKENIZERS = SHARED / "tokenizers"
SOURCES = SHARED / "sources"
REFERENCE = SHARED / "reference"
