"""ONERULER's needle rows against their nominal lengths, language by language: how the books are
cut into haystack sentences, how full the rows are, and where the needles can land.

    nice -n 10 python -m perf.oneruler_fill --out DIR --json after.json
    python -m perf.oneruler_fill --out DIR --before before.json      # side by side
    python -m perf.oneruler_fill --segments-only

Prints figures; asserts nothing. Three sections, each per language:

- segments: the haystack units of each book (`split_sentences`, what the generator reads):
  how many, and their p50, p99 and largest size in tokens of each tokenizer;
- fill: the 5 NIAH tasks built (`--samples` per file, default 2) at `--lengths` (default
  4096 and 8192, which users ask for, and the paper's 8000, 32000, 64000, 128000) for each
  tokenizer; the mean fill (`length` / L) of every file, one table per tokenizer and length,
  languages down, tasks across; cells under 0.99 are marked `*`;
- depths: the 40 depths the generator draws (round(linspace(0, 100, 40)), uniformly) against
  where a needle drawn at each really lands: the share of the haystack's tokens before the
  sentence boundary it goes in at (`int(n * depth / 100)` of the row's n sentences), over
  every tokenizer and length; the table counts them per tenth of the context (uniform: 10 %
  in each) and gives the largest gap between a drawn depth and its landing place.

`--json FILE` writes every figure; `--before FILE` (an earlier run's JSON, e.g. at another
commit) prints each figure as before -> after. The build folder is reused (a rerun builds only
what is missing); give another folder for another commit. Heavy: 52 configs (26 languages x 2
tokenizers) of 30 files each; run it at low priority.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from ruler.benchmarks.oneruler.data import OnerulerData
from ruler.benchmarks.oneruler.languages import LANGUAGES, OnerulerLanguage
from ruler.benchmarks.oneruler.sentences import split_sentences
from ruler.benchmarks.oneruler.tasks import CROSS_LINGUAL_TASKS as ONERULER_CROSS_LINGUAL_TASKS
from ruler.builder.pipeline import BuildConfig, run_build
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.catalog.depths import DEPTHS
from ruler.catalog.sources import resolve

NIAH = ONERULER_CROSS_LINGUAL_TASKS  # the 5 NIAH tasks
LENGTHS = (4096, 8000, 8192, 32000, 64000, 128000)
TARGET = 0.99  # the fill every cell should reach
DECILES = 10


def segment_stats(books: dict[str, tuple[str, ...]], tokenizers: dict[str, Any]
                  ) -> dict[str, dict[str, Any]]:
    """lang -> {"count": n, tokenizer: [p50, p99, max] tokens}, and the per-sentence counts
    (kept for the depths, not written)."""
    stats: dict[str, dict[str, Any]] = {}
    for lang, sentences in books.items():
        entry: dict[str, Any] = {"count": len(sentences), "_tokens": {}}
        for name, tok in tokenizers.items():
            counts = np.array(tok.count_batch(list(sentences)))
            entry[name] = [int(np.percentile(counts, 50)), int(np.percentile(counts, 99)),
                           int(counts.max())]
            entry["_tokens"][name] = counts
        stats[lang] = entry
    return stats


def build_all(out: Path, tokenizers: list[str], languages: list[str], lengths: tuple[int, ...],
              samples: int, workers: int) -> float:
    """Every (tokenizer, language) config's 5 NIAH tasks at `lengths`; the seconds it took."""
    started = time.perf_counter()
    for name in tokenizers:
        for lang in languages:
            t0 = time.perf_counter()
            run_build(BuildConfig(tokenizer=name, benchmark="oneruler", tasks=NIAH,
                                  lengths=lengths, samples=samples, out=out, workers=workers,
                                  progress=False, axes={"language": OnerulerLanguage.mono(lang)}))
            print(f"  built {name} {lang} in {time.perf_counter() - t0:.0f} s", flush=True)
    return time.perf_counter() - started


def read_rows(out: Path, tokenizer: str, lang: str, task: str, L: int) -> list[dict]:
    path = out / f"data/{tokenizer}--oneruler-{lang}/{task}/{L}.parquet"
    return pq.read_table(path, columns=["length", "haystack_size"]).to_pylist()


def fill_grid(out: Path, tokenizers: list[str], languages: list[str],
              lengths: tuple[int, ...]) -> dict[str, dict[str, Any]]:
    """"fill": "tokenizer/lang/task/L" -> mean fill; "haystack": the same key -> its first
    row's sentences; "sizes": "tokenizer/lang/L" -> the haystack sizes of its rows."""
    grid: dict[str, float] = {}
    haystack: dict[str, int] = {}
    sizes: dict[str, list[int]] = {}
    for name in tokenizers:
        for lang in languages:
            for L in lengths:
                for task in NIAH:
                    rows = read_rows(out, name, lang, task, L)
                    key = f"{name}/{lang}/{task}/{L}"
                    grid[key] = statistics.fmean(r["length"] / L for r in rows)
                    haystack[key] = rows[0]["haystack_size"]
                    sizes.setdefault(f"{name}/{lang}/{L}", []).extend(
                        r["haystack_size"] for r in rows)
    return {"fill": grid, "haystack": haystack,
            "sizes": {k: sorted(set(v)) for k, v in sizes.items()}}


def short_cells(fill: dict[str, float], haystack: dict[str, int],
                stats: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each file under TARGET: its fill, the tokens it falls short of L by, and the tokens of
    the sentence after its haystack (the one that did not fit: with whole sentences, a row
    cannot come closer to L)."""
    out = {}
    for key, value in sorted(fill.items()):
        if value >= TARGET:
            continue
        name, lang, _, L = key.split("/")
        tokens = stats[lang]["_tokens"][name]
        out[key] = {"fill": round(value, 4), "short": round(int(L) * (1 - value)),
                    "next_sentence": int(tokens[haystack[key] % len(tokens)])}
    return out


def landing_depths(tokens: np.ndarray, n: int) -> list[float]:
    """Where a needle drawn at each of the 40 depths lands in a haystack of the first n
    sentences (the book repeated when shorter): the share of the haystack's tokens before
    sentence int(n * depth / 100)."""
    book = len(tokens)
    reps, rest = divmod(n, book)
    cum = np.concatenate([[0], np.cumsum(tokens)])
    total_book = cum[-1]

    def before(k: int) -> float:
        full, part = divmod(k, book)
        return full * total_book + cum[part]

    total = reps * total_book + cum[rest]
    return [before(int(n * d / 100)) / total for d in DEPTHS]


def depth_table(stats: dict[str, dict[str, Any]], sizes: dict[str, list[int]],
                tokenizers: list[str], languages: list[str], lengths: tuple[int, ...]
                ) -> dict[str, dict[str, Any]]:
    """lang -> {"deciles": counts of landing depths per tenth, "max_gap": largest
    |landing - drawn|}, over every tokenizer, length and haystack size of the build."""
    table = {}
    for lang in languages:
        hist = [0] * DECILES
        gap = 0.0
        for name in tokenizers:
            tokens = stats[lang]["_tokens"][name]
            for L in lengths:
                for n in sizes[f"{name}/{lang}/{L}"][:1]:  # the sizes differ by a sentence
                    for d, at in zip(DEPTHS, landing_depths(tokens, n)):
                        hist[min(DECILES - 1, int(at * DECILES))] += 1
                        gap = max(gap, abs(at - d / 100))
        table[lang] = {"deciles": hist, "max_gap": round(gap, 4)}
    return table


def drawn_deciles(times: int) -> list[int]:
    hist = [0] * DECILES
    for d in DEPTHS:
        hist[min(DECILES - 1, int(d / 100 * DECILES))] += times
    return hist


# --- printing -----------------------------------------------------------------------------------

def _pair(before: Any, after: Any, fmt: str) -> str:
    if before is None:
        return format(after, fmt)
    return f"{format(before, fmt)}->{format(after, fmt)}"


def print_segments(now: dict, before: dict | None, tokenizers: list[str]) -> None:
    print("\n== segments: haystack sentences per book (tokens: p50 / p99 / max) ==")
    head = f"{'lang':5} {'count':>13}" + "".join(
        f" {name + ' p50/p99/max':>38}" for name in tokenizers)
    print(head)
    for lang, entry in now.items():
        old = (before or {}).get(lang)
        cells = [f"{_pair(old and old['count'], entry['count'], ',d'):>13}"]
        for name in tokenizers:
            new = "/".join(f"{v:,}" for v in entry[name])
            was = "/".join(f"{v:,}" for v in old[name]) + " -> " if old else ""
            cells.append(f"{was + new:>38}")
        print(f"{lang:5} " + " ".join(cells))


def print_fill(now: dict[str, float], before: dict[str, float] | None, tokenizers: list[str],
               languages: list[str], lengths: tuple[int, ...]) -> None:
    print(f"\n== fill: mean length / L per file (* under {TARGET}) ==")
    short = {"or_niah_single": "single", "or_niah_none": "none",
             "or_niah_multikey": "multikey", "or_niah_multivalue": "multivalue",
             "or_niah_multiquery": "multiquery"}
    width = 15 if before else 8
    for name in tokenizers:
        for L in lengths:
            print(f"\n{name} at L = {L}")
            print(f"{'lang':5}" + "".join(f" {short[t]:>{width}}" for t in NIAH))
            for lang in languages:
                cells = []
                for task in NIAH:
                    key = f"{name}/{lang}/{task}/{L}"
                    value = now[key]
                    was = (before or {}).get(key)
                    mark = "*" if value < TARGET else " "
                    cells.append(f"{_pair(was, value, '.3f') + mark:>{width}}")
                print(f"{lang:5}" + " ".join([""] + cells))
    cells = list(now.values())
    under = sorted((v, k) for k, v in now.items() if v < TARGET)
    print(f"\n{len(cells)} files: mean fill min {min(cells):.4f}, {len(under)} under {TARGET}"
          + (f" (lowest: {', '.join(f'{k} {v:.3f}' for v, k in under[:8])})" if under else ""))
    if before:
        old = [v for k, v in before.items() if k in now]
        print(f"before: min {min(old):.4f}, {sum(v < TARGET for v in old)} under {TARGET}")


def print_short(short: dict[str, dict[str, Any]]) -> None:
    if not short:
        return
    print(f"\nfiles under {TARGET}: fill, tokens short of L, tokens of the sentence that did "
          f"not fit")
    for key, cell in short.items():
        print(f"  {key:40} {cell['fill']:.3f} {cell['short']:>6} {cell['next_sentence']:>6}")


def print_depths(now: dict, before: dict | None, per_language: int) -> None:
    print("\n== depths: where needles drawn at the 40 grid depths land, per tenth of the "
          "context ==")
    print(f"drawn (every language): {drawn_deciles(per_language)} (uniform)")
    print(f"{'lang':5} {'landing, per tenth':>44} {'max gap':>8}"
          + (f" | {'before':>44} {'max gap':>8}" if before else ""))
    for lang, entry in now.items():
        line = f"{lang:5} {str(entry['deciles']):>44} {entry['max_gap']:>8.3f}"
        old = (before or {}).get(lang)
        if old:
            line += f" | {str(old['deciles']):>44} {old['max_gap']:>8.3f}"
        print(line)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=None,
                   help="build folder (reused: a rerun builds what is missing; default: a "
                        "temporary folder)")
    p.add_argument("--tokenizers", default="llama-3.1,qwen2.5")
    p.add_argument("--languages", default="all", help="comma-separated codes (default: all 26)")
    p.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    p.add_argument("--samples", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--sources", default=None, help="sources folder (else $RULER_SOURCES)")
    p.add_argument("--segments-only", action="store_true",
                   help="only the segments section (no build)")
    p.add_argument("--json", type=Path, default=None, help="write every figure here")
    p.add_argument("--before", type=Path, default=None,
                   help="an earlier run's --json, printed beside this run's")
    args = p.parse_args(argv)
    tokenizers = args.tokenizers.split(",")
    languages = list(LANGUAGES) if args.languages == "all" else args.languages.split(",")
    lengths = tuple(int(x) for x in args.lengths.split(","))
    before = json.loads(args.before.read_text()) if args.before else {}

    data = OnerulerData(resolve("oneruler", args.sources).path)
    toks = {name: load_tokenizer(name) for name in tokenizers}
    started = time.perf_counter()
    books = {lang: split_sentences(lang, data.book(lang)) for lang in languages}
    split_seconds = time.perf_counter() - started
    stats = segment_stats(books, toks)
    public = {lang: {k: v for k, v in e.items() if not k.startswith("_")}
              for lang, e in stats.items()}
    print(f"split {len(languages)} books in {split_seconds:.1f} s")
    print_segments(public, before.get("segments"), tokenizers)
    result: dict[str, Any] = {"segments": public, "split_seconds": round(split_seconds, 2)}
    if not args.segments_only:
        out = args.out or Path(tempfile.mkdtemp(prefix="oneruler-fill-"))
        print(f"\nbuilding into {out} ({len(tokenizers)} tokenizers x {len(languages)} "
              f"languages x {len(NIAH)} tasks x {len(lengths)} lengths x {args.samples} "
              f"samples)", flush=True)
        seconds = build_all(out, tokenizers, languages, lengths, args.samples, args.workers)
        grid = fill_grid(out, tokenizers, languages, lengths)
        print_fill(grid["fill"], before.get("fill"), tokenizers, languages, lengths)
        short = short_cells(grid["fill"], grid["haystack"], stats)
        print_short(short)
        depths = depth_table(stats, grid["sizes"], tokenizers, languages, lengths)
        print_depths(depths, before.get("depths"), len(tokenizers) * len(lengths))
        result.update(fill=grid["fill"], short=short, depths=depths,
                      build_seconds=round(seconds, 1))
        print(f"\nbuilt in {seconds:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
