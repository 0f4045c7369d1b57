"""`datasets.load_dataset` on every config and split the card declares, as a user would."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ruler.builder.findings import LoadResult
from ruler.builder.manifest import Manifest


def expected_splits(manifest: Manifest) -> dict[tuple[str, str], int]:
    """(config name, split) -> rows, for every config the card declares."""
    expected: dict[tuple[str, str], int] = {}
    for entry in manifest.files.values():
        c, t, L, n = entry.config, entry.task, str(entry.max_seq_length), entry.rows
        expected[(c, L)] = expected.get((c, L), 0) + n
        expected[(f"{c}--{t}", L)] = n
    return dict(sorted(expected.items()))


def check_loading(out: Path, manifest: Manifest) -> list[LoadResult]:
    """`load_dataset` every config and split, as a user would, into a throw-away cache."""
    import datasets

    results = []
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        with tempfile.TemporaryDirectory(prefix="ruler-verify-") as cache:
            for (config, split), n in expected_splits(manifest).items():
                try:
                    ds = datasets.load_dataset(str(out), config, split=split, cache_dir=cache)
                    results.append(LoadResult(config, split, ds.num_rows, n))
                except Exception as e:  # any loader failure is a finding, with its message
                    results.append(LoadResult(config, split, None, n,
                                              f"load_dataset failed: {type(e).__name__}: {e}"))
    finally:
        if bars:
            datasets.enable_progress_bars()
    return results
