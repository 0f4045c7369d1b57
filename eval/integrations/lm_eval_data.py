"""Loads the rows of one exported RULER task from its build folder, found relative to this file.

`ruler export lm-eval` copies this module, verbatim, into the task folder as `ruler_data.py`:
every task of a local build names `load_split` as lm-eval's `custom_dataset`, with the build
folder as the task folder sees it (`build: ..` for the default OUT/lm_eval), so the tasks keep
working wherever the build folder is moved or copied whole. lm-eval passes a task's
`metadata` and `dataset_kwargs` to the hook as keyword arguments, and resolves `!function`
modules next to the YAML file, which is why the path is resolved against `__file__` here and
not against the current directory (where `datasets` would resolve it). Needs `datasets`, which
lm-eval installs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets


def load_split(build: str, data_files: dict[str, str], **_lm_eval_kwargs: Any):
    """The split file(s) `data_files` (paths inside the build folder) of the build folder
    `build` (absolute, or relative to the folder holding this file)."""
    folder = Path(build)
    if not folder.is_absolute():
        folder = Path(__file__).resolve().parent / folder
    missing = [f for f in data_files.values() if not (folder / f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"RULER split file(s) {', '.join(missing)} not found in {folder} (the build folder "
            f"{build!r} as seen from the task folder {Path(__file__).resolve().parent}): move "
            f"the task folder and the build together, or run `ruler export lm-eval` again")
    return datasets.load_dataset(str(folder), data_files=data_files)
