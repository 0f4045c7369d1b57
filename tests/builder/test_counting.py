"""Piece counting (builder.counting) equals whole-prompt tokenization, or is not used.

The proof the builder relies on: for every registry tokenizer and every task, the token count
of a draft summed from its pieces, and the token positions of its gold spans, equal those of
tokenizing the whole prompt (chat template, answer prefix, special tokens). The guard for
other tokenizers: a tokenizer that merges across the junctions is detected, and its files are
counted whole, giving the same rows as `--exact-counts`.
"""

from __future__ import annotations

import json
import re

import pytest

from helpers.builds import build
from helpers.tasks import SEED, generator, tokenizer
from ruler.benchmarks.ruler.common_words import CommonWordsGenerator
from ruler.benchmarks.ruler.niah import _split_needle
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.benchmarks.ruler2 import prompt_mode as ruler2_prompt_mode
from ruler.benchmarks.ruler2.items import split_ids
from ruler.benchmarks.ruler2.niah import split_line
from ruler.builder.counting import ExactCounter, PieceCounter
from ruler.builder.tokenizer_registry import registry
from ruler.catalog import TASKS
from ruler.catalog.base import joined
from ruler.catalog.benchmarks import BENCHMARKS
from ruler.kernel.rng import sample_rng


def _offsets(d):
    return [a for a, _ in d.gold_spans] + list(d.context_span)


def _mode(tok, task: str) -> str:
    """The prompt mode a build of `task` counts in (RULERv2: the generation prompt)."""
    if task in BENCHMARKS["ruler2"]:
        return ruler2_prompt_mode(tok.has_chat_template)
    return tok.default_mode()


def _assert_counts_agree(gen, index: int, size: int) -> int:
    tok = gen.ctx.tokenizer
    mode = _mode(tok, gen.spec.name)
    fast, exact = PieceCounter(tok, mode), ExactCounter(tok, mode)
    rng = sample_rng(SEED, gen.ctx.tokenizer_name, gen.spec.name, gen.max_seq_length, index)
    d = gen.draft(index, rng, size)
    assert "".join(d.pieces) == d.input
    assert fast.prompt_length(d) == exact.prompt_length(d), (gen.spec.name, index, size)
    assert fast.token_positions(d, _offsets(d)) == exact.token_positions(d, _offsets(d))
    return len(d.pieces)


#: The fast tier's pairs: each kind of haystack and junction (noise, essay and needle
#: haystacks; word, number and UUID needles; vt, cwe, fwe, qa), each with another registry
#: tokenizer. The full suite proves every (task, tokenizer) pair.
FAST_PAIRS = {("niah_single_1", "llama-3.1"), ("niah_single_3", "qwen2.5"),
              ("niah_multikey_3", "mistral-nemo"), ("vt", "gemma-3"), ("cwe", "llama-2"),
              ("fwe", "gpt-4"), ("qa_1", "gpt-4o"),
              # RULERv2: needle lines with 10-digit values, MMLU questions (with solved
              # examples) and HotpotQA documents under 7-digit ids
              ("mv_niah_basic", "mistral-nemo"), ("mk_niah_hard", "llama-2"),
              ("qa_easy", "gpt-4"),
              # ONERULER (English here; every language below): book sentences with needles
              # (cut at their spaces), a numbered word list
              ("or_niah_multikey", "qwen2.5"), ("or_cwe_easy", "gemma-3")}


def _tasks_by_tokenizer():
    for task in TASKS:
        for tok in registry():
            slow = () if (task, tok) in FAST_PAIRS else (pytest.mark.slow,)
            yield pytest.param(task, tok, marks=slow, id=f"{task}-{tok}")


@pytest.mark.parametrize("task,tok_name", _tasks_by_tokenizer())
def test_piece_counts_equal_whole_prompt_counts(tok_name, task):
    gen = generator(task, tok_name, 4096)
    for index in range(3):
        for size in (gen.min_size, gen.min_size + 7 * gen.calibration_step):
            pieces = _assert_counts_agree(gen, index, size)
        assert pieces >= 4, "the draft is not cut into pieces, so nothing is proven"


@pytest.mark.parametrize("tok_name", [t if t == "llama-3.1"
                                      else pytest.param(t, marks=pytest.mark.slow)
                                      for t in registry()])
def test_piece_counts_hold_for_the_long_context_word_list(tok_name):
    """cwe beyond the wonderwords pool draws from the English word list (128K and up)."""
    gen = generator("cwe", tok_name, 131072)
    assert isinstance(gen, CommonWordsGenerator)
    assert _assert_counts_agree(gen, 0, len(gen.pool) + 50) > 40_000


def _vocabulary(tok) -> list[str]:
    from ruler.catalog.tokenizer import HFTokenizer, SentencePieceTokenizer, TiktokenTokenizer

    if isinstance(tok, HFTokenizer):
        return [tok.backend.decode([i]) for i in range(tok.backend.get_vocab_size())]
    if isinstance(tok, TiktokenTokenizer):
        return [b.decode("utf-8", "replace") for b in tok.enc.token_byte_values()]
    assert isinstance(tok, SentencePieceTokenizer)
    return [tok.sp.id_to_piece(i) for i in range(tok.sp.get_piece_size())]


def _needle_text_tokens(vocab: list[str]) -> list[str]:
    """The tokens that could lie inside a needle's key or value: made of letters, digits,
    "-", "." and spaces (not special tokens such as "<unused1>" or byte tokens "<0x0A>")."""
    return [t for t in vocab if re.fullmatch(r"[ \u2581A-Za-z0-9.\n-]+", t)]


@pytest.mark.parametrize("tok_name", list(registry()))
def test_no_token_spans_a_cut_inside_a_key_or_value(tok_name):
    """Why " bright" | "-lantern" and a UUID's " 3" | "f" | "2" | ... | "-bd" are clean
    junctions for every key, not only those sampled: a BPE merge (or unigram piece) across
    one would be a token holding a letter or digit then "-", a digit then a letter, or a
    letter then a digit."""
    vocab = _vocabulary(tokenizer(tok_name))
    assert len(vocab) > 30_000
    spanning = re.compile(r"[A-Za-z0-9]-|[0-9][A-Za-z]|[A-Za-z][0-9]")
    assert [t for t in _needle_text_tokens(vocab) if spanning.search(t)] == []


def _pre_tokenizer_patterns(tok) -> str:
    """The regular expressions a tokenizer splits pre-tokens with, as one string."""
    from ruler.catalog.tokenizer import HFTokenizer, TiktokenTokenizer

    if isinstance(tok, TiktokenTokenizer):
        return tok.enc._pat_str
    if isinstance(tok, HFTokenizer):
        return " ".join(re.findall(r'"Regex":\s*("(?:[^"\\]|\\.)*")',
                                   tok.backend.to_str())).encode().decode("unicode_escape")
    return ""


@pytest.mark.parametrize("tok_name", list(registry()))
def test_a_number_after_its_first_three_digits_is_a_clean_junction(tok_name):
    """Why " 123" | "4567.\n" is clean for every number, not only those sampled: either no
    token holds two digits (digits are tokens one by one), or the pre-tokenizer groups digits
    by at most three from the left of a run, so "123" ends a pre-token. Either way the digits
    after the cut group as they do after a newline, the anchor of a piece starting with a
    digit. Then the counts of sampled lines, edge numbers included, add up."""
    tok = tokenizer(tok_name)
    digit_pairs = [t for t in _needle_text_tokens(_vocabulary(tok)) if re.search(r"[0-9][0-9]", t)]
    assert digit_pairs == [] or r"\p{N}{1,3}" in _pre_tokenizer_patterns(tok), tok_name
    counter = PieceCounter(tok, "base")
    for number in (1000000, 1000001, 1999999, 4567890, 9999999, 9000000, 1234567):
        line = f"One of the special magic numbers for bright-lantern is: {number}.\n"
        pieces = _split_needle(line)
        assert pieces[-2:] == (f" {str(number)[:3]}", f"{str(number)[3:]}.\n")
        whole = tok.count(".\n" + line) - tok.count(".\n")  # in context, after a line
        assert sum(counter.piece_counts(list(pieces))) == whole, (tok_name, number)


@pytest.mark.parametrize("tok_name", list(registry()))
def test_ten_digit_values_and_seven_digit_ids_cut_by_three_digits_add_up(tok_name):
    """RULERv2's values (" 123" | "456" | "789" | "0.") and item ids (" 123" | "4567:") are
    cut as a needle value after its first three digits, then after every third: clean by the
    same argument (digits are tokens one by one, or pre-tokens of at most three from the
    left of a run). Edge numbers included, the counts of the parts add up."""
    tok = tokenizer(tok_name)
    counter = PieceCounter(tok, "base")
    for number in (1000000000, 1000000001, 9999999999, 1234567890, 9000000009, 4567890123):
        line = f"One of the special magic numbers for bright-lantern is: {number}.\n"
        pieces = split_line(line)
        assert "".join(pieces) == line and pieces[-4:] == (
            f" {str(number)[:3]}", str(number)[3:6], str(number)[6:9], f"{str(number)[9]}.\n")
        whole = tok.count(".\n" + line) - tok.count(".\n")
        assert sum(counter.piece_counts(list(pieces))) == whole, (tok_name, number)
    for id_ in (1000000, 9999999, 1234567, 9000009):
        for item, cuts in ((f"Question {id_}: What is 2+2? A. 1 B. 2\n\n", 4),
                           (f"Document {id_}:\nTitle\nBody 12.\n\n", 4),
                           (f"Please copy the Question {id_} from the context and then solve it "
                            f"with an answer from A, B, C, D.\nQuestion {id_}: What? A. 1 B. 2"
                            f"\nSolution: \\boxed{{A}}\n\n", 7)):
            pieces = split_ids(item)
            assert len(pieces) == cuts and "".join(pieces) == item
            whole = tok.count(".\n\n" + item) - tok.count(".\n\n")
            assert sum(counter.piece_counts(list(pieces))) == whole, (tok_name, item)


def test_a_needle_line_is_cut_the_same_by_the_one_match_path_and_word_by_word():
    import ruler.benchmarks.ruler.niah as niah

    lines = [f"One of the special magic {kind} for {key} is: {value}.{end}"
             for kind in ("numbers", "uuids") for end in ("", "\n")
             for key in ("bright-lantern", "a-b-c", "x", "3f2a9c1e-bd4f-4a1b-9c2d-aabbccddeeff")
             for value in ("1234567", "123", "12345678-3c6f-4f0e-9d43-5b7c2b1a8d11")]
    assert sum(bool(niah._WORD_KEY_NUMBER_LINE.fullmatch(line)) for line in lines) == 8
    fast = [_split_needle(line) for line in lines]
    with_words = [niah._split_needle_by_words(line) for line in lines]
    assert fast == with_words and all("".join(p) == line for p, line in zip(fast, lines))


def test_needle_lines_are_cut_before_key_value_and_at_an_adjective_noun_hyphen():
    line = "One of the special magic numbers for bright-lantern is: 1234567.\n"
    assert _split_needle(line) == ("One of the special magic numbers for", " bright",
                                   "-lantern", " is:", " 123", "4567.\n")
    uuid_line = ("One of the special magic uuids for 3f2a9c1e-bd4f-4a1b-9c2d-aabbccddeeff is: "
                 "12345678-3c6f-4f0e-9d43-5b7c2b1a8d11.\n")
    pieces = _split_needle(uuid_line)
    assert "".join(pieces) == uuid_line
    assert pieces[1:11] == (" 3", "f", "2", "a", "9", "c", "1", "e", "-bd", "4")
    assert pieces[pieces.index(" is:") + 1:][:4] == (" 123", "456", "78", "-3")
    assert pieces[-1] == "11.\n"


def test_one_tasks_one_off_pieces_do_not_evict_another_tasks_cache(monkeypatch):
    """Random numbers fill their task's scope; the words cached for cwe stay cached."""
    import ruler.builder.counting as counting

    monkeypatch.setattr(counting, "MAX_CACHED_PIECES", 300)
    monkeypatch.setattr(counting, "MAX_TOTAL_PIECES", 500)
    tok = tokenizer("llama-3.1")
    counter = PieceCounter(tok, tok.default_mode())
    words = [" lantern", " bright", " river", " meadow"] * 10
    counter.scope("cwe")
    counter.piece_counts(words)
    counter.scope("niah_multikey_2")
    for start in range(0, 1000, 100):  # 1,000 one-off numbers, 100 per draft
        counter.piece_counts([f" {n}." for n in range(10**6 + start, 10**6 + start + 100)])
    tokenized: list[str] = []
    real = tok.count_batch
    monkeypatch.setattr(tok, "count_batch", lambda texts: tokenized.extend(texts) or real(texts))
    counter.scope("cwe")
    assert counter.piece_counts(words) == [tok.count("." + w) - tok.count(".") for w in words]
    assert tokenized == []  # answered from the cache
    # the numbers' own scope was emptied when it reached its bound, never grew past it
    assert 0 < len(counter._scopes["niah_multikey_2"]) <= 300


def test_refined_counts_equal_counts_of_whole_pieces_even_when_refining_evicts(monkeypatch):
    """A new line counted from cached parts (Draft.refine) gets the count of the line itself;
    parts that overflow the scope empty it midway without losing the counts asked for."""
    import ruler.builder.counting as counting

    tok = tokenizer("llama-3.1")
    lines = [f"One of the special magic uuids for {k:08x}-bd4f-4a1b-9c2d-{k:012x} is: "
             f"{k * 7919:08x}-3c6f-4f0e-9d43-{k * 104729:012x}.\n" for k in range(60)]
    plain = PieceCounter(tok, "base").piece_counts(lines)
    assert plain == [tok.count(".\n" + line) - tok.count(".\n") for line in lines]
    monkeypatch.setattr(counting, "MAX_CACHED_PIECES", 200)
    refined = PieceCounter(tok, "base")
    assert refined.piece_counts(lines[:5], _split_needle) == plain[:5]
    # 254 distinct parts overflow the scope: refining empties it, evicting the 5 lines
    # already counted, whose counts are still returned
    assert refined.piece_counts(lines, _split_needle) == plain
    assert lines[0] not in refined._cache


def test_the_total_bound_evicts_the_largest_other_scope(monkeypatch):
    import ruler.builder.counting as counting

    monkeypatch.setattr(counting, "MAX_CACHED_PIECES", 300)
    monkeypatch.setattr(counting, "MAX_TOTAL_PIECES", 400)
    tok = tokenizer("llama-3.1")
    counter = PieceCounter(tok, tok.default_mode())
    for name, n in (("a", 250), ("b", 100), ("c", 100)):
        counter.scope(name)
        counter.piece_counts([f" {name}{i}" for i in range(n)])
    assert {k: len(v) for k, v in counter._scopes.items() if v} == {"b": 100, "c": 100}


def test_clean_units_with_empty_runs_are_cut_as_the_per_unit_path_cuts_them():
    import random

    rng = random.Random(0)
    for _ in range(300):
        units: list[str] = []
        for _ in range(rng.randint(2, 9)):  # empty runs, never two next to each other
            empty = rng.random() < 0.3 and (not units or units[-1] != "")
            units.append("" if empty else rng.choice(["Aa b.", "Needle c.", "D."]))
        opened = [" " + u for u in units[1:]]
        fast = joined("Head:\n", units, " ", "\nTail", clean=True, opened=opened)
        assert fast == joined("Head:\n", units, " ", "\nTail"), units


def test_pieces_are_cut_only_at_clean_junctions():
    text, pieces = joined("Head:\n", ["a b", "", "c", " d", "e"], " ", "\nTail")
    assert text == "Head:\na b  c  d e\nTail" == "".join(pieces)
    # the empty unit and the unit starting with a space are glued, never cut at whitespace
    assert pieces == ("Head:\na b  c  d", " e\n", "Tail")  # the tail after its newline
    text, pieces = joined("H\n", ["one", "two", " three", "four"], "\n", "\nT")
    assert pieces == ("H\none\n", "two\n three\n", "four\n", "T")
    _, pieces = joined("H\n", ["one", "two"], "\n", " \nT")  # no newline first: glued
    assert pieces == ("H\none\n", "two \nT")


def test_the_frame_ends_with_the_tail_alone_after_a_line_else_with_the_last_unit():
    """The frame joins pieces[1] to its end through a junction of the end's own kind."""
    lines = ("H\none\n", "two\n", "three\n", "four\n", "T?")
    words = ("H\n1.", " w1", " 2.", " w2\n", "T?")
    assert PieceCounter._frame_end(lines) == 4 and PieceCounter._frame_end(words) == 3
    assert PieceCounter._frame_end(("H\na", "-b", " c", "-d", " e\n", "T?")) == 4
    # after a letter, a piece opening with punctuation only where letter junctions hold
    unspaced = ("H\n他说", "。我说", "。你说", "。\n", "</T>")
    assert PieceCounter._frame_end(unspaced) == 2
    assert PieceCounter._frame_end(unspaced, letters=True) == 3


#: Tasks whose frame ends with the draft's last unit (the tail cannot follow pieces[1]
#: directly), each with another registry tokenizer: essay and book haystacks, word lists,
#: documents.
BRIDGED = [("niah_single_1", "llama-3.1"), ("niah_multivalue", "gemma-3"), ("cwe", "llama-2"),
           ("fwe", "gpt-4o"), ("qa_1", "qwen2.5"), ("or_niah_multikey", "mistral-nemo")]


@pytest.mark.parametrize("task,tok_name", BRIDGED)
def test_a_frame_counted_with_one_last_unit_counts_every_size_of_the_sample(task, tok_name):
    """The frame is tokenized with the first last unit seen and remembered without it: the
    other sizes of the sample (other last units) still count as whole prompts do."""
    gen = generator(task, tok_name, 4096)
    tok = gen.ctx.tokenizer
    mode = _mode(tok, task)
    fast, exact = PieceCounter(tok, mode), ExactCounter(tok, mode)
    step = gen.calibration_step
    for index in range(2):
        for size in (gen.min_size + 3 * step, gen.min_size + step, gen.min_size + 5 * step,
                     gen.min_size + 5 * step + 1):
            rng = sample_rng(SEED, gen.ctx.tokenizer_name, task, 4096, index)
            d = gen.draft(index, rng, size)
            assert fast.prompt_length(d) == exact.prompt_length(d), (task, index, size)


@pytest.mark.parametrize("task", ["niah_single_2", "cwe", "or_cwe"])
def test_the_probes_of_a_sample_tokenize_its_frame_once(task, monkeypatch):
    """Fitting a sample tokenizes a whole prompt for its smallest draft (too small to cut)
    and for its frame, not once per size probed (at e344ff3: once per probe, where the frame
    ended with the draft's last unit or started with a shuffled list's first item, or where
    the template's tail was glued to the last unit: ONERULER's " </List>")."""
    from ruler.builder.fitting import fit_sample

    gen = generator(task, "llama-3.1", 32768)
    tok = gen.ctx.tokenizer
    fast = PieceCounter(tok, tok.default_mode())
    calls = []
    monkeypatch.setattr(tok, "prompt_length",
                        lambda *a, _f=tok.prompt_length: calls.append(1) or _f(*a))
    for index in range(3):
        calls.clear()
        fitted = fit_sample(gen, index,
                            lambda: sample_rng(SEED, "llama-3.1", task, 32768, index),
                            fast.prompt_length, 32768)
        assert fitted.probes >= 4 and len(calls) <= 3, (index, fitted.probes, len(calls))


def _non_additive_tokenizer(folder):
    """A real BPE trained without pre-tokenization: its merges cross spaces and newlines."""
    from tokenizers import Tokenizer, models, trainers

    from ruler.benchmarks.ruler.noise import NOISE_SENTENCE

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    corpus = [(NOISE_SENTENCE + "\n") * 5] * 50 + [
        "Some special magic numbers are hidden within the following text. One of the special "
        "magic numbers for the key is: 1234567.\nWhat are all the special magic numbers?"] * 50
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=400,
                                                        special_tokens=["[UNK]"]))
    folder.mkdir()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]"}))
    return folder


@pytest.mark.build
def test_a_tokenizer_that_merges_across_junctions_is_counted_whole(tmp_path):
    from ruler.builder.tokenizer_registry import load_tokenizer
    from ruler.catalog import get_task, make_generator
    from ruler.catalog.context import BuildContext

    folder = _non_additive_tokenizer(tmp_path / "merging-bpe")
    tok = load_tokenizer(str(folder))
    gen = make_generator(get_task("niah_single_1"), BuildContext(tok, "merging-bpe", SEED), 1024)
    d = gen.draft(0, sample_rng(SEED, "merging-bpe", "niah_single_1", 1024, 0), 20)
    fast, exact = PieceCounter(tok, "base"), ExactCounter(tok, "base")
    assert fast.prompt_length(d) != exact.prompt_length(d)  # the shortcut would be wrong here

    kw = dict(tasks=["niah_single_1", "niah_multikey_2"], lengths=[1024], samples=3,
              workers=1)
    fast_report = build(tmp_path / "fast", str(folder), **kw)
    build(tmp_path / "exact", str(folder), exact_counts=True, **kw)
    by_task = {f.task: f for f in fast_report.files}
    assert by_task["niah_single_1"].exact_rows == 3  # every row of the file counted whole
    manifests = [json.loads((tmp_path / o / "manifest.json").read_text())["files"]
                 for o in ("fast", "exact")]
    assert {k: v["content_sha256"] for k, v in manifests[0].items()} == \
        {k: v["content_sha256"] for k, v in manifests[1].items()}


@pytest.mark.slow
def test_fast_and_exact_builds_write_the_same_rows(tmp_path):
    kw = dict(tasks=list(STANDARD_TASKS), lengths=[4096], samples=2)
    fast = build(tmp_path / "fast", "llama-2", **kw)
    build(tmp_path / "exact", "llama-2", exact_counts=True, **kw)
    assert all(f.exact_rows == 0 for f in fast.files)
    hashes = [{k: v["content_sha256"] for k, v in
               json.loads((tmp_path / o / "manifest.json").read_text())["files"].items()}
              for o in ("fast", "exact")]
    assert len(hashes[0]) == len(STANDARD_TASKS) and hashes[0] == hashes[1]


#: ONERULER's fast pairs: scripts and joiners the tokenizers split differently (Hangul,
#: Devanagari with its danda, Cyrillic with guillemets, Persian with ZWNJ, Tamil, Vietnamese
#: diacritics, CJK cut at letter junctions or counted whole), each with another registry
#: tokenizer.
ONERULER_FAST = {("ko", "llama-3.1"), ("hi", "qwen2.5"), ("ru", "gemma-3"),
                 ("fa", "mistral-nemo"), ("ta", "gpt-4o"), ("vi", "llama-2"), ("zh", "gpt-4"),
                 ("ta", "qwen2.5"), ("ja", "llama-3.1"), ("zh", "gemma-3")}


def _oneruler_pairs():
    from ruler.benchmarks.oneruler.languages import LANGUAGES

    for lang in LANGUAGES:
        for tok in registry():
            slow = () if (lang, tok) in ONERULER_FAST else (pytest.mark.slow,)
            yield pytest.param(lang, tok, marks=slow, id=f"{lang}-{tok}")


@pytest.mark.parametrize("lang,tok_name", _oneruler_pairs())
def test_piece_counts_hold_in_every_oneruler_language(lang, tok_name):
    """ONERULER's drafts in each language: sentences and needles joined by spaces (zh and
    ja, joined by nothing, cut at letter junctions where the tokenizer has them, else counted
    whole), numbered word lists. The sentences
    are the book's first ones (split from its start: the junctions are what matters)."""
    from helpers.paths import SOURCES
    from ruler.benchmarks.oneruler.data import OnerulerData
    from ruler.benchmarks.oneruler.languages import OnerulerLanguage
    from ruler.benchmarks.oneruler.sentences import split_sentences
    from ruler.catalog import get_task, make_generator
    from ruler.catalog.context import BuildContext

    language = OnerulerLanguage.mono(lang)
    ctx = BuildContext(tokenizer(tok_name), f"{tok_name}--oneruler-{lang}", SEED, str(SOURCES),
                       axes={"language": language})
    book = OnerulerData(SOURCES / "oneruler").book(lang)
    ctx._resources[f"oneruler:sentences:{lang}"] = split_sentences(lang, book[:60_000])
    for task in ("or_niah_multikey", "or_niah_none", "or_cwe_easy"):
        gen = make_generator(get_task(task), ctx, 8000)
        if lang in ("zh", "ja") and task.startswith("or_niah") \
                and not ctx.tokenizer.letter_junctions:
            rng = sample_rng(SEED, ctx.tokenizer_name, task, 8000, 0)
            assert gen.draft(0, rng, 60).pieces == ()  # counted whole
            continue
        for index in range(2):
            for size in (gen.min_size, gen.min_size + 3, 60):
                pieces = _assert_counts_agree(gen, index, size)
            assert pieces >= 4, "the draft is not cut into pieces, so nothing is proven"


# --- the letter junction (catalog.letter_junction): zh and ja text cut before punctuation ---

#: Letters of every kind a letter junction may follow: Latin (with a precomposed accent),
#: Greek, Cyrillic, Arabic, Devanagari, Hangul, Han, kana, the prolonged sound mark and the
#: iteration mark (both Lm), a title-case digraph (Lt).
_LETTERS = "aZéΩжبक한的说あカーー々ǅ"
#: What may follow an opener: letters, digits, spaces, a newline, ASCII punctuation, an
#: apostrophe and contraction, a combining mark, the voiced-sound mark, another opener, CJK.
_FOLLOWERS = ["他", "a", "1", "123", " ", "\n", ".", "'s", "\u0301", "\u3099", "」", "。", "",
              " x", "\u3000", "é", "ー", "[1]"]


def _openers() -> list[str]:
    """Every character `opens_after_letter` accepts in the Basic Multilingual Plane, and the
    supplementary planes' punctuation and symbols up to the emoji."""
    from ruler.catalog.letter_junction import opens_after_letter

    return [chr(c) for c in (*range(0x80, 0x10000), *range(0x10000, 0x1FB00))
            if not 0xD800 <= c < 0xE000 and opens_after_letter(chr(c))]


def _anchored_tokens(tok, texts: list[str]) -> list[list[int]]:
    """The tokens of each text as it is counted in the middle of a prompt: after ".\\n" (the
    anchor PieceCounter counts a piece starting with punctuation after), that anchor's
    tokens taken off; None where the anchor's own tokens change."""
    anchor = tok.encode(".\n")
    out = []
    for ids in tok.encode_batch([".\n" + t for t in texts]):
        out.append(ids[len(anchor):] if ids[:len(anchor)] == anchor else None)
    return out


def _letter_junction_violations(tok, texts: list[str]) -> list[str]:
    """The texts whose tokens are not the tokens of their parts cut at every letter junction
    (the first part as it is, each other part counted after the anchor)."""
    from ruler.catalog.letter_junction import opens_after_letter

    bad = []
    wholes = tok.encode_batch(texts)
    for text, whole in zip(texts, wholes):
        cuts = [i for i in range(1, len(text))
                if text[i - 1].isalpha() and opens_after_letter(text[i])]
        if not cuts:
            continue
        bounds = [0, *cuts, len(text)]
        parts = [text[a:b] for a, b in zip(bounds, bounds[1:])]
        tail = _anchored_tokens(tok, parts[1:])
        if None in tail or tok.encode(parts[0]) + sum(tail, []) != whole:
            bad.append(text)
    return bad


def _book_windows(lang: str, size: int = 1500) -> list[str]:
    from helpers.paths import SOURCES
    from ruler.benchmarks.oneruler.data import OnerulerData

    book = OnerulerData(SOURCES / "oneruler").book(lang)
    return [book[i:i + size] for i in range(0, min(len(book), 60_000), size)]


def _adversarial_strings() -> list[str]:
    """Every opener after a letter with something after it (the letters and followers in
    turn), then the common CJK and full-width ones after every letter before every
    follower, in runs, inside ASCII, after digits and before newlines."""
    openers = _openers()
    out = [_LETTERS[k % len(_LETTERS)] + o + _FOLLOWERS[k % len(_FOLLOWERS)]
           for k, o in enumerate(openers)]
    common = ("。、，；：！？「」『』（）《》〈〉【】…—“”‘’·～〜・"
              "＂＃％＆＊＋－／＜＝＞＠［］＾＿｀｛｜｝￥")
    out += [letter + o + f for letter in _LETTERS for o in common for f in _FOLLOWERS]
    out += ["他说。。。！？」他", "数字：1234567。", "abc。def", "ABC」\n\n「DEF",
            "ｆｕｌｌ。ｗｉｄｔｈ", "e\u0301。x", "か\u3099」", "ﾊﾟ。ｶ", "the cat's」 s", "钱…。",
            "<|eot_id|>字。", "[INST]字」", "字\n。\n字", "a\u200d。b", "字\u3000。字",
            # full stops that follow letters in other scripts: Urdu and Persian, Tibetan,
            # Ethiopic, Devanagari, Armenian
            "یہ کتاب ہے۔ وہ گیا۔", "این است۔ آن", "བོད་ཡིག་", "ሰላም ነው። እሺ", "यह है। वह",
            "Բարեւ։ Ինչ"]
    return out


@pytest.mark.parametrize("tok_name", [t for t in registry() if t not in ("llama-2", "gemma-3")])
def test_letter_junctions_hold_for_the_tokenizers_that_claim_them(tok_name):
    """The letter junction (catalog.letter_junction), proven where a tokenizer claims it: on
    ONERULER's zh and ja books (every junction of 40 windows of 1,500 characters each) and on
    every opener after letters of every kind before anything, the tokens of the whole are
    the tokens of the parts."""
    tok = tokenizer(tok_name)
    assert tok.letter_junctions
    texts = _book_windows("zh") + _book_windows("ja") + _adversarial_strings()
    assert _letter_junction_violations(tok, texts) == []


def test_the_letter_junction_check_fails_for_tokenizers_that_merge_across_it(tmp_path):
    """The check above is no formality: gemma-3 (a BPE over the whole text, no pre-tokenizer
    boundary) has tokens such as " ہے۔", "ས་" and "ል።" holding a letter and the full stop
    after it, and a BPE trained on the zh book without pre-tokenization merges "...了。";
    both fail it, and neither claims the junction."""
    from tokenizers import Tokenizer, models, trainers

    from ruler.catalog.tokenizer import HFTokenizer, TokenizerIdentity

    gemma = tokenizer("gemma-3")
    assert not gemma.letter_junctions
    assert len(_letter_junction_violations(gemma, _adversarial_strings())) >= 3
    bpe = Tokenizer(models.BPE(unk_token="[UNK]"))
    bpe.train_from_iterator(_book_windows("zh"), trainers.BpeTrainer(
        vocab_size=3000, special_tokens=["[UNK]"]))
    folder = tmp_path / "merging-bpe"
    folder.mkdir()
    bpe.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]"}))
    merging = HFTokenizer(folder, TokenizerIdentity("merging-bpe", "hf", "folder"),
                          direct=(bpe, None))
    assert not merging.letter_junctions
    assert len(_letter_junction_violations(merging, _book_windows("zh"))) > 20


def test_the_letter_junction_tokenizers_are_the_byte_level_bpes():
    assert {name for name in registry() if tokenizer(name).letter_junctions} == \
        {"llama-3.1", "qwen2.5", "mistral-nemo", "gpt-4", "gpt-4o"}


def test_no_pre_token_of_a_reviewed_pattern_holds_a_letter_junction():
    """Why the letter junction is a pre-token boundary for every text, not only those
    tried: no match of a reviewed pattern holds a letter followed by an opener (the
    pattern's letter runs end with letters), on the adversarial strings and the books."""
    import regex

    from ruler.catalog.letter_junction import REVIEWED_PATTERNS, opens_after_letter

    texts = _adversarial_strings() + _book_windows("zh") + _book_windows("ja")
    for pattern in REVIEWED_PATTERNS:
        compiled = regex.compile(pattern)
        for text in texts:
            matches = compiled.findall(text)
            assert "".join(matches) == text  # every character is in a pre-token
            assert not [m for m in matches if any(
                a.isalpha() and opens_after_letter(b) for a, b in zip(m, m[1:]))], text


def test_nfc_joins_nothing_across_a_letter_junction():
    """qwen2.5 normalizes to NFC first: an opener is never the second character of a
    canonical composition, never reordered (combining class 0), and NFC of a letter
    junction's text is NFC of its parts."""
    import unicodedata

    from ruler.catalog.letter_junction import opens_after_letter

    seconds = {d[1] for c in range(0x110000)
               if len(d := unicodedata.decomposition(chr(c)).split()) == 2
               and not d[0].startswith("<")}
    openers = _openers()
    assert not [o for o in openers if f"{ord(o):04X}" in seconds]
    assert all(unicodedata.combining(o) == 0 for o in openers)
    for text in _adversarial_strings():
        cuts = [i for i in range(1, len(text)) if text[i - 1].isalpha()
                and opens_after_letter(text[i])]
        bounds = [0, *cuts, len(text)]
        assert unicodedata.normalize("NFC", text) == "".join(
            unicodedata.normalize("NFC", text[a:b]) for a, b in zip(bounds, bounds[1:]))


def test_a_tokenizer_with_another_pre_tokenizer_or_normalizer_has_no_letter_junctions():
    """The claim is read from the tokenizer's own definition: the same BPE with its pattern
    changed, an NFKC normalizer, or an added token holding a junction loses it."""
    import copy

    from tokenizers import AddedToken, normalizers, pre_tokenizers

    from ruler.catalog.letter_junction import hf_has_letter_junctions

    backend = tokenizer("llama-3.1").backend
    assert hf_has_letter_junctions(backend)
    other = copy.deepcopy(backend)
    other.normalizer = normalizers.NFKC()
    assert not hf_has_letter_junctions(other)
    other = copy.deepcopy(backend)
    other.pre_tokenizer = pre_tokenizers.ByteLevel()
    assert not hf_has_letter_junctions(other)
    other = copy.deepcopy(backend)
    other.add_tokens([AddedToken("字。", special=False)])
    assert not hf_has_letter_junctions(other)


@pytest.mark.parametrize("lang", ["zh", "ja"])
def test_unspaced_drafts_are_cut_before_each_units_closing_punctuation(lang):
    """A zh or ja needle draft is cut at letter junctions (about one piece per sentence) for a
    tokenizer that has them, and not at all for one that does not."""
    from helpers.paths import SOURCES
    from ruler.benchmarks.oneruler.languages import OnerulerLanguage
    from ruler.catalog import get_task, make_generator
    from ruler.catalog.context import BuildContext

    for tok_name, cut in (("llama-3.1", True), ("gemma-3", False)):
        ctx = BuildContext(tokenizer(tok_name), f"{tok_name}--oneruler-{lang}", SEED,
                           str(SOURCES), axes={"language": OnerulerLanguage.mono(lang)})
        gen = make_generator(get_task("or_niah_single"), ctx, 8000)
        d = gen.draft(0, sample_rng(SEED, ctx.tokenizer_name, "or_niah_single", 8000, 0), 80)
        if not cut:
            assert d.pieces == ()
            continue
        assert "".join(d.pieces) == d.input and len(d.pieces) > 60
        assert all(p[:1] in "\n<" or not p[:1].isalpha() for p in d.pieces[1:])
