"""One base seed per tokenizer config in a build folder.

A tokenizer config's variants (`<tokenizer>--depth10`, `--out16k`, `--base`, `--nocontext`)
draw sample i from the default config's per-sample seed, and its replicates
(`<tokenizer>--repI`) redraw from the same base seed under their own names: the configs of one
tokenizer config compare sample by sample, and its replicates are one series (`ruler report`
pools them, the card says so), only while they share that base seed. So a build or merge that
would put a config beside another config of the same tokenizer config built with another seed
is refused, naming both seeds. Configs of other tokenizers are other series.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ruler.builder.manifest import BuildEntry
from ruler.catalog.variants import variant_from_record


def series_of(config: str, variant: Mapping[str, Any] | None) -> str:
    """The tokenizer config that `config` (recording `variant`) belongs to."""
    return variant_from_record(variant).base_config(config)


@dataclass(frozen=True)
class SeedClash:
    """`config` with `seed` would join `other`, of the same tokenizer config, with `other_seed`."""

    config: str
    seed: int
    other: str
    other_seed: int
    series: str

    def message(self, where: str, outcome: str) -> str:
        return (f"config {self.config!r} has seed {self.seed} and {where} holds config "
                f"{self.other!r} with seed {self.other_seed}: the configs of tokenizer config "
                f"{self.series!r} (its variants and replicates) share one base seed, which "
                f"their samples are drawn from, so they compare sample by sample; {outcome}")


def seed_clash(builds: Mapping[str, BuildEntry], config: str,
               variant: Mapping[str, Any] | None, seed: int | None) -> SeedClash | None:
    """The first config of `builds` (other than `config`) of `config`'s tokenizer config whose
    recorded seed is not `seed`, or None. Entries without a seed (an older ruler's) are not
    compared."""
    if seed is None:
        return None
    series = series_of(config, variant)
    for other, entry in sorted(builds.items()):
        if other != config and entry.seed is not None and entry.seed != seed \
                and series_of(other, entry.variant) == series:
            return SeedClash(config, seed, other, entry.seed, series)
    return None
