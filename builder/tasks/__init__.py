"""Task generators by family; see `catalog` for the task definitions."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ruler.builder.tasks.base import Draft, TaskGenerator
from ruler.builder.tasks.catalog import TASKS, TaskSpec, get_task

if TYPE_CHECKING:
    from ruler.builder.context import BuildContext

# family name -> "module:Class"; imported lazily so one family's deps never load for another.
GENERATORS = {
    "niah": "ruler.builder.tasks.niah:NiahGenerator",
    "variable_tracking": "ruler.builder.tasks.variable_tracking:VariableTrackingGenerator",
    "common_words_extraction": "ruler.builder.tasks.common_words:CommonWordsGenerator",
    "freq_words_extraction": "ruler.builder.tasks.freq_words:FreqWordsGenerator",
    "qa": "ruler.builder.tasks.qa:QAGenerator",
}


def make_generator(spec: TaskSpec, ctx: "BuildContext", max_seq_length: int) -> TaskGenerator:
    module, cls = GENERATORS[spec.family.name].split(":")
    return getattr(importlib.import_module(module), cls)(spec, ctx, max_seq_length)


__all__ = ["Draft", "TaskGenerator", "TASKS", "TaskSpec", "get_task", "make_generator"]
