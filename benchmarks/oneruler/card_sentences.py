"""The card's part of the ONERULER section on the haystack's sentences: how each book is cut
(the splitter, then the long-segment rule), how many sentences that gives beside the splitter
alone, the longest sentence and the fill the rule brought, for the folder's context
languages; rendered from `ruler.benchmarks.oneruler.sentences` and the measured tables of
`ruler.benchmarks.oneruler.differences`."""

from __future__ import annotations

from typing import Iterable

from ruler.benchmarks.oneruler.differences import (
    ONERULER_FILL,
    ONERULER_LONGEST,
    ONERULER_SENTENCES,
)
from ruler.benchmarks.oneruler.sentences import MAX_SEGMENT_CHARS, SEGMENT_TOKENS, splitter_of
from ruler.cards.render import table


def _arrow(before, after, fmt: str) -> str:
    return format(after, fmt) if before == after else \
        f"{format(before, fmt)} → {format(after, fmt)}"


def changed_languages(languages: Iterable[str] = ONERULER_SENTENCES) -> list[str]:
    """The languages whose haystack sentences are not the splitter's."""
    return [lang for lang in languages
            if ONERULER_SENTENCES[lang][0] != ONERULER_SENTENCES[lang][1]]


def sentences_section(contexts: list[str]) -> str:
    """The subsection for the books of these context languages."""
    lengths = sorted({L for fills in ONERULER_FILL.values() for L in fills})
    rows = []
    for lang in contexts:
        before, after = ONERULER_SENTENCES[lang]
        by_tokenizer = ONERULER_LONGEST[lang]
        rows.append([f"`{lang}`", splitter_of(lang), f"{MAX_SEGMENT_CHARS[lang]:,}",
                     _arrow(before, after, ",d"),
                     " / ".join(_arrow(b, a, ",d") for b, a in zip(*by_tokenizer)),
                     *(_arrow(*ONERULER_FILL[lang][L], ".3f") for L in lengths)])
    books = table(["language", "split by", "limit (characters)",
                   "sentences (splitter → haystack)",
                   "longest sentence, tokens (llama-3.1 / qwen2.5)",
                   *(f"fill at {L}" for L in lengths)], rows)
    changed = changed_languages(contexts)
    longest = max(n for _, after in ONERULER_LONGEST.values() for n in after)
    return f"""### ONERULER haystack sentences

A NIAH row's haystack is its book's first n sentences (and, in a row they leave short, the
start of the next) and its needles go between sentences,
so a sentence's size bounds how close a row comes to L and where a needle can land. The
splitter (sentencex, pinned; upstream's own regex for sw and st, as upstream) holds a
quotation open until it closes, and some books open quotes they never close (Don Quixote's
`»` continuing a speech, the Dutch diary's `‘`, Kokoro's `「`): alone it returns "sentences"
of up to 248,697 characters (73,000 tokens), and rows whose length falls inside one stop
short (Spanish and Dutch at 32000: 0.07 of L). Here a segment longer than its language's
limit is cut at every sentence end inside it (a full stop, `!`, `?`, `…`, `।`, `؟`, `۔` or
`。！？`, with any closing quotes, before a character that is not a lower-case letter), and a
piece still over the limit is halved at its clauses (`;`, `:`, a dash between spaces), else
commas, else spaces, never inside a word. The limit is {SEGMENT_TOKENS:,} tokens at the
book's density (the more token-hungry of llama-3.1 and qwen2.5), in characters, so the
sentences are the same for every tokenizer; every haystack sentence of the 26 books then
holds at most {SEGMENT_TOKENS:,} tokens of either (the longest: {longest:,}). A book whose
segments are all within its limit is split exactly as the splitter splits it, and its rows
are unchanged. Rows changed by the rule (wherever a row reaches a cut segment) in this
folder's languages: {", ".join(f"`{lang}`" for lang in changed) or "none"}.

Fill is a row's length / L, the least mean over the 5 NIAH tasks and llama-3.1 and qwen2.5
(2 rows a file), with the splitter's whole sentences alone → with the rule and the top-up
(`python -m perf.oneruler_fill`). Whole sentences leave a row short of L by up to the
sentence after its haystack (at 8000 an ordinary sentence of 100 to 300 tokens costs 0.01 to
0.04 of L; Danish: a quoted passage of 834 tokens, 0.08): a row that whole sentences leave
under 0.99 of L takes the words of that sentence (zh, ja: its characters) that still fit, cut
at a word's end, and a row at 0.99 or more keeps its whole sentences.

{books}
"""
