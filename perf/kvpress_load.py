"""Benchmark loading a calibration subset: `ruler export kvpress OUT --limit N` against the build.

Prints figures; asserts nothing.

    python -m perf.kvpress_load OUT [--limit 4] [--tokenizer-config C] [--length 4096]

For a build folder OUT (say 13 tasks at several lengths), it exports the first N rows of
every task and length (`--limit`, the recommended calibration subset) and the whole config,
then times, each with an empty `datasets` cache (cold: Parquet -> Arrow, what a first
`load_dataset` pays) and again (warm: the cache reused):

  subset      load_dataset(EXPORT, data_dir=L, split="test")   kvpress's way, one length
  export      the same on the whole config's export
  build       load_dataset(OUT, C, split=str(L))                the build's config: all its
                                                                 lengths are prepared at once

The export has one config (data_dir) per length, so loading one length reads one file; the
build's config holds every length as a split, and `datasets` prepares all splits of a config
whichever one is asked for.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from ruler.eval.integrations.kvpress_export import export_kvpress
from ruler.eval.records.dataset import default_config, open_dataset


def _timed_load(kind: str, folder: Path, cache: Path, **kw) -> tuple[float, int]:
    from datasets import load_dataset

    started = time.perf_counter()
    ds = load_dataset(str(folder), cache_dir=str(cache), **kw)
    return time.perf_counter() - started, len(ds)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path, help="a build folder")
    p.add_argument("--limit", type=int, default=4)
    p.add_argument("--tokenizer-config", default=None)
    p.add_argument("--length", type=int, default=None, help="default: the shortest")
    args = p.parse_args(argv)
    from datasets.utils.logging import disable_progress_bar

    disable_progress_bar()
    ds = open_dataset(str(args.out), config=args.tokenizer_config, one_config=True)
    config = args.tokenizer_config or default_config(ds)
    files = ds.files(config)
    lengths = sorted({f.max_seq_length for f in files})
    L = args.length or lengths[0]
    work = Path(tempfile.mkdtemp(prefix="kvpress-load-"))
    try:
        started = time.perf_counter()
        export_kvpress(str(args.out), work / "subset", config=config, limit=args.limit)
        subset_s = time.perf_counter() - started
        started = time.perf_counter()
        export_kvpress(str(args.out), work / "export", config=config)
        export_s = time.perf_counter() - started
        mb = {name: sum(f.stat().st_size for f in (work / name).rglob("*.parquet")) / 1e6
              for name in ("subset", "export")}
        print(f"build {args.out}: config {config}, {len(files)} files, lengths "
              f"{', '.join(map(str, lengths))}; loading length {L}")
        print(f"export --limit {args.limit}: {subset_s:.1f} s, {mb['subset']:.2f} MB; "
              f"whole export: {export_s:.1f} s, {mb['export']:.2f} MB")
        print(f"{'what':8} {'rows':>6} {'cold s':>8} {'warm s':>8}")
        cases = [("subset", work / "subset", {"data_dir": str(L), "split": "test"}),
                 ("export", work / "export", {"data_dir": str(L), "split": "test"}),
                 ("build", args.out, {"name": config, "split": str(L)})]
        _timed_load("warm-up", work / "subset", work / "cache-warm-up",  # imports, once
                    data_dir=str(L), split="test")
        for name, folder, kw in cases:
            cache = work / f"cache-{name}"
            cold, rows = _timed_load(name, folder, cache, **kw)
            warm, _ = _timed_load(name, folder, cache, **kw)
            print(f"{name:8} {rows:>6} {cold:>8.2f} {warm:>8.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
