"""The card's ONERULER section: its configs and languages, tasks (upstream's names beside
ours), how length and the budgets relate, its source and what is known of the data's licence
and each book's copyright, and its differences from upstream with their measured effect;
rendered from the catalog, the manifest, `ruler.benchmarks.oneruler.licences` and
`ONERULER_DIFFERENCES`. "" for a folder without a ONERULER config."""

from __future__ import annotations

from ruler.benchmarks.oneruler import LENGTHS as ONERULER_LENGTHS
from ruler.benchmarks.oneruler.card_sentences import sentences_section
from ruler.benchmarks.oneruler.differences import ONERULER_DIFFERENCES
from ruler.benchmarks.oneruler.files import COMMIT
from ruler.benchmarks.oneruler.licences import (
    BOOK_SOURCE,
    BOOKS,
    CODE_LICENCE,
    DATA_LICENCE,
    oneruler_configs,
    unknown_book_languages,
)
from ruler.benchmarks.oneruler.sentences import SPLITTER, splitter_of
from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS
from ruler.benchmarks.oneruler.tasks import UPSTREAM_NAMES as ONERULER_UPSTREAM_NAMES
from ruler.builder.manifest import Manifest
from ruler.cards.render import table
from ruler.catalog.tasks import TASKS

#: What each task asks.
_ASKS = {
    "or_niah_single": "the value of the one needle's key",
    "or_niah_none": "a key no needle has (4 needles): the answer is the language's none-word",
    "or_niah_multikey": "the value of one key among 4 needles",
    "or_niah_multivalue": "the 4 values of one key",
    "or_niah_multiquery": "the values of 2 keys (2 needles)",
    "or_cwe": "the 10 most frequent words (20 vs 10 repeats; 10 vs 5 at L <= 8000)",
    "or_cwe_easy": "the 10 most frequent words (30 vs 3 repeats; 10 vs 1 at L <= 8000)",
}


def oneruler_section(manifest: Manifest) -> str:
    configs = oneruler_configs(manifest)
    if not configs:
        return ""
    built = {f.task for c in configs for f in manifest.files_of(c)}
    tasks = table(["task", "upstream's name", "asks for", "tokens_to_generate", "in this repo"],
                  [[f"`{t}`", f"`{ONERULER_UPSTREAM_NAMES[t]}`", _ASKS[t],
                    TASKS[t].tokens_to_generate, "yes" if t in built else "no"]
                   for t in ONERULER_TASKS])
    languages = table(["config", "context (book, needles, keys)",
                       "instructions (task, question, none-word)", "sentences split by"],
                      [[f"`{c}`", f"`{lang.context}`", f"`{lang.instructions}`",
                        SPLITTER[splitter_of(lang.context)] + ", long segments cut"]
                       for c, lang in configs.items()])
    contexts = sorted({lang.context for lang in configs.values()})
    books = table(["language", "book (upstream's file)", "copyright status"],
                  [[f"`{lang}`", f"`{BOOKS[lang].file}`",
                    BOOKS[lang].status or "unknown (not stated upstream)"] for lang in contexts])
    unknown = unknown_book_languages(contexts)
    differences = table(["scope", "what differs", "measured effect"], ONERULER_DIFFERENCES)
    lengths = "/".join(map(str, ONERULER_LENGTHS))
    return f"""## ONERULER

ONERULER (Kim, Russell, Karpinska, Iyyer, 2025: "One ruler to measure them all: Benchmarking
multilingual long-context language models"; code: GitHub mungg/OneRuler) adapts RULER to 26
languages with translated prompts: 7 tasks, NIAH in five forms (one of which, `niah_none`,
may have no answer: the right reply is the language's none-word) and common-words extraction
in two, over each language's book, plus a cross-lingual setting (the context in one
language, the instructions in another). Upstream generates them per model on the fly; here
they are built once, exactly, per tokenizer and language: config
`<tokenizer>--oneruler-<lang>` holds a language's 7 tasks,
`<tokenizer>--oneruler-<context>-<instructions>` a cross-lingual pair's 5 NIAH tasks, and the
manifest's build entry says `"benchmark": "oneruler"` and the language(s).

{languages}

- `input` is the whole prompt as upstream renders it: the instruction language's `task`,
  question and answer-format parts of `prompt/<lang>/niah.txt` (or the whole `cwe.txt`)
  around the context; `answer_prefix` is empty (upstream's answer-format part ends the
  prompt); `outputs` are upstream's answers (the values, the 10 words, or for `or_niah_none`
  the instruction language's none-word).
- `length` = the prompt as the model reads it (the tokenizer's chat template where it has
  one) + `tokens_to_generate`, at most L, as in RULER; upstream's rows are longer than their
  nominal length (see the differences).
- `metric` is `oneruler`: upstream's `eval/evaluate.py`, so scores compare with the paper's.
  `ruler score --metric oneruler_corrected` rescores with its documented flaws fixed (case,
  whole words, numbers written with separators).
- Lengths: any; upstream's are {lengths} (not powers of two: `--lengths oneruler`, the
  default of `ruler build --benchmark oneruler`), and its CWE uses other word frequencies at
  L <= 8000, so cwe at 8192 is not cwe at 8000.

Build them with `ruler build --benchmark oneruler --tokenizer <tokenizer> --languages ko,en-ko`
after `ruler sources fetch oneruler`; load with
`load_dataset(<repo>, "<tokenizer>--oneruler-ko", split="8000")`.

{tasks}

{sentences_section(contexts)}
### ONERULER data and licences

The data (books, translated prompts, the 100 translated key nouns, 25 CWE dictionaries) is
upstream's `OneRuler/data/` at commit `{COMMIT}`, 104 files, each sha256-pinned
(`ruler sources fetch oneruler`; source `oneruler` in Provenance). English CWE words are
wonderwords 2.2.0's lists.

- Code: {CODE_LICENCE}.
- Data (prompts, nouns, dictionaries, books): {DATA_LICENCE}.
- Books: {BOOK_SOURCE}. Per language, for the books this folder's configs hold:

{books}

Copyright status unknown for: {", ".join(f"`{lang}`" for lang in unknown) or "none"}. `ruler
release` of ONERULER configs refuses until `--acknowledge-book-status` names exactly these
languages: check that you may redistribute each book before you do.

### ONERULER differences from upstream

{differences}

"""
