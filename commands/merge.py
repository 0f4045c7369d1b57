"""`ruler merge`: its flags are `MergeConfig`'s fields."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ruler.kernel.flags import POSITIONAL, add_command, check_flags, option


@dataclass(frozen=True)
class MergeConfig:
    """What `ruler merge` joins, and where."""

    inputs: tuple[str, ...] = option(kind=POSITIONAL, nargs="+", metavar="FOLDER",
                                     help="build folders to merge")
    out: Path = option("--out", required=True, type=Path, help="the folder to merge into")

    def __post_init__(self) -> None:
        check_flags(self)


def register_cli(sub: argparse._SubParsersAction) -> None:
    add_command(
        sub, "merge", MergeConfig, run,
        help="join build folders made elsewhere (shards, task subsets) into one",
        description="Copy the split files of each build folder into OUT and record them in "
                    "OUT's manifest and card. A config must have the same build identity "
                    "everywhere (seed, samples, tokenizer, package versions); a file present "
                    "in two places must hold the same rows. Everything is checked before "
                    "anything is written.")


def run(cfg: MergeConfig) -> int:
    from ruler.builder.pipeline.merge import merge

    result = merge(list(cfg.inputs), cfg.out)
    print(f"merged into {result.out}: {len(result.copied)} file(s) copied, "
          f"{len(result.present)} already there")
    return 0
