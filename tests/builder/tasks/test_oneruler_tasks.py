"""ONERULER's generators against upstream's rules (notes/oneruler.md), restated here apart from
the code under test: every language's prompt as upstream's `niah.py` renders it from the
prompt files, needles in the language's form, keys and the none-word as upstream draws them,
the CWE list and its frequencies, and the deliberate differences: exact budgets, per-sample
seeds, distinct keys, the Vietnamese CWE template with one list."""

from __future__ import annotations

import json
import random
import re
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from helpers.paths import SOURCES
from helpers.tasks import tokenizer
from ruler.benchmarks.oneruler.cwe import cwe_template
from ruler.benchmarks.oneruler.data import OnerulerData
from ruler.benchmarks.oneruler.languages import DICTIONARY, LANGUAGES, OnerulerLanguage
from ruler.benchmarks.oneruler.sentences import split_sentences, splitter_sentences
from ruler.builder.fitting import fit_sample
from ruler.catalog import get_task, make_generator
from ruler.catalog.context import BuildContext
from ruler.catalog.depths import DEPTHS
from ruler.kernel.errors import RulerError
from ruler.kernel.rng import sample_rng

DATA = SOURCES / "oneruler"
TOK = "llama-3.1"


def parts(lang: str) -> dict:
    return json.loads((DATA / "prompt" / lang / "niah.txt").read_text(encoding="utf-8"))


def upstream_prompt(ctx: str, inst: str, q: int, context: str, queries: list[str]) -> str:
    """niah.py's template, as its code builds it: the instruction language's parts, the
    zh/ja rule keyed on the context language, one `format` over the whole."""
    t = parts(inst)
    kind = "single" if q == 1 else "multi"
    if ctx in ["zh", "ja"]:
        question = t[f"question_{kind}_numbers"] + t["please_list"] + t["if_no_numbers"]
        answer = t["answer_prefix"] + t["answer_numbers"]
    else:
        question = t[f"question_{kind}_numbers"] + " " + t["please_list"] + " " + \
            t["if_no_numbers"]
        answer = t["answer_prefix"] + " " + t["answer_numbers"]
    fields = {"query1": queries[0]} if q == 1 else {"query1": queries[0], "query2": queries[1]}
    return (t["task"] + question + answer).format(context=context, **fields)


def upstream_needle(lang: str, key: str, value: str) -> str:
    stop = {"zh": "。", "ja": "。", "fa": "۔"}.get(lang, ".")
    return parts(lang)["needle_numbers"].format(key=key, value=value).rstrip() + stop


def nouns(lang: str, cross_lingual: bool = False) -> list[str]:
    df = pd.read_csv(DATA / "vocab/100_noun_list_translated.tsv", sep="\t")
    if cross_lingual:
        df = df.drop([21, 28, 42, 64, 65])
    return [n.strip() for n in df[lang].dropna().tolist()]


def context_for(language: str, fast_book: bool = True) -> BuildContext:
    """A build context for `language`; `fast_book`: the haystack is the book's first
    sentences by the regex (enough for the template checks, without splitting whole books)."""
    lang = OnerulerLanguage.parse(language)
    ctx = BuildContext(tokenizer(TOK), f"{TOK}--oneruler-{lang.code}", 42, str(SOURCES),
                       axes={"language": lang})
    if fast_book:
        book = OnerulerData(DATA).book(lang.context)[:4000]
        ctx._resources[f"oneruler:sentences:{lang.context}"] = tuple(
            s.strip() for s in re.split(r"(?<=[?.!])\s+", book.strip()))
    return ctx


def draft(task: str, ctx: BuildContext, index: int = 0, size: int = 5, L: int = 8000):
    gen = make_generator(get_task(task), ctx, L)
    return gen, gen.draft(index, sample_rng(42, ctx.tokenizer_name, task, L, index), size)


def needles_of(d) -> list[str]:
    """The needle units of a draft: its gold spans' texts (and, for the others, below)."""
    return [d.input[a:b] for a, b in d.gold_spans]


# --- the data, read as upstream's pandas code reads it --------------------------------------------

def test_tables_read_as_pandas_reads_them():
    data = OnerulerData(DATA)
    for lang in LANGUAGES:
        assert list(data.nouns.keys(lang)) == nouns(lang)
        assert list(data.nouns.keys(lang, cross_lingual=True)) == nouns(lang, True)
    for lang, name in DICTIONARY.items():
        df = pd.read_csv(DATA / f"vocab/dictionaries/{name}/{name}.csv", dtype={"words": str},
                         header=0).dropna(subset=["words"])
        df = df[~df["words"].str.contains(r"\d", regex=True)]
        words = [w for pos in ("noun", "adjective", "verb") for w in df[df.pos == pos].words]
        assert data.dictionary_words(lang) == words, lang


def test_books_split_as_the_reference_run_split_them():
    """The sentence counts the reference README gives for sentencex 1.0.32 (and upstream's
    regex for sw, which stanza lacks): the splitter's, before the haystack's long-segment rule
    (tests/builder/tasks/test_oneruler_sentences.py)."""
    data = OnerulerData(DATA)
    counts = {lang: len(splitter_sentences(lang, data.book(lang)))
              for lang in ("en", "zh", "ja", "ko", "sw", "st")}
    assert counts == {"en": 6273, "zh": 1797, "ja": 2510, "ko": 221, "sw": 1254, "st": 1529}


# --- templates, needles, keys ---------------------------------------------------------------------

@pytest.mark.parametrize("language", [*LANGUAGES, "en-ko", "zh-en", "ko-ja", "sw-fa"])
def test_every_language_is_upstreams_prompt(language):
    lang = OnerulerLanguage.parse(language)
    ctx = context_for(language)
    for task, q in (("or_niah_single", 1), ("or_niah_multiquery", 2)):
        gen, d = draft(task, ctx)
        needles = needles_of(d)  # in the context's order; the answer lists the asked order
        found = []
        for value in d.outputs:
            keys = [k for k in dict.fromkeys(nouns(lang.context, lang.cross_lingual))
                    if upstream_needle(lang.context, k, value) in needles]
            assert len(keys) == 1, (needles, value)
            found.append(keys[0])
        if lang.cross_lingual:  # the first row whose context entry is the key: its translation
            df = pd.read_csv(DATA / "vocab/100_noun_list_translated.tsv",
                             sep="\t").drop([21, 28, 42, 64, 65])
            found = [df[df[lang.context].str.strip() == k][lang.instructions].values[0].strip()
                     for k in found]
        a, b = d.context_span
        assert d.input == upstream_prompt(lang.context, lang.instructions, q, d.input[a:b], found)
        assert d.answer_prefix == ""


def test_zh_context_joins_the_question_parts_without_spaces():
    """Observed upstream (zh-en): '…provided text?Please list all that apply.If no such…'."""
    _, d = draft("or_niah_single", context_for("zh-en"))
    assert "provided text?Please list all that apply.If no such numbers exist" in d.input
    _, d = draft("or_niah_single", context_for("en"))
    assert "format:\n <Answer>" in d.input  # the space after the newline, as upstream's


def test_the_context_joins_sentences_and_needles_as_upstream():
    """upstream: sep.join([seg0, needle0, seg1, ..., seg_k]), seg_i = sep.join(the sentences
    between two cuts), cuts int(n * depth / 100) for depths of the 40-point grid; sep " " (""
    for zh and ja), so a needle at depth 0 leaves a leading space; the haystack is the book's
    first n sentences."""
    assert list(DEPTHS) == [int(x) for x in np.round(np.linspace(0, 100, num=40))]
    n = 12
    for language in ("en", "zh"):
        ctx = context_for(language, fast_book=False)
        sents = split_sentences(language, OnerulerData(DATA).book(language))
        sep = "" if language == "zh" else " "
        needle = re.compile(re.escape(parts(language)["needle_numbers"].rstrip())
                            .replace(r"\{key\}", "(?:" + "|".join(map(re.escape, nouns(language)))
                                     + ")").replace(r"\{value\}", "[0-9]{7}")
                            + ("。" if language == "zh" else r"\."))
        leading = 0
        for index in range(40):
            _, d = draft("or_niah_multikey", ctx, index=index, size=n)
            context = d.input[d.context_span[0]:d.context_span[1]]
            spans = [m.span() for m in needle.finditer(context)]
            assert len(spans) == 4
            ends = [0, *(e for _, e in spans)]
            texts = [context[a:b] for a, b in zip(ends, [*(s for s, _ in spans), len(context)])]
            if sep:  # the separators on both sides of each needle
                texts = [t[1:] if i else t for i, t in enumerate(texts)]
                texts = [t[:-1] if i < len(texts) - 1 else t for i, t in enumerate(texts)]
                leading += context.startswith(" ")
            cut, units = 0, []
            for i, t in enumerate(texts):
                end = cut
                while sep.join(sents[cut:end]) != t:
                    end += 1
                    assert end <= n, (index, t[:40])
                units.extend(sents[cut:end] if end > cut else [""])
                if i < len(spans):
                    units.append(context[spans[i][0]:spans[i][1]])
                cut = end
            assert cut == n and context == sep.join(units)
        assert language == "zh" or leading  # some sample has a needle at depth 0


@pytest.mark.parametrize("language", ["ta", "sw", "fa", "en-sw"])
def test_two_needles_never_share_a_key(language):
    """17 languages translate two nouns alike (ko 달 = month, moon; sw kioo = glass, mirror);
    upstream samples by position, so two needles can carry one key (here 2 or 3 such pairs:
    about 1 sample in 140 to 280 would). Here never, nor cross-lingually one asked word
    (en-sw: glass and mirror are both asked as kioo)."""
    lang = OnerulerLanguage.parse(language)
    ctx = context_for(language)
    words = nouns(lang.context, lang.cross_lingual)
    assert len(set(words)) < len(words) or lang.cross_lingual
    gen = make_generator(get_task("or_niah_multikey"), ctx, 8000)
    needle = re.compile(upstream_needle(lang.context, "KEY", "1234567").replace(
        "1234567", "[0-9]{7}").replace("KEY", "(" + "|".join(map(re.escape, words)) + ")"))
    for index in range(2500):
        d = gen.draft(index, sample_rng(42, ctx.tokenizer_name, "or_niah_multikey", 8000,
                                        index), 4)
        keys = needle.findall(d.input)
        asked = [gen.translate[k] for k in keys]
        assert len(keys) == 4 and len(set(asked)) == 4, (index, keys)


def test_niah_none_asks_an_absent_key_and_answers_the_instruction_languages_none():
    for language in ("ko", "en-ko", "ja"):
        lang = OnerulerLanguage.parse(language)
        ctx = context_for(language)
        for index in range(20):
            gen, d = draft("or_niah_none", ctx, index=index)
            assert d.outputs == (parts(lang.instructions)["none"],) and d.gold_spans == ()
            asked = re.search(re.escape(parts(lang.instructions)["question_single_numbers"])
                              .replace(r"\{query1\}", "(.+?)"), d.input).group(1)
            present = [k for k in gen.keys if gen.translate[k] == asked]
            assert present and not any(
                upstream_needle(lang.context, k, v) in d.input for k in present
                for v in re.findall(r"[0-9]{7}", d.input))


def test_every_sample_draws_from_its_own_seed():
    """Upstream reseeds 42 per task and language: sample 0 of niah_single is 2867825 in every
    language, niah_none's sample 0 has niah_multikey's needles. Here each (config, task,
    length, index) has its own stream."""
    values = {lang: draft("or_niah_single", context_for(lang))[1].outputs
              for lang in ("en", "ko", "zh", "sw")}
    assert len(set(values.values())) == 4 and ("2867825",) not in values.values()
    ctx = context_for("en")
    numbers = [set(re.findall(r"[0-9]{7}", draft(t, ctx)[1].input))
               for t in ("or_niah_multikey", "or_niah_none")]
    assert numbers[0] and not numbers[0] & numbers[1]
    again = draft("or_niah_multikey", context_for("en"))[1]
    assert again == draft("or_niah_multikey", ctx)[1]  # and the same again


def test_values_are_seven_digits_and_distinct_within_a_sample():
    ctx = context_for("fr")
    for index in range(50):
        _, d = draft("or_niah_multivalue", ctx, index=index)
        assert len(d.outputs) == 4 and len(set(d.outputs)) == 4
        assert all(re.fullmatch(r"[1-9][0-9]{6}", v) for v in d.outputs)


# --- budgets ----------------------------------------------------------------------------

@pytest.mark.parametrize("language,task,L", [("ko", "or_niah_multivalue", 3000),
                                             ("zh", "or_niah_single", 3000),
                                             ("ru", "or_cwe", 4000),
                                             ("hi", "or_cwe_easy", 8000)])
def test_the_whole_prompt_and_the_answer_budget_fit_L_exactly(language, task, L):
    """Upstream sizes the book text alone to L (its rows run 8,252-8,599 tokens at 8192); here
    the prompt as the model reads it (chat template) + tokens_to_generate <= L, and one more
    unit would not fit."""
    ctx = context_for(language, fast_book=False)
    tok = ctx.tokenizer
    gen = make_generator(get_task(task), ctx, L)

    def count(d):
        return tok.prompt_length(d.input, d.answer_prefix)

    for index in range(2):
        fitted = fit_sample(gen, index, lambda: sample_rng(42, ctx.tokenizer_name, task, L,
                                                           index), count, L)
        d = fitted.draft
        assert fitted.length == count(d) + gen.tokens_to_generate <= L
        bigger = gen.draft(index, sample_rng(42, ctx.tokenizer_name, task, L, index), d.size + 1)
        assert count(bigger) + gen.tokens_to_generate > L


# --- CWE ----------------------------------------------------------------------------

def test_cwe_frequencies_switch_at_8000_as_upstreams():
    ctx = context_for("de", fast_book=False)
    for task, short, full in (("or_cwe", (10, 5), (20, 10)), ("or_cwe_easy", (10, 1), (30, 3))):
        for L, freq in ((8000, short), (8001, full), (8192, full)):
            gen = make_generator(get_task(task), ctx, L)
            d = gen.draft(0, sample_rng(42, ctx.tokenizer_name, task, L, 0), 40)
            items = re.findall(r"(?:^| )[0-9]+\. (\S+?)(?= [0-9]+\. | </)",
                               d.input[d.context_span[0] - 1:d.context_span[1] + 3])
            counts = Counter(items)
            assert {counts[w] for w in d.outputs} == {freq[0]}, (task, L)
            assert {c for w, c in counts.items() if w not in d.outputs} == {freq[1]}
            assert len(counts) == 40 and len(items) == 10 * freq[0] + 30 * freq[1]


def test_the_vietnamese_template_lists_the_words_once():
    raw = (DATA / "prompt/vi/cwe.txt").read_text(encoding="utf-8")
    fixed = cwe_template(raw)
    assert raw.count("{context}") == 2 and fixed.count("{context}") == 1
    assert "\\n" not in fixed and raw.startswith(fixed.split("\n\n")[0])
    assert fixed == raw.replace(
        "\\n{context}\\nCâu hỏi: 10 từ phổ biến nhất trong danh sách trên là gì?", "")
    en = (DATA / "prompt/en/cwe.txt").read_text(encoding="utf-8")
    assert cwe_template(en) == en  # the other 25 are used as they are
    ctx = context_for("vi", fast_book=False)
    gen = make_generator(get_task("or_cwe"), ctx, 8000)
    d = gen.draft(0, sample_rng(42, ctx.tokenizer_name, "or_cwe", 8000, 0), 20)
    assert len(re.findall(r"(?<![0-9])1\. ", d.input)) == 1


def test_cwe_words_are_upstreams_pool_and_the_answer_its_first_draws():
    """The pool: sorted(set(nouns + adjectives + verbs)), shuffled by Random(42); every word
    of a list from it; the answer the 10 common words."""
    ctx = context_for("sw", fast_book=False)
    gen = make_generator(get_task("or_cwe"), ctx, 8000)
    words = sorted(set(OnerulerData(DATA).dictionary_words("sw")))
    random.Random(42).shuffle(words)
    assert gen.pool == tuple(words) and len(words) == 2237
    en = make_generator(get_task("or_cwe"), context_for("en", fast_book=False), 8000)
    assert len(en.pool) == 8169  # wonderwords 2.2.0
    d = gen.draft(3, sample_rng(42, ctx.tokenizer_name, "or_cwe", 8000, 3), 30)
    assert len(d.outputs) == 10 and set(d.outputs) <= set(words)


def test_a_dictionary_that_runs_out_keeps_every_word_as_upstream():
    """Upstream stops at the whole dictionary ("run out of vocabs") and keeps the row short
    of L; so does this (here with a 40-word pool at 4000 tokens)."""
    ctx = context_for("fi", fast_book=False)
    pool = tuple(OnerulerData(DATA).dictionary_words("fi")[:40])
    ctx._resources["oneruler:cwe-pool:fi:42"] = pool
    gen = make_generator(get_task("or_cwe_easy"), ctx, 4000)
    tok = ctx.tokenizer
    fitted = fit_sample(gen, 0, lambda: sample_rng(42, ctx.tokenizer_name, "or_cwe_easy", 4000, 0),
                        lambda d: tok.prompt_length(d.input, ""), 4000)
    assert fitted.draft.size == 40 and fitted.length < 2000


def test_cross_lingual_configs_have_no_cwe():
    with pytest.raises(RulerError, match="no cross-lingual setting"):
        draft("or_cwe", context_for("en-ko"))
