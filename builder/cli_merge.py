"""`ruler merge`."""

from __future__ import annotations

import argparse
from pathlib import Path


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "merge", help="join build folders made elsewhere (shards, task subsets) into one",
        description="Copy the split files of each build folder into OUT and record them in "
                    "OUT's manifest and card. A config must have the same build identity "
                    "everywhere (seed, samples, tokenizer, package versions); a file present "
                    "in two places must hold the same rows. Everything is checked before "
                    "anything is written.")
    p.add_argument("inputs", nargs="+", metavar="FOLDER", help="build folders to merge")
    p.add_argument("--out", required=True, type=Path, help="the folder to merge into")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ruler.builder.pipeline.merge import merge

    result = merge(args.inputs, args.out)
    print(f"merged into {result.out}: {len(result.copied)} file(s) copied, "
          f"{len(result.present)} already there")
    return 0
