"""Answer recoverability: can a row's `outputs` be read off its `input` directly?

Each family module defines `check_row(row: Mapping) -> str | None` (None when the answer is
recoverable, else what is wrong). Task tests and `ruler verify` both call `check_row` here.
"""

from __future__ import annotations

import importlib
from typing import Mapping

from ruler.builder.tasks import GENERATORS
from ruler.builder.tasks.catalog import get_task


def check_row(row: Mapping) -> str | None:
    spec = get_task(row["task"])
    module = GENERATORS[spec.family.name].split(":")[0]
    return importlib.import_module(module).check_row(row)
