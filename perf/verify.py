"""Benchmark `ruler verify` on a build folder: the cost of each level of proof.

Prints figures; asserts nothing.

    python -m perf.verify OUT                    # default, --full, --regenerate 2
    python -m perf.verify OUT --regenerate 2 --workers 2

Levels: the default (hashes, identity, every row's fields and answers, 3 rows per file
re-tokenized with their gold positions re-derived), `--full` (every row re-tokenized and
re-derived: two tokenization passes), and `--regenerate K` (K rows per file rebuilt from the
manifest's identity, as `ruler release` does with K = 2).
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from pathlib import Path

from ruler.builder.verify.run import verify


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path)
    p.add_argument("--workers", type=int, default=multiprocessing.cpu_count())
    p.add_argument("--regenerate", type=int, default=2)
    args = p.parse_args(argv)
    levels = [("default", {}), ("--full", {"full": True}),
              (f"--regenerate {args.regenerate}", {"regenerate": args.regenerate})]
    print(f"{'level':16} {'seconds':>8} {'rows':>8} {'re-tokenized':>12} {'gold':>8} "
          f"{'regenerated':>11} {'ok':>4}")
    for name, kwargs in levels:
        started = time.perf_counter()
        report = verify(args.out, load=False, workers=args.workers, **kwargs)
        seconds = time.perf_counter() - started
        files = report.files
        print(f"{name:16} {seconds:>8.1f} {sum(f.rows for f in files):>8} "
              f"{sum(f.retokenized for f in files):>12} {sum(f.gold_checked for f in files):>8} "
              f"{sum(f.regenerated for f in files):>11} {str(report.ok):>4}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
