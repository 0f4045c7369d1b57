"""ONERULER's deliberate differences from upstream's generator, and the measurements of its
haystack sentences and fill the card reports."""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

#: ONERULER's haystack sentences per book: (the splitter's, the haystack's after the long-segment
#: rule of `tasks.oneruler_sentences`); equal where no segment is over its language's limit.
#: tests/builder/tasks/test_oneruler_sentences.py splits the books to check them.
ONERULER_SENTENCES: Mapping[str, tuple[int, int]] = MappingProxyType({
    "cs": (1412, 2316), "da": (815, 1664), "de": (2469, 12311), "en": (6273, 6273),
    "es": (799, 9435), "fa": (757, 757), "fi": (4261, 4261), "fr": (33029, 33503),
    "hi": (3050, 5391), "hu": (6695, 6695), "it": (4580, 4699), "ja": (2510, 4073),
    "ko": (221, 289), "nl": (1910, 4300), "no": (3019, 5739), "pl": (15427, 15427),
    "pt": (6278, 7846), "ru": (18123, 22800), "sr": (701, 701), "st": (1529, 1529),
    "sv": (9528, 9528), "sw": (1254, 1254), "ta": (6481, 7916), "uk": (1475, 1475),
    "vi": (525, 929), "zh": (1797, 1797),
})

#: The longest haystack sentence per book in tokens of (llama-3.1, qwen2.5): the splitter's
#: alone, then the haystack's (`python -m perf.oneruler_fill --segments-only` prints them).
ONERULER_LONGEST: Mapping[str, tuple[tuple[int, int], tuple[int, int]]] = MappingProxyType({
    "cs": ((9802, 12836), (737, 937)), "da": ((5424, 5432), (986, 985)),
    "de": ((72962, 72736), (990, 991)), "en": ((321, 321), (321, 321)),
    "es": ((63553, 63238), (736, 734)), "fa": ((452, 638), (452, 638)),
    "fi": ((276, 278), (276, 278)), "fr": ((6133, 6116), (914, 905)),
    "hi": ((4708, 8402), (527, 925)), "hu": ((419, 422), (419, 422)),
    "it": ((3822, 3820), (465, 465)), "ja": ((14212, 13038), (838, 770)),
    "ko": ((1906, 2123), (128, 145)), "nl": ((60742, 61220), (692, 696)),
    "no": ((6869, 6874), (962, 967)), "pl": ((207, 199), (207, 199)),
    "pt": ((24798, 24670), (858, 855)), "ru": ((7225, 8040), (903, 983)),
    "sr": ((319, 345), (319, 345)), "st": ((382, 383), (382, 383)),
    "sv": ((243, 243), (243, 243)), "sw": ((862, 876), (862, 876)),
    "ta": ((6808, 5643), (911, 748)), "uk": ((142, 168), (142, 168)),
    "vi": ((3949, 3930), (961, 963)), "zh": ((922, 783), (922, 783)),
})

#: The effect on fill (a row's length / L), per language and length: the least mean over the
#: 5 NIAH tasks and the two tokenizers (llama-3.1, qwen2.5; 2 rows a file) with the
#: splitter's whole sentences alone (ruler c6c1213), then with the long-segment rule and the
#: top-up of a row that whole sentences leave under 0.99 of L by the next sentence's words
#: (`OnerulerNiahGenerator.top_up_below`); measured by `python -m perf.oneruler_fill`
#: (its --before/--json): 1,560 files, least mean 0.990, none under 0.99 (was 354).
ONERULER_FILL: Mapping[str, Mapping[int, tuple[float, float]]] = MappingProxyType({
    "cs": {4096: (0.886, 0.994), 8000: (0.955, 0.993), 8192: (0.933, 0.995),
           32000: (0.997, 0.998), 64000: (0.975, 0.994), 128000: (0.988, 0.999)},
    "da": {4096: (0.983, 0.992), 8000: (0.923, 1.000), 8192: (0.901, 1.000),
           32000: (0.964, 0.998), 64000: (0.999, 0.999), 128000: (0.995, 0.999)},
    "de": {4096: (0.974, 0.997), 8000: (0.987, 0.993), 8192: (0.979, 1.000),
           32000: (0.997, 0.997), 64000: (0.999, 0.999), 128000: (0.999, 0.999)},
    "en": {4096: (0.990, 0.994), 8000: (0.996, 0.996), 8192: (0.996, 0.996),
           32000: (0.999, 0.999), 64000: (1.000, 1.000), 128000: (1.000, 1.000)},
    "es": {4096: (0.524, 0.993), 8000: (0.268, 0.994), 8192: (0.262, 0.993),
           32000: (0.067, 0.996), 64000: (0.767, 0.999), 128000: (0.993, 1.000)},
    "fa": {4096: (0.930, 0.999), 8000: (0.986, 0.990), 8192: (0.991, 0.991),
           32000: (0.989, 0.991), 64000: (0.997, 0.997), 128000: (0.999, 0.999)},
    "fi": {4096: (0.998, 0.998), 8000: (0.996, 0.996), 8192: (0.997, 0.997),
           32000: (0.999, 0.999), 64000: (1.000, 1.000), 128000: (1.000, 1.000)},
    "fr": {4096: (0.957, 1.000), 8000: (0.975, 1.000), 8192: (0.995, 0.995),
           32000: (0.998, 0.998), 64000: (0.999, 0.999), 128000: (1.000, 1.000)},
    "hi": {4096: (0.844, 0.993), 8000: (0.986, 0.995), 8192: (0.996, 0.996),
           32000: (0.997, 0.997), 64000: (0.997, 0.997), 128000: (0.996, 0.999)},
    "hu": {4096: (0.956, 0.992), 8000: (0.992, 0.992), 8192: (0.980, 0.990),
           32000: (0.997, 0.997), 64000: (0.999, 0.999), 128000: (1.000, 1.000)},
    "it": {4096: (0.967, 0.995), 8000: (0.995, 0.995), 8192: (0.996, 0.996),
           32000: (0.997, 0.997), 64000: (0.948, 0.999), 128000: (0.999, 0.999)},
    "ja": {4096: (0.992, 0.992), 8000: (0.992, 0.992), 8192: (0.996, 0.996),
           32000: (0.998, 0.998), 64000: (0.926, 1.000), 128000: (0.998, 1.000)},
    "ko": {4096: (0.623, 0.993), 8000: (0.993, 0.993), 8192: (0.998, 0.998),
           32000: (0.998, 0.998), 64000: (0.999, 0.999), 128000: (0.999, 0.999)},
    "nl": {4096: (0.477, 0.993), 8000: (0.244, 0.992), 8192: (0.239, 0.994),
           32000: (0.061, 0.999), 64000: (1.000, 1.000), 128000: (1.000, 1.000)},
    "no": {4096: (0.988, 0.993), 8000: (0.994, 0.994), 8192: (0.998, 0.998),
           32000: (0.999, 0.999), 64000: (0.980, 1.000), 128000: (0.998, 0.999)},
    "pl": {4096: (0.987, 0.994), 8000: (0.995, 0.995), 8192: (0.998, 0.998),
           32000: (0.999, 0.999), 64000: (0.999, 0.999), 128000: (0.999, 0.999)},
    "pt": {4096: (0.989, 0.995), 8000: (0.990, 0.995), 8192: (0.998, 0.998),
           32000: (0.998, 0.998), 64000: (0.999, 0.999), 128000: (1.000, 1.000)},
    "ru": {4096: (0.984, 0.993), 8000: (0.994, 0.994), 8192: (0.992, 0.992),
           32000: (0.999, 0.999), 64000: (0.998, 0.998), 128000: (0.995, 0.998)},
    "sr": {4096: (0.952, 0.993), 8000: (0.989, 0.993), 8192: (0.994, 0.994),
           32000: (0.999, 0.999), 64000: (0.999, 0.999), 128000: (0.999, 0.999)},
    "st": {4096: (0.980, 0.991), 8000: (0.991, 0.991), 8192: (0.991, 0.991),
           32000: (0.994, 0.994), 64000: (0.998, 0.998), 128000: (0.999, 0.999)},
    "sv": {4096: (0.991, 0.991), 8000: (0.994, 0.994), 8192: (0.998, 0.998),
           32000: (0.999, 0.999), 64000: (0.998, 0.998), 128000: (1.000, 1.000)},
    "sw": {4096: (0.992, 0.992), 8000: (0.995, 0.995), 8192: (0.996, 0.996),
           32000: (0.997, 0.997), 64000: (0.999, 0.999), 128000: (0.999, 0.999)},
    "ta": {4096: (0.968, 0.996), 8000: (0.982, 0.990), 8192: (0.982, 0.993),
           32000: (0.996, 0.996), 64000: (0.996, 0.996), 128000: (0.999, 0.999)},
    "uk": {4096: (0.992, 0.992), 8000: (0.996, 0.996), 8192: (0.996, 0.996),
           32000: (0.997, 0.997), 64000: (0.999, 0.999), 128000: (0.999, 0.999)},
    "vi": {4096: (0.975, 0.996), 8000: (0.906, 0.994), 8192: (0.885, 0.995),
           32000: (0.957, 0.999), 64000: (0.991, 0.999), 128000: (0.999, 0.999)},
    "zh": {4096: (0.991, 0.991), 8000: (0.993, 0.993), 8192: (0.997, 0.997),
           32000: (0.998, 0.998), 64000: (0.998, 0.998), 128000: (1.000, 1.000)},
})

#: ONERULER (mungg/OneRuler @ a3fe6af): what differs from upstream's generator and what it does,
#: as measured on upstream's own output ($RULER_SHARED/reference/oneruler: llama-3.1 at 8192, en,
#: zh, ru, ko, hi, sw x 7 tasks, 20 rows each, made with sentencex in stanza's place;
#: perf/oneruler_reference.py prints the comparison) and on the data. The card's
#: ONERULER section renders this list only.
ONERULER_DIFFERENCES: tuple[tuple[str, str, str], ...] = (
    ("all 7 tasks",
     "`length` counts the whole prompt as the model reads it (the tokenizer's chat template "
     "where it has one) plus tokens_to_generate (30 NIAH, 50 CWE), and it is at most L; each "
     "sample is fitted on its own to the most book sentences (NIAH) or distinct words (CWE) "
     "that fit",
     "upstream sizes the book text alone to L (task text, question and needles come on top) "
     "and keeps the first CWE list that reaches L: its llama-3.1 rows at 8192 count "
     "8,252-8,599 tokens (NIAH, + 30) and 8,192-8,568 (CWE) without any template, so all 840 "
     "exceed L as the model reads them. Fill by upstream's own count: NIAH 1.007-1.050 "
     "upstream, 0.993-0.999 here; CWE 1.000-1.046 upstream, 0.980-0.993 here. At 8192 the "
     "haystack holds 2-12 sentences fewer (en 211-212 vs 220, zh 312-314 vs 316, ko 219-222 "
     "vs 226, sw 216-218 vs 228)"),
    ("all 7 tasks",
     "every sample has its own RNG from (seed, config, task, length, index); upstream's fixed "
     "shuffles (a fresh `Random(seed)` for the needles and for the CWE list) are kept",
     "upstream seeds one global stream with 42 for every task and language: in its rows all "
     "20 samples of niah_single, multikey, multivalue and multiquery have the same answers in "
     "all 6 languages (sample 0 of niah_single is 2867825 in each) and niah_none's sample i "
     "is niah_multikey's sample i with another question; here 0 of 20 share an answer across "
     "the 6 languages, and depths are drawn per language (mean gold depth of multikey, 20 "
     "rows: 0.32-0.42 upstream, the same draws in every language; 0.39-0.65 here)"),
    ("NIAH",
     "books are split into sentences by sentencex (pinned in constraints.txt, its version in "
     "each build's identity) for the 24 languages upstream splits with stanza; sw and st by "
     "upstream's own regex, which upstream always uses for them (stanza has no model); then "
     "a segment longer than its language's limit (1,000 tokens at the book's density, in "
     "characters) is cut at every sentence end inside it, a piece still over the limit at its "
     "clauses, commas or spaces: 15 books change (cs da de es fr hi it ja ko nl no pt ru ta "
     "vi), 11 are split exactly as the splitter splits them",
     "stanza downloads unpinned models at run time, and when that fails upstream silently uses"
     " the regex, which finds 1 sentence in zh and ja (their contexts then hold only the "
     "needles). sentencex holds a quotation open until it closes, so alone it gave 'sentences'"
     " of up to 72,962 tokens (de; es 63,553, nl 60,742, pt 24,798): rows stopped short (es at"
     " 32000: 0.067 of L, nl 0.061) and needles could not land inside them. With the rule the "
     "longest is 991 tokens and the least mean fill of a NIAH file (2 tokenizers, 26 "
     "languages) with whole sentences is 0.923 at 8000, 0.989 at 32000, 0.994 at 64000, 0.998 "
     "at 128000 (was 0.244, 0.061, 0.767, 0.988); sentences: en 6,273 (regex 8,000), zh 1,797 "
     "(1), ja 2,510 -> 4,073 (1), ko 221 -> 289 (301), es 799 -> 9,435 (9,430), de 2,469 -> "
     "12,311 (12,231); stanza's own boundaries cannot be measured offline. Every haystack here"
     " is still the book's first n sentences joined as upstream's (a short row then topped up:"
     " the next entry)"),
    ("NIAH",
     "a row that the most whole sentences that fit leave under 0.99 of L takes the words of "
     "the next sentence (zh, ja: its characters) that still fit, cut at a word's end, as one "
     "more haystack sentence for the needles' depths; a row at 0.99 or more keeps its whole "
     "sentences (and its bytes)",
     "upstream's haystack is whole sentences and overshoots L (it does not count the template "
     "and needles); fitted to L with whole sentences alone, a row falls short by up to the "
     "sentence after its haystack, an ordinary 100-300 tokens at 8000 (Danish: a quoted "
     "passage of 834): 354 of 1,560 NIAH files (26 languages x 5 tasks x 6 lengths, 4096 to "
     "128000, 2 tokenizers) were under 0.99 with the sentences as the splitter gives them, 173 "
     "with the long-segment rule, 0 with the top-up (least mean fill 0.990; at 8000 the "
     "least was 0.923, da). The rows this changes are only those under 0.99 (llama-3.1 at "
     "8000: the NIAH rows of da, fr, pt, ta)"),
    ("NIAH",
     "no two needles of a row share a key string, nor, cross-lingually, the word the question "
     "asks them by; a row's values are distinct",
     "17 languages translate two of the 100 nouns alike (ko 달 = month, moon; sw kioo, mwezi, "
     "bustani; fa 3 pairs) and upstream draws keys by position: 0.12 % of its niah_multikey "
     "and niah_none rows carry two needles under one key in a language with one such pair, "
     "0.24 % (ja, ta) and 0.36 % (fa, sw) with more, 0.02-0.06 % of niah_multiquery rows; "
     "half of those ask that key, an ambiguous question. Cross-lingually (only earth, field, "
     "house, month, moon are dropped) 15 en-X pairs still ask two keys by one word (en-sw: "
     "glass, mirror -> kioo; 0.13-0.27 % of rows). Equal values: 7e-7 of multivalue rows"),
    ("cwe, cwe_easy (vi)",
     "the Vietnamese cwe.txt's leftover first paragraph (`\\n{context}\\nCâu hỏi: ...?` with "
     "literal backslash-n) is removed: the list appears once",
     "upstream's Vietnamese prompt holds the word list twice, so half as many words fit: with "
     "llama-3.1 at 8000 (its 8K) 131 distinct words instead of 263 (cwe, 10/5) and 628 "
     "instead of 1,286 (cwe_easy, 10/1); at 8192 64 instead of 128 (20/10), 157 instead of "
     "378 (30/3)"),
    ("cwe, cwe_easy",
     "a sample's words are the first n of the sample's own random permutation of the pool "
     "(the distribution of upstream's `random.sample`); where L needs more words than the "
     "dictionary has, the row holds them all, shorter than L, as upstream's ('run out of "
     "vocabs')",
     "with llama-3.1 a whole dictionary's cwe_easy list is shorter than 128000 tokens in es, "
     "fa, ko, st, sw, vi, zh (45,427-122,154 tokens) and than 64000 in ko, st, sw, zh: those "
     "rows fill less of L, upstream's too; cwe's lists (20/10) fit 128K in every language"),
    ("cross-lingual",
     "configs `<tokenizer>--oneruler-<context>-<instructions>` hold the 5 NIAH tasks",
     "upstream's CWE refuses `--xling` (prepare.py then fails with UnboundLocalError); the "
     "zh/ja joining rule stays keyed on the context language, as upstream's"),
)
