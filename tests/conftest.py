"""Test-wide setup: pinned inputs from `../shared` (beside the checkout, also in CI).

Library code never names that folder; tests point the documented environment variables at it.
Helpers are plain modules in `helpers/`; this file holds only pytest hooks and fixtures.
"""

from __future__ import annotations

import os

import pytest

from helpers.paths import SHARED, SOURCES, TOKENIZERS

os.environ.setdefault("RULER_TOKENIZERS", str(TOKENIZERS))
os.environ.setdefault("RULER_SOURCES", str(SOURCES))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pytest_configure(config):
    if not TOKENIZERS.is_dir() or not SOURCES.is_dir():
        raise pytest.UsageError(f"pinned inputs not found at {SHARED}; set RULER_SHARED")
