"""vt: upstream's strings, the one-shot example, unique names, exact lengths, tight fill."""

from __future__ import annotations

import random
import re

import pytest

from helpers.tasks import assert_lengths_and_fill, fit, fit_many, generator, tokenizer
from ruler.benchmarks.ruler.noise import NOISE_SENTENCE
from ruler.benchmarks.ruler.tasks import VARIABLE_TRACKING
from ruler.builder.fitting import fit_sample
from ruler.catalog.checks import check_row
from ruler.catalog.tasks import TASKS
from ruler.kernel.errors import TooShortError

# Upstream's strings (NVIDIA/RULER scripts/data/synthetic/constants.py, variable_tracking.py).
UPSTREAM_TEMPLATE = (
    "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
    "{context}\nQuestion: Find all variables that are assigned the value {query} in the text "
    "above.")
UPSTREAM_PREFIX = (
    " Answer: According to the chain(s) of variable assignment in the text above, {num_v} "
    "variables are assigned the value {query}, they are: ")
UPSTREAM_NOISE = ("The grass is green. The sky is blue. The sun is yellow. Here we go. There and "
                  "back again.")

HEAD = "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
N = 12


@pytest.fixture(scope="module")
def s4k():
    return fit_many("vt", "llama-3.1", 4096, N)


def test_constants_equal_upstream():
    assert VARIABLE_TRACKING.template == UPSTREAM_TEMPLATE
    assert VARIABLE_TRACKING.answer_prefix == UPSTREAM_PREFIX
    assert "assigned" in VARIABLE_TRACKING.answer_prefix  # the fixed spelling
    assert VARIABLE_TRACKING.tokens_to_generate == 30
    assert VARIABLE_TRACKING.metric == "string_match_all"
    assert dict(TASKS["vt"].params) == dict(type_haystack="noise", num_chains=1, num_hops=4)
    assert NOISE_SENTENCE == UPSTREAM_NOISE


def _parse(text: str):
    """(example text, task text) split where upstream inserts the example."""
    first, second = text.find(HEAD), text.rfind(HEAD)
    assert first == 0 and second > 0
    return text[:second], text[second:]


def test_prompt_layout_matches_upstream(s4k):
    for s in s4k:
        r = s.row
        example, task = _parse(r["input"])
        names = r["outputs"]
        value = re.search(r"assigned the value (\d+) in the text above\.$", task).group(1)
        assert len(value) == 5 and 10000 <= int(value) <= 99998
        assert r["answer_prefix"] == UPSTREAM_PREFIX.format(num_v=5, query=value)
        # Names: 5 uppercase letters, unique within the sample.
        assert len(names) == 5 and len(set(names)) == 5
        assert all(re.fullmatch(r"[A-Z]{5}", n) for n in names)
        # The task context: noise lines and the chain's lines, in chain order, never adjacent,
        # the last line noise; hop lines keep upstream's trailing space.
        body = task[len(HEAD):task.rindex("\nQuestion: ")]
        lines = body.split("\n")
        var_lines = [ln for ln in lines if ln.startswith("VAR ")]
        assert var_lines == [f"VAR {names[0]} = {value}"] + [
            f"VAR {names[j + 1]} = VAR {names[j]} " for j in range(4)]
        assert all(ln == NOISE_SENTENCE for ln in lines if not ln.startswith("VAR "))
        assert lines[-1] == NOISE_SENTENCE
        idx = [i for i, ln in enumerate(lines) if ln.startswith("VAR ")]
        assert all(b - a >= 2 for a, b in zip(idx, idx[1:]))
        assert s.fitted.draft.size == len(lines) - 5
        # Gold spans are the chain's lines; the context span is the task context.
        d = s.fitted.draft
        assert [r["input"][a:b] for a, b in d.gold_spans] == var_lines
        assert r["input"][slice(*d.context_span)] == body
        # The one-shot example: template + prefix + " " + names + "\n", then "\n" + the task.
        m = re.fullmatch(
            re.escape(HEAD) + r"(.*)\nQuestion: Find all variables that are assigned the value "
            r"(\d{5}) in the text above\." + re.escape(
                " Answer: According to the chain(s) of variable assignment in the text above, 5 "
                "variables are assigned the value ")
            + r"(\d{5}), they are:  ([A-Z]{3}(?: [A-Z]{3}){4})\n\n", example, flags=re.S)
        assert m, example[-300:]
        ex_value, ex_names = m.group(2), m.group(4).split()
        assert m.group(3) == ex_value != value
        assert len(set(ex_names)) == 5 and "VAR" not in ex_names
        ex_lines = [ln for ln in m.group(1).split("\n") if ln.startswith("VAR ")]
        assert ex_lines == [f"VAR {ex_names[0]} = {ex_value}"] + [
            f"VAR {ex_names[j + 1]} = VAR {ex_names[j]} " for j in range(4)]


def test_example_is_sized_to_500_tokens_and_rerandomised(s4k):
    tok = tokenizer("llama-3.1")
    examples = [_parse(s.row["input"])[0] for s in s4k]
    # Fixed layout per build, fresh names and value per sample (as upstream's randomize_icl).
    shapes = {re.sub(r"[A-Z]{3}|\d{5}", "#", e) for e in examples}
    assert len(shapes) == 1
    assert len({e for e in examples}) == len(examples)
    # Upstream fits the example's question (without the appended answer) into 500 tokens.
    for e in examples:
        question = e[:e.rindex("they are: ") + len("they are: ")]
        assert tok.count(question) <= 500 + 10  # renaming changes a few tokens at most
    # The example has the most noise lines whose question fits 500 tokens (upstream's rule).
    gen = generator("vt", "llama-3.1", 4096)
    n = gen.icl.num_noise
    assert tok.count(gen.icl_sizing_probe(n)) <= 500 < tok.count(gen.icl_sizing_probe(n + 1))
    assert all(e.count(NOISE_SENTENCE) == n for e in examples)


def test_lengths_exact_and_fill_4k(s4k):
    assert_lengths_and_fill(s4k, "llama-3.1", 4096)


@pytest.mark.parametrize("tok_name,L,n", [("llama-3.1", 16384, 10), ("gpt-4", 4096, 6),
                                          ("llama-2", 4096, 6), ("gpt-4", 16384, 4)])
def test_lengths_exact_and_fill_other(tok_name, L, n):
    samples = fit_many("vt", tok_name, L, n)
    assert_lengths_and_fill(samples, tok_name, L)
    assert all(check_row(s.row) is None for s in samples)


def test_answers_recoverable_and_check_can_fail(s4k):
    for s in s4k:
        assert check_row(s.row) is None
    r = dict(s4k[0].row)
    assert check_row({**r, "outputs": r["outputs"][:4] + ["QQQQQ"]}) is not None
    assert check_row({**r, "outputs": r["outputs"][:4]}) is not None
    # Break the chain in the text: the last hop now points at a name outside the chain.
    names = r["outputs"]
    broken = r["input"].replace(f"VAR {names[4]} = VAR {names[3]} ", f"VAR {names[4]} = VAR ZZZZZ ")
    assert check_row({**r, "input": broken}) is not None


def test_deterministic_and_index_dependent():
    gen = generator("vt", "llama-3.1", 4096)
    a, b, c = fit(gen, 3), fit(gen, 3), fit(gen, 4)
    assert a.row == b.row and a.fitted.draft == b.fitted.draft
    assert a.row["input"] != c.row["input"] and a.row["outputs"] != c.row["outputs"]
    d1 = gen.draft(3, random.Random(7), 50)
    assert d1 == gen.draft(3, random.Random(7), 50)


def test_too_short_length_is_a_clear_error():
    gen = generator("vt", "llama-3.1", 600)
    tok = tokenizer("llama-3.1")
    with pytest.raises(TooShortError, match="cannot be built at length 600"):
        fit_sample(gen, 0, lambda: random.Random(1),
                   lambda d: tok.prompt_length(d.input, d.answer_prefix), 600)
