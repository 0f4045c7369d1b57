"""Deliberate differences from upstream RULER: one line each, with the reason.

The dataset card's "Differences from upstream" section is rendered from this list only.
Each entry: (scope, what differs, why).
"""

from __future__ import annotations

DIFFERENCES: tuple[tuple[str, str, str], ...] = (
    ("all tasks",
     "every sample has its own RNG derived by sha256 from (seed, tokenizer, task, length, index)",
     "upstream draws from one global RNG after tokenizer-dependent length probes, so a sample "
     "changes when another length, task or tokenizer is built; here any subset reproduces the "
     "same rows"),
    ("all tasks",
     "each sample is fitted on its own to the largest haystack with length <= L, by a bounded "
     "search that always terminates (a clear error when even the smallest haystack does not fit)",
     "upstream sizes once per task and length, shrinks in a `while True` loop that hangs when "
     "nothing fits, and leaves samples several increments short: in upstream's own output for "
     "gemma-3 at L = 4096 (first 30 samples a task) niah_single_3, niah_multikey_1, "
     "niah_multivalue and niah_multiquery fill 86-88 % of L on average (down to 84 %), "
     "niah_single_2 97 %, qa_1 and qa_2 77-78 % (down to 57 %), where these rows fill 98-100 % "
     "on average: a model reads longer contexts here at the same nominal L"),
    ("all tasks",
     "`length` counts the exact ids the model is given: the tokenizer's own chat template "
     "(assistant turn pre-filled with the answer prefix), the answer prefix and the special "
     "tokens the tokenizer adds (e.g. BOS), plus tokens_to_generate",
     "upstream counts a hand-written template with `tokenize()`, which omits the BOS the model "
     "receives; `input` stays the raw prompt so one split serves chat and base models"),
    ("all tasks",
     "`index` is the sample number",
     "upstream's niah overwrote it with the character offset of the answer"),
    ("niah",
     "the singular rewrite (Some->A, are->is, ...) is applied to the task template only",
     "upstream applies it to the whole chat-wrapped template, altering chat-template text"),
    ("niah",
     "keys are unique within a sample (distractor keys never equal a queried key)",
     "upstream does not check, so a needle haystack can contain a second value for the key"),
    ("niah",
     "adjective-noun keys are drawn uniformly over (adjective, noun) pairs of the wonderwords "
     "2.2.0 lists by index arithmetic, not by materialising the sorted 6.2M-string list",
     "same distribution, without a 6.7 s, several-hundred-MB list per process"),
    ("vt",
     "variable names are unique within a sample (5-letter chain names; 3-letter example names, "
     "never \"VAR\"), and the example's value differs from the question's value",
     "upstream's de-duplication appends fresh names but slices the chains from the start of the "
     "list, so repeated names survive; its per-sample renaming of the example by str.replace "
     "can also rewrite other text"),
    ("vt",
     "the one-shot example's layout (noise lines fitted to 500 tokens, chain positions) is "
     "drawn once per build from the build seed and tokenizer; its names and value are drawn "
     "per sample from the sample's RNG",
     "upstream builds the example once per process from the global RNG and renames it per "
     "sample; the shape and placement (before the task text, blank line between) are kept"),
    ("cwe",
     "when a length needs more distinct words than the 8,169-word wonderwords 2.2.0 pool "
     "(above about 128K tokens), all words of the sample come from the `english-words` "
     "package's web2 list (234,450 lower-case alphabetic words)",
     "upstream's fallback list `json/english_words.json` is a git-LFS file whose source is not "
     "published"),
    ("cwe, fwe",
     "the word lists are shuffled per sample (numpy, seeded from the sample's RNG)",
     "upstream shuffles with a fresh random.Random(seed), so the positions of each frequency "
     "class repeat in every sample of a length; per-sample fitting gives samples different "
     "sizes anyway"),
    ("fwe",
     "the final sample is fitted and checked against the budget like every other task "
     "(size = the Zipf scale N, one word per unit)",
     "upstream's linear search in steps of L/32 does not re-check the final sample against L "
     "and leaves it short by up to a step (3% of L)"),
    ("fwe",
     "the Zipf scale is at least ceil(zeta(a) / (4^-a - 5^-a)) (74 for a = 2), so the three "
     "answers always occur strictly more often than every other coded word",
     "upstream does not check; a tie between ranks 4 and 5 would make the answer ambiguous"),
    ("qa_1, qa_2",
     "the gold slot follows upstream's rule (the question's documents first, then "
     "random.Random(build seed).shuffle, a permutation that depends only on the document "
     "count), but samples fitted to different document counts get different slots",
     "keeps upstream's positional rule so scores stay comparable; upstream sizes every sample "
     "of a length alike, so all of them share one slot"),
    ("qa_1, qa_2",
     "--samples beyond the questions in the source file is an error naming the file and its "
     "count; the pinned partial copies (SQuAD: 2,910 answerable questions, HotpotQA: 100) are "
     "recorded as non-official",
     "upstream indexes past the end of its question list, and its bare-except retry loop "
     "turns that IndexError into a hang"),
    ("qa_2",
     "gold documents (gold_spans, gold depths) are the question's supporting-fact paragraphs; "
     "all its paragraphs are still placed first, as upstream",
     "upstream records no gold positions; the supporting facts are the paragraphs that hold "
     "the answer"),
)
