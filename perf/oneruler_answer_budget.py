"""Do ONERULER's right answers fit its output budgets? Per config and task of a build: the
tokens of each row's gold answer (its references joined by ", ", the least a right answer
writes) with the config's own tokenizer, against the row's tokens_to_generate.

Prints figures; asserts nothing.

    python -m perf.oneruler_answer_budget OUT
    python -m perf.oneruler_answer_budget OUT --tasks or_cwe,or_cwe_easy

A gold answer over its budget is cut by the engine and scored wrong under both metrics (the
report's health section counts answers that ended at the limit).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from ruler.builder.manifest import Manifest
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.eval.records.dataset import open_dataset


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path, help="a build folder holding ONERULER configs")
    p.add_argument("--tasks", default=None, help="comma-separated tasks (default: all)")
    args = p.parse_args(argv)
    tasks = tuple(args.tasks.split(",")) if args.tasks else None
    manifest = Manifest.load(args.out)
    ds = open_dataset(str(args.out))
    configs = [c for c in manifest.configs() if manifest.build(c).benchmark == "oneruler"]
    if not configs:
        print(f"{args.out} holds no ONERULER config")
        return 1
    print(f"{'config':34} {'task':20} {'rows':>5} {'over':>5} {'median':>7} {'max':>5} "
          f"{'budget':>6}")
    over_by_tokenizer: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    tokenizers: dict[str, object] = {}
    for config in configs:
        name = manifest.build(config).tokenizer.name
        tok = tokenizers.setdefault(name, load_tokenizer(name))
        for f in ds.files(config, tasks):
            rows = ds.rows(f, ("outputs", "tokens_to_generate"))
            counts = sorted(tok.count(", ".join(r["outputs"])) for r in rows)
            budget = int(rows[0]["tokens_to_generate"])
            over = sum(n > budget for n in counts)
            over_by_tokenizer[name][0] += over
            over_by_tokenizer[name][1] += len(counts)
            print(f"{config:34} {f.task:20} {len(counts):>5} {over:>5} "
                  f"{counts[len(counts) // 2]:>7} {counts[-1]:>5} {budget:>6}")
    for name, (over, total) in sorted(over_by_tokenizer.items()):
        print(f"{name}: {over} of {total} gold answers longer than their budget")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
