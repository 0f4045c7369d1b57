"""What the builder does differently from upstream HEAD for declared RULER tasks (the paper's
Section 5 suites), measured on a build's rows: the figures the card's differences quote.

Per config, for each declared task the manifest records:
- variable tracking: the gold answer's tokens (its names joined by " ", the least a right
  answer writes) with the config's tokenizer, against upstream's 30 and the row's budget;
  with several chains, how many rows show an example whose chains share the asked value
  (upstream HEAD: every one) and whose shown answer is the chain holding it;
- needles with UUID values: the gold answer's tokens (values joined by ", ") against 128;
- common words without the example: rows whose prompt starts with a newline (HEAD: all).

Prints figures; asserts nothing.

    python -m perf.suite_differences OUT
"""

from __future__ import annotations

import argparse
import re
import statistics
from pathlib import Path

from ruler.builder.manifest import Manifest
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.eval.records.dataset import open_dataset

UPSTREAM_VT_BUDGET, UPSTREAM_NIAH_BUDGET = 30, 128
_VAR = re.compile(r"VAR ([A-Z]+) = (?:VAR ([A-Z]+)|(\d+))")
_MAIN = "Memorize and track the chain(s) of variable assignment hidden in the following text."


def _spread(counts: list[int]) -> str:
    return f"{min(counts)}-{max(counts)} (median {statistics.median(counts):g})"


def _example_chains(text: str) -> tuple[dict[str, list[str]], list[str], str]:
    """The example's chains by value, the names its answer shows, and the asked value."""
    icl = text[:text.rindex(_MAIN)]
    value_of: dict[str, str] = {}
    for name, src, value in _VAR.findall(icl):
        value_of[name] = value or value_of.get(src, "")
    chains: dict[str, list[str]] = {}
    for name, value in value_of.items():
        chains.setdefault(value, []).append(name)
    asked = re.findall(r"assigned the value (\d+)", icl)[-1]
    shown = icl.rsplit("they are: ", 1)[1].split()
    return chains, shown, asked


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path, help="a build folder holding declared RULER tasks")
    args = p.parse_args(argv)
    manifest = Manifest.load(args.out)
    ds = open_dataset(str(args.out))
    for config in manifest.configs():
        build = manifest.build(config)
        declared = build.declared_tasks or {}
        tok = load_tokenizer(build.tokenizer.name)
        for f in ds.files(config, list(declared)):
            rec = declared[f.task]
            rows = ds.rows(f, ("input", "outputs", "tokens_to_generate"))
            where = f"{config} {f.task} L={f.max_seq_length} ({len(rows)} rows)"
            budget = int(rows[0]["tokens_to_generate"])
            if rec.task == "variable_tracking":
                counts = [tok.count(" ".join(r["outputs"])) for r in rows]
                over = sum(n > UPSTREAM_VT_BUDGET for n in counts)
                print(f"{where}: answer tokens {_spread(counts)}; {over} over upstream's "
                      f"{UPSTREAM_VT_BUDGET}, {sum(n > budget for n in counts)} over {budget}")
                if int(rec.args.get("num_chains", 1)) > 1:
                    shared = right = 0
                    for r in rows:
                        chains, shown, asked = _example_chains(r["input"])
                        shared += len(chains.get(asked, [])) > len(shown)
                        right += sorted(chains.get(asked, [])) == sorted(shown)
                    print(f"{where}: example chains sharing the asked value in {shared} rows; "
                          f"the example's answer is the chain holding it in {right}")
            elif rec.task == "niah" and rec.args.get("type_needle_v") == "uuids":
                counts = [tok.count(", ".join(r["outputs"])) for r in rows]
                print(f"{where}: answer tokens {_spread(counts)}; "
                      f"{sum(n > UPSTREAM_NIAH_BUDGET for n in counts)} over upstream's "
                      f"{UPSTREAM_NIAH_BUDGET}, {sum(n > budget for n in counts)} over {budget}")
            elif rec.task == "common_words_extraction" and rec.args.get("num_fewshot") == 0:
                starts = sum(r["input"].startswith("\n") for r in rows)
                examples = sum(r["input"].count("Below is a numbered list") - 1 for r in rows)
                print(f"{where}: prompts starting with a newline {starts}; solved examples "
                      f"{examples}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
