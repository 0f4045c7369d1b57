"""The worker makes `ruler verify`'s row checks before a file is written (builder.row_checks):
a row far below its benchmark's fill promise is refused by the build, a row that holds all of
its task's inputs is kept and said so, and the answer checks read the build's own sources."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from helpers.builds import build, rows
from helpers.paths import SOURCES
from ruler.benchmarks.oneruler import resources as oneruler_resources
from ruler.builder.pipeline import BuildConfig
from ruler.builder.pipeline.recipe import BuildRecipe
from ruler.builder.pipeline.worker import Worker
from ruler.builder.row_checks import RowRules, row_findings
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.builder.verify.run import verify
from ruler.catalog.benchmarks import FillPromise, get_benchmark
from ruler.catalog.checks import check_row, with_build
from ruler.catalog.variants import NoContext
from ruler.kernel.errors import RulerError


def test_the_fill_promise_allows_one_unit_short_at_short_lengths():
    promise = FillPromise(share=0.9, tokens=1024)
    assert promise.problem(900, 1000) is None  # 0.90 of L
    assert promise.problem(600, 1500) is None  # 900 short: one MMLU question at 1K
    assert promise.problem(2162, 32000) == (
        "fill 0.068 (2,162 of 32,000 tokens): rows of this benchmark fill at least 0.9 of L "
        "or fall short by at most 1,024 tokens")
    assert promise.problem(28_000, 32000) is not None  # 0.875, 4,000 short
    for benchmark in ("ruler", "ruler2", "oneruler"):
        assert get_benchmark(benchmark).fill == promise


def test_tasks_whose_units_are_documents_promise_no_fill():
    """A QA row falls short of L by up to one document, as upstream's: HotpotQA's first 100
    questions hold a paragraph of 1,494 llama-3.1 tokens (a 4K row at 0.64 of L)."""
    assert RowRules.of("gpt-4", "niah_single_1", 4096).fill is not None
    assert RowRules.of("gpt-4", "qa_2", 4096).fill is None
    assert RowRules.of("gpt-4", "qa_1", 4096).fill is None
    assert RowRules.of("gpt-4--v2", "qa_basic", 4096).fill is None


def test_a_variant_without_the_haystack_promises_no_fill():
    assert RowRules.of("gpt-4", "niah_single_1", 4096).fill is not None
    assert RowRules.of("gpt-4--nocontext", "niah_single_1", 4096, NoContext()).fill is None


def _oneruler_worker(tmp_path: Path, language: str, sentences: tuple[str, ...] | None = None,
                     tokenizer: str = "qwen2.5", **kw) -> Worker:
    cfg = BuildConfig(tokenizer=tokenizer, benchmark="oneruler", axes={"language": language},
                      lengths=(8000,), samples=1, out=tmp_path, **kw)
    recipe = BuildRecipe.from_config(cfg, load_tokenizer(tokenizer))
    ctx = recipe.context()
    if sentences is not None:  # a book whose second "sentence" is a whole quoted chapter
        ctx._resources[f"oneruler:sentences:{language}"] = sentences
    return Worker(recipe, ctx=ctx)


@pytest.mark.build
def test_the_build_refuses_a_row_far_below_its_fill(tmp_path, monkeypatch):
    """What sentencex's 60,000-token Spanish "sentences" did at 8000: a row at 0.27 of L,
    written and passed by every check. (Made here with the top-up of a short row by the next
    sentence's words turned off: with it, the generator fills such a row itself.)"""
    from ruler.benchmarks.oneruler.niah import OnerulerNiahGenerator

    monkeypatch.setattr(OnerulerNiahGenerator, "top_up_below", None)
    opening = "«Hola», dijo el cura. Y se fue a casa."
    chapter = " ".join(["Era una noche oscura y el viento soplaba sobre la llanura."] * 800)
    worker = _oneruler_worker(tmp_path, "es", (opening, chapter, opening))
    with pytest.raises(RulerError) as e:
        worker.make_row("or_niah_single", 8000, 0)
    assert "task or_niah_single, L=8000, sample 0: fill 0.0" in str(e.value)
    assert "rows of this benchmark fill at least 0.9 of L" in str(e.value)


@pytest.mark.build
def test_the_worker_checks_answers_against_the_builds_own_sources(tmp_path, monkeypatch):
    """`--sources DIR` alone names the data: the row check reads the prompt files the build
    read (not $RULER_SOURCES, unset here, nor the cache)."""
    monkeypatch.delenv("RULER_SOURCES")
    monkeypatch.setenv("RULER_CACHE", str(tmp_path / "empty-cache"))
    worker = _oneruler_worker(tmp_path, "sw", sources_dir=str(SOURCES))
    made = worker.make_row("or_niah_multikey", 3000, 0)
    assert made.row["length"] <= 3000 and not made.short_at_bound
    # verify's own check looks where builds look without --sources: not here
    oneruler_resources._check_data.cache_clear()  # a folder another test found
    assert check_row(with_build(made.row, {"language": "sw"})).startswith(
        "cannot check against the prompt files")


@pytest.mark.slow  # end to end: a build and a verify, some 4 s
@pytest.mark.build
def test_rows_that_hold_all_their_inputs_are_kept_and_said_so(tmp_path, capsys):
    """zh's CWE dictionary (2,173 words x 33) makes some 45,000 llama-3.1 tokens: cwe_easy at
    128000 holds them all and is short of L, as upstream's. The build keeps it and its
    summary says so; verify notes it and passes."""
    from ruler.commands.main import main

    out = tmp_path / "out"
    assert main(["build", "--tokenizer", "llama-3.1", "--benchmark", "oneruler", "--languages",
                 "zh", "--tasks", "or_cwe_easy", "--lengths", "128000", "--samples", "1",
                 "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "note: 1 file(s) hold rows that fill less of L than the benchmark promises, kept " \
           "because they hold all of their task's inputs" in printed
    (row,) = rows(out, "llama-3.1--oneruler-zh", "or_cwe_easy", 128000)
    assert row["length"] < 0.9 * 128000
    report = verify(out, load=False)
    assert report.ok, report.all_problems()
    (file,) = report.files
    assert file.notes == ["1 row(s) fill less of L than the benchmark promises: they hold all "
                          "of the task's inputs (kept, as upstream keeps them)"]


@pytest.mark.build
def test_verify_and_the_worker_make_the_same_checks(tmp_path):
    """One definition: a built row passes both; the same row cut short fails both alike."""
    build(tmp_path, "gpt-4", ["niah_single_2"], [2048], 2)
    row = rows(tmp_path, "gpt-4", "niah_single_2", 2048)[1]
    rules = RowRules.of("gpt-4", "niah_single_2", 2048)
    verdict = row_findings(rules, 1, row, check_row, lambda r: False)
    assert verdict.findings == [] and verdict.notes == []
    short = dict(row, length=900)
    (finding,) = row_findings(rules, 1, short, check_row, lambda r: False).findings
    assert finding.message.startswith("fill 0.439 (900 of 2,048 tokens)")


@pytest.mark.build
@pytest.mark.parametrize("language, sep", [("es", " "), ("zh", "")])
def test_a_row_short_by_a_long_sentence_takes_that_sentences_start(tmp_path, language, sep):
    """Whole sentences leave a row short of L by up to the sentence after them (hundreds of
    tokens at 4K-8K): such a row takes the words (zh, ja: the characters) of that sentence
    that still fit, and fills L; the needles and the answer are those of the whole-sentence
    row."""
    short, long = ("Era una noche oscura.", "Y el viento soplaba sobre la llanura.") \
        if sep else ("夜很黑。", "风吹过平原")
    book = (short,) * 240 + (sep.join([long] * 4000),) + (short,) * 20  # over L
    worker = _oneruler_worker(tmp_path, language, book)
    made = worker.make_row("or_niah_single", 8000, 0)
    assert made.row["length"] >= 0.99 * 8000
    context = made.row["context"]
    start = context.index(long)  # the sentence after the whole ones, begun and cut
    cut = os.path.commonprefix([context[start:], book[240]])
    assert 0 < len(cut) < len(book[240])
    if sep:  # at a word's end
        assert book[240][len(cut)] == " " or cut[-1] == " " and cut[-2] != " "
    assert made.row["haystack_size"] == 240  # whole sentences: the cut one comes on top
    # the same draws with the whole sentences alone: the same needles and answer
    gen = worker.generator("or_niah_single", 8000)
    whole, part = gen.draft(0, random.Random(1), 240), gen.draft_part(0, random.Random(1), 240, 3)
    assert whole.outputs == part.outputs and len(whole.gold_spans) == len(part.gold_spans) == 1
    assert part.input[part.gold_spans[0][0]:part.gold_spans[0][1]] == \
        whole.input[whole.gold_spans[0][0]:whole.gold_spans[0][1]]


@pytest.mark.build
def test_a_row_counted_whole_is_not_tokenized_again_to_certify_it(tmp_path, monkeypatch):
    """A zh haystack is not cut for a tokenizer without letter junctions (its draft is
    counted whole, as the check counts it): the certification of a task's first row
    tokenized it twice more (issue 43), proving nothing."""
    worker = _oneruler_worker(tmp_path, "zh", tokenizer="gemma-3")
    assert not worker.recipe.tokenizer.letter_junctions
    calls: list = []
    real = type(worker.exact)
    monkeypatch.setattr(worker.exact, "prompt_length",
                        lambda d: calls.append(d) or real.prompt_length(worker.exact, d))
    monkeypatch.setattr(worker.exact, "token_positions",
                        lambda d, at: calls.append(d) or real.token_positions(worker.exact, d, at))
    made = worker.make_row("or_niah_single", 8000, 0)
    assert made.certified and not made.counted_exactly and calls == []
    # a cut draft (en; zh for a tokenizer with letter junctions) is still checked against a
    # whole-prompt count
    for language in ("en", "zh"):
        calls.clear()
        worker = _oneruler_worker(tmp_path, language)
        monkeypatch.setattr(worker.exact, "prompt_length",
                            lambda d, w=worker: calls.append(d) or real.prompt_length(w.exact, d))
        assert worker.make_row("or_niah_single", 8000, 0).certified and len(calls) == 1
