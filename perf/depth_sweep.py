"""Benchmark a depth-swept build (`ruler build --depths N`) against the default config.

Prints figures; asserts nothing. Builds the default config and the `--depths N` variant of
the swept tasks (niah_*, qa_1, qa_2) into one folder, then per task and length:
rows per depth bin (min..max, from the rows' recorded gold_depths), whether every row's
placed depths (every queried needle; qa: the gold documents' mean start) are in its bin, the
smallest margin of a placed depth to its bin's inner edges (in bin widths), the fill
(length / L) of both configs, and the build seconds of both.

    python -m perf.depth_sweep --tokenizer llama-3.1 --lengths 4096,16384 --samples 100
    python -m perf.depth_sweep --tokenizer gpt-4o --depths 20 --samples 40 --no-default
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from ruler.builder.pipeline import BuildConfig, run_build
from ruler.builder.selection import parse_lengths, parse_tasks
from ruler.catalog.depths import bin_of, sample_bin
from ruler.catalog.family import family_of, swept_tasks
from ruler.catalog.variants import DepthSweep


def _margin(depth: float, index: int, bins: int) -> float:
    """Distance of a depth to its bin's inner edges, in bin widths (outer edges: none)."""
    b = sample_bin(index, bins)
    edges = ([depth - b.lo] if b.index > 0 else []) + ([b.hi - depth] if b.index < bins - 1
                                                       else [])
    return min(edges, default=1.0) * bins


def _fills(path: Path) -> tuple[float, float]:
    t = pq.read_table(path, columns=["length", "max_seq_length"]).to_pylist()
    fills = [r["length"] / r["max_seq_length"] for r in t]
    return sum(fills) / len(fills), min(fills)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m perf.depth_sweep", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokenizer", default="llama-3.1")
    p.add_argument("--tasks", default=",".join(swept_tasks()))
    p.add_argument("--lengths", default="4096,16384")
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--depths", type=int, default=10)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", type=Path, default=None, help="build folder (default: a temp one)")
    p.add_argument("--no-default", action="store_true", help="build the variant only")
    args = p.parse_args(argv)

    out = args.out or Path(tempfile.mkdtemp(prefix="ruler-depth-sweep-"))
    tasks, lengths = parse_tasks(args.tasks), parse_lengths(args.lengths)
    common = dict(tokenizer=args.tokenizer, tasks=tasks, lengths=lengths, samples=args.samples,
                  out=out, workers=args.workers, progress=False)
    seconds = {}
    for name, extra in (("variant", {"variant": DepthSweep(args.depths)}),
                        *(() if args.no_default else (("default", {}),))):
        start = time.perf_counter()
        report = run_build(BuildConfig(**common, **extra))
        seconds[name] = (report.config, time.perf_counter() - start)
    variant, default = seconds["variant"][0], seconds.get("default", (None,))[0]

    print(f"{out}: {variant} ({seconds['variant'][1]:.1f}s)"
          + (f" vs {default} ({seconds['default'][1]:.1f}s)" if default else ""))
    print(f"{'task':18} {'L':>6} {'rows/bin':>9} {'in bin':>6} {'margin':>6} "
          f"{'fill mean/min':>15}" + (f" {'default fill':>15}" if default else ""))
    worst = 1.0
    for L in lengths:
        for task in tasks:
            path = out / "data" / variant / task / f"{L}.parquet"
            rows = pq.read_table(path, columns=["index", "gold_depths"]).to_pylist()
            family = family_of(task)
            placed = [(r["index"], family.placed_depths(r["gold_depths"])) for r in rows]
            per_bin = Counter(bin_of(d[0], args.depths) for _, d in placed if d)
            inside = all(family.bin_miss(r["gold_depths"], sample_bin(r["index"], args.depths))
                         is None for r in rows)
            margin = min(_margin(d, i, args.depths) for i, ds in placed for d in ds)
            worst = min(worst, margin)
            counts = [per_bin.get(b, 0) for b in range(args.depths)]
            mean, low = _fills(path)
            line = (f"{task:18} {L:>6} {min(counts):>4}..{max(counts):<4} "
                    f"{'yes' if inside else 'NO':>6} {margin:>6.2f} {mean:>7.4f}/{low:.4f}")
            if default:
                dmean, dlow = _fills(out / "data" / default / task / f"{L}.parquet")
                line += f" {dmean:>7.4f}/{dlow:.4f}"
            print(line)
    print(f"smallest margin of a gold depth to its bin's inner edges: {worst:.3f} bin widths")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
