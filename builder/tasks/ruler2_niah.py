"""RULERv2's needle tasks (mk_niah_basic, mv_niah_basic): distractor needles as the haystack.

Not written yet: the catalog entries come first (`ruler.builder.tasks.catalog`); building a
task of this family raises NotImplementedError until its generator lands.
"""

from __future__ import annotations

from ruler.builder.tasks.base import Draft, TaskGenerator
from ruler.builder.tasks.catalog import RULER2_NIAH
from ruler.builder.tasks.family import TaskFamily, register_family


class Ruler2NiahGenerator(TaskGenerator):
    def draft(self, index, rng, size) -> Draft:
        raise NotImplementedError(f"task {self.spec.name}: generator not written yet")


def _not_yet(row, generator=None):
    return "the RULERv2 row checks are not written yet"


for _spec in (RULER2_NIAH,):
    register_family(TaskFamily(name=_spec.name, generator=Ruler2NiahGenerator, check_row=_not_yet,
                               gold_spans=_not_yet))
