"""RULERv2's 12 generators on the real stand-in inputs and a real tokenizer: each sample fits
L exactly as the model reads it (the question as the user turn, the generation prompt after
it), its answers are read off its input, and what upstream's generator guarantees holds
(formats, id rules, answer kinds). Fixed strings are compared with upstream's own output in
tests/package/test_ruler2_reference.py."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from helpers.tasks import Sample, generator, tokenizer
from ruler.benchmarks.ruler2 import prompt_mode as ruler2_prompt_mode
from ruler.benchmarks.ruler2.items import split_ids
from ruler.benchmarks.ruler2.mmlu import ordinal
from ruler.benchmarks.ruler2.niah import split_line
from ruler.benchmarks.ruler2.prompts import MMLU_CONTEXT, NIAH_MULTIPLE, NIAH_SINGLE, QA_CONTEXT
from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS
from ruler.builder.fitting import fit_sample
from ruler.catalog.family import family_of
from ruler.kernel.rng import sample_rng

L = 4096
SAMPLES = 2


MODE = ruler2_prompt_mode(True)  # llama-3.1 has a chat template: "reasoning"


def fit(gen, index: int) -> Sample:
    """A sample fitted as a build fits it, counted in RULERv2's prompt mode."""
    ctx, task, tok = gen.ctx, gen.spec.name, gen.ctx.tokenizer
    fitted = fit_sample(gen, index, lambda: sample_rng(ctx.seed, ctx.tokenizer_name, task, L,
                                                       index),
                        lambda d: tok.prompt_length(d.input, d.answer_prefix, MODE), L)
    d = fitted.draft
    row = {"task": task, "index": index, "input": d.input, "answer_prefix": d.answer_prefix,
           "outputs": list(d.outputs), "length": fitted.length, "metric": gen.spec.metric,
           "tokens_to_generate": gen.tokens_to_generate, "haystack_size": d.size}
    return Sample(row, fitted)


@pytest.fixture(scope="module")
def rows() -> dict[str, list[dict]]:
    out = {}
    for task in RULER2_TASKS:
        gen = generator(task, "llama-3.1", L)
        out[task] = [(fit(gen, i), gen) for i in range(SAMPLES)]
    return out


@pytest.mark.slow  # importing inflect takes seconds (its typeguard checks compile)
def test_ordinal_is_inflects():
    inflect = pytest.importorskip("inflect")  # the test extra pins the version upstream used
    engine = inflect.engine()
    assert [ordinal(n) for n in range(1, 2001)] == [engine.ordinal(n) for n in range(1, 2001)]


@pytest.mark.parametrize("task", RULER2_TASKS)
def test_each_sample_fits_L_as_the_model_reads_it(rows, task):
    tok = tokenizer("llama-3.1")
    for sample, gen in rows[task]:
        row = sample.row
        prompt = tok.prompt_length(row["input"], "", MODE)
        # the prompt only (no output reserved), as the server renders it: the user turn and
        # the generation prompt, which ends "assistant<|end_header_id|>\n\n" for Llama 3
        assert row["length"] == prompt <= L
        # chat mode with no answer prefix renders the same generation prompt (it used to
        # continue an empty assistant turn, one token short: tests/builder/test_tokenizers.py)
        assert prompt == tok.prompt_length(row["input"], "", "chat")
        assert row["tokens_to_generate"] == 16384 and row["answer_prefix"] == ""
        assert prompt > 0.8 * L
        family = family_of(task)
        assert family.check_row(row) is None
        starts, (c0, c1) = family.gold_spans(row, gen)
        d = sample.fitted.draft
        assert starts == [a for a, _ in d.gold_spans] and (c0, c1) == d.context_span


def _needles(text: str) -> list[tuple[str, str]]:
    return re.findall(r"^One of the special magic numbers for (.+?) is: ([0-9]{10})\.$", text,
                      re.M)


@pytest.mark.parametrize("task,values", [("mk_niah_basic", 1), ("mv_niah_basic", 4)])
def test_needle_tasks(rows, task, values):
    template = NIAH_SINGLE if values == 1 else NIAH_MULTIPLE
    word = "number" if values == 1 else "numbers"
    for sample, _ in rows[task]:
        row = sample.row
        text = row["input"]
        key = re.search(r"for (.+?) mentioned", text).group(1)
        head, tail = template.split("{context}")
        assert text.startswith(head.format(type_needle_v=word))
        assert text.endswith(tail.format(type_needle_v=word, query=key))
        lines = text[len(head.format(type_needle_v=word)):].split("\n")[:-1]
        needles = _needles(text)
        assert len(lines) == len(needles) == row["haystack_size"] + values  # every line one
        assert [v for k, v in needles if k == key] != [] and len(row["outputs"]) == values
        assert sorted(v for k, v in needles if k == key) == sorted(row["outputs"])
        per_key = Counter(k for k, _ in needles if k != key)
        assert max(per_key.values()) <= values  # mv: a distractor key has up to 4 values
        if values > 1:  # upstream pairs each distractor key with 4 values (the last fewer)
            assert sum(per_key.values()) == row["haystack_size"]
            assert sorted(per_key.values())[-1] == 4


def _questions(text: str) -> list[tuple[str, str]]:
    return re.findall(r"^Question ([0-9]{7}): (.*)$", text, re.M)


@pytest.mark.parametrize("task", [t for t in RULER2_TASKS if t.startswith(("mk_niah_e",
                                                                         "mk_niah_m",
                                                                         "mk_niah_h", "mv_niah_e",
                                                                         "mv_niah_m",
                                                                         "mv_niah_h"))])
def test_mmlu_tasks(rows, task):
    for sample, gen in rows[task]:
        row = sample.row
        text = row["input"]
        p = gen.spec.params
        assert text.startswith(MMLU_CONTEXT[p["task_type"]] + "\n\nQuestion ")
        context = text.split("\n\nHere are some examples")[0].rsplit("\n\nPlease ", 1)[0]
        items = _questions(context)
        assert len(items) == row["haystack_size"] + 1
        ids = Counter(i for i, _ in items)
        if p["num_order"] == 0:
            assert max(ids.values()) == 1  # distinct ids
        else:
            assert max(ids.values()) <= 4 and sum(ids.values()) == len(items)
        assert all(q == re.sub(r"\s+", " ", q) for _, q in items)
        problem = text.rsplit("\n\n", 1)[1]
        asked = re.search(r"Question ([0-9]{7}) from the context", problem).group(1)
        if p["task_type"] == "solve":
            assert row["outputs"] in (["A"], ["B"], ["C"], ["D"])
            examples = re.findall(r"Please .*?Question ([0-9]{7}) from the context.*?\n"
                                  r"(?:Question [0-9]{7}: .*\n)?Solution: \\boxed\{([ABCD])\}",
                                  text)
            assert len(examples) == 5 and all(ids[i] == 1 and i != asked for i, _ in examples)
            assert "inside \\boxed\\{\\}.\n\n" in text  # upstream's escaped braces
        elif p["task_type"] == "niah":
            assert row["outputs"] == [q for i, q in items if i == asked]
        else:
            nth = re.search(r"([0-9]+)(?:st|nd|rd|th) \(1 indexed\) ", problem)
            same = [q for i, q in items if i == asked]
            assert row["outputs"] == [same[int(nth.group(1)) - 1] if nth else same[0]]
            assert (nth is None) == (p["num_order"] == 0)


@pytest.mark.parametrize("task", ["qa_basic", "qa_easy", "qa_medium", "qa_hard"])
def test_hotpotqa_tasks(rows, task):
    for sample, gen in rows[task]:
        row = sample.row
        text = row["input"]
        p = gen.spec.params
        kind = p.get("query_type") or p["algo_type"]
        assert text.startswith(QA_CONTEXT[(p["task_type"], kind)] + "\n\nDocument ")
        docs = re.findall(r"(?:^|\n\n)Document ([0-9]{7}):\n(.*?)(?=\n\nDocument |\n\n"
                          r"Text: |\n\nQuestion: |\n\nPlease )", text, re.S)
        q = gen.question(row["index"])
        assert len(docs) == row["haystack_size"] + len(q.support) + len(q.distractors)
        assert len({i for i, _ in docs}) == len(docs)  # distinct ids
        bodies = Counter(b for _, b in docs)
        assert all(bodies[b] == 1 for b in (*q.support, *q.distractors))  # never drawn again
        support_ids = [i for i, b in docs if b in q.support]
        if kind == "doc":
            assert row["outputs"] == [i for i, b in docs if b == q.support[0]]
            assert text.endswith(f"\n\nText: {q.support[0]}\nMost relevant document index:")
        elif kind == "question":
            assert sorted(row["outputs"]) == sorted(support_ids)
        else:
            assert row["outputs"] == [q.answer]


def test_a_needle_line_is_cut_into_recurring_parts():
    line = "One of the special magic numbers for bright-lantern is: 1234567890.\n"
    assert split_line(line) == ("One of the special magic numbers for", " bright", "-lantern",
                                " is:", " 123", "456", "789", "0.\n")
    odd = "One of the special magic numbers for ad hoc-dump truck is: 1000000000."
    assert "".join(split_line(odd)) == odd and split_line(odd)[-4:] == (" 100", "000", "000",
                                                                         "0.")


def test_an_item_is_cut_around_its_ids_where_clean():
    assert split_ids("Question 1234567: What is 2+2? A. 1 B. 2\n\n") == (
        "Question", " 123", "4567:", " What is 2+2? A. 1 B. 2\n\n")
    assert split_ids("Question 1234567:  In which dynasty?\n\n") == (
        "Question", " 123", "4567:  In which dynasty?\n\n")  # a leading space: not clean
    assert split_ids("Document 1234567:\nTitle\nBody.\n\n") == (
        "Document", " 123", "4567:\n", "Title\nBody.\n\n")
    assert split_ids("Please copy the Question 1234567 from the context.\nQuestion 1234567: "
                     "Why?\nSolution: \\boxed{A}\n\n") == (
        "Please copy the Question", " 123", "4567", " from the context.\nQuestion", " 123",
        "4567:", " Why?\nSolution: \\boxed{A}\n\n")
    assert split_ids("costs 1234567.5 and 12345678") == ("costs", " 123",
                                                         "4567.5 and 12345678")
    assert split_ids("Something else") == ("Something else",)


def test_one_space_is_upstreams_whitespace_rule():
    """`re.sub(r"\\s+", " ", text)` on every whitespace character Python knows, mixed with
    text, leading, trailing and alone."""
    import random
    import sys

    from ruler.benchmarks.ruler2.mmlu import one_space

    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    rng = random.Random(0)
    alphabet = [*spaces, "a", "b", ".", " "]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        assert one_space(text) == re.sub(r"\s+", " ", text), repr(text)


@pytest.mark.parametrize("task", RULER2_TASKS)
def test_the_row_check_finds_wrong_outputs(rows, task):
    """`ruler verify`'s answer check (the family's check_row) reads the outputs off the input:
    a changed output is found."""
    check = family_of(task).check_row
    row = dict(rows[task][0][0].row)
    outputs = list(row["outputs"])
    outputs[0] = "E" if row["metric"] == "multichoice" else outputs[0] + "0"
    assert check(dict(row, outputs=outputs)) is not None
    # a missing answer, too, where the input names every answer (qa_easy's supporting
    # paragraphs are the source's fact: verify re-derives them with the source instead)
    if not task.startswith("qa_") and len(outputs) > 1:
        assert check(dict(row, outputs=list(row["outputs"])[1:])) is not None
