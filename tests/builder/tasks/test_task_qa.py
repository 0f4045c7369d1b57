"""qa_1 / qa_2: readers, upstream's document format and distractors, gold slots, bad input."""

from __future__ import annotations

import json
import random
import re

import pytest

from helpers.tasks import (
    SEED,
    SOURCES,
    assert_lengths_and_fill,
    fit,
    fit_many,
    generator,
    tokenizer,
)
from ruler.benchmarks.ruler.qa import fixed_permutation
from ruler.benchmarks.ruler.tasks import QA
from ruler.builder.fitting import fit_sample
from ruler.catalog import make_generator
from ruler.catalog.checks import check_row
from ruler.catalog.context import BuildContext
from ruler.catalog.tasks import TASKS, get_task
from ruler.kernel.errors import RulerError, TooShortError

# Upstream's strings (NVIDIA/RULER scripts/data/synthetic/constants.py, qa.py).
UPSTREAM_TEMPLATE = (
    "Answer the question based on the given documents. Only give me the answer and do not "
    "output any other words.\n\nThe following are given documents.\n\n{context}\n\nAnswer the "
    "question based on the given documents. Only give me the answer and do not output any other "
    "words.\n\nQuestion: {query}")
UPSTREAM_PREFIX = " Answer:"
HEAD = UPSTREAM_TEMPLATE[:UPSTREAM_TEMPLATE.index("{context}")]
MID = UPSTREAM_TEMPLATE[UPSTREAM_TEMPLATE.index("{context}") + 9:UPSTREAM_TEMPLATE.index("{query}")]
SQUAD = SOURCES / "squad" / "dev-v2.0.partial.json"
HOTPOT = SOURCES / "hotpotqa" / "hotpot_dev_distractor_v1.first100.json"
N = 12


def squad_questions():
    """(question, answers, paragraph, same-article paragraphs) in file order (the oracle)."""
    out = []
    for a in json.loads(SQUAD.read_text())["data"]:
        paras = [p["context"] for p in a["paragraphs"]]
        for p in a["paragraphs"]:
            for q in p["qas"]:
                if not q["is_impossible"]:
                    out.append((q["question"], [x["text"] for x in q["answers"]], p["context"],
                                set(paras) - {p["context"]}))
    return out


def hotpot_questions():
    return [(d["question"], [d["answer"]], [f"{t}\n{''.join(s)}" for t, s in d["context"]],
             {t for t, _ in d["supporting_facts"]})
            for d in json.loads(HOTPOT.read_text())]


def documents(text: str) -> tuple[list[str], str]:
    assert text.startswith(HEAD)
    end = text.rindex(MID)
    blocks = text[len(HEAD):end].split("\n\nDocument ")
    docs = []
    for i, b in enumerate(blocks):
        head = f"Document {i + 1}:\n" if i == 0 else f"{i + 1}:\n"
        assert b.startswith(head)
        docs.append(b[len(head):])
    return docs, text[end + len(MID):]


@pytest.fixture(scope="module")
def squad4k():
    return fit_many("qa_1", "llama-3.1", 4096, N)


@pytest.fixture(scope="module")
def hotpot4k():
    return fit_many("qa_2", "llama-3.1", 4096, N)


def test_constants_equal_upstream():
    assert QA.template == UPSTREAM_TEMPLATE and QA.answer_prefix == UPSTREAM_PREFIX
    assert QA.tokens_to_generate == 32 and QA.metric == "string_match_part"
    assert dict(TASKS["qa_1"].params) == {"dataset": "squad"}
    assert dict(TASKS["qa_2"].params) == {"dataset": "hotpotqa"}


def test_squad_questions_documents_and_gold_slot(squad4k):
    oracle = squad_questions()
    assert len(oracle) == 2910
    for s in squad4k:
        r, d = s.row, s.fitted.draft
        question, answers, paragraph, same_article = oracle[r["index"]]  # file order
        docs, query = documents(r["input"])
        assert query == question and r["outputs"] == answers
        assert r["answer_prefix"] == UPSTREAM_PREFIX
        assert len(docs) == d.size and len(set(docs)) == len(docs)
        # Distractors: same-article paragraphs first (enough of them at 4K).
        assert set(docs) - {paragraph} <= same_article
        # Upstream's rule: the gold document goes first, then Random(seed).shuffle.
        slot = fixed_permutation(SEED, len(docs)).index(0)
        assert docs[slot] == paragraph
        assert [r["input"][a:b] for a, b in d.gold_spans] == [
            f"Document {slot + 1}:\n{paragraph}"]
        c0, c1 = d.context_span
        assert r["input"][c0:c1].startswith("Document 1:\n") and c0 <= d.gold_spans[0][0] < c1


def test_fixed_permutation_is_upstreams_shuffle():
    docs = [f"doc{i}" for i in range(37)]
    shuffled = list(docs)
    random.Random(SEED).shuffle(shuffled)
    assert [docs[p] for p in fixed_permutation(SEED, 37)] == shuffled


def test_squad_other_documents_after_the_article():
    gen = generator("qa_1", "llama-3.1", 16384)
    oracle = squad_questions()
    d = gen.draft(0, random.Random(3), 80)
    docs, _ = documents(d.input)
    _, _, paragraph, same_article = oracle[0]
    assert len(same_article) < 79 and same_article <= set(docs) and paragraph in docs
    assert len(set(docs)) == 80


def test_hotpot_questions_documents_and_gold(hotpot4k):
    oracle = hotpot_questions()
    for s in hotpot4k:
        r, d = s.row, s.fitted.draft
        question, answers, own, titles = oracle[r["index"]]
        docs, query = documents(r["input"])
        assert query == question and r["outputs"] == answers
        assert set(own) <= set(docs)  # all paragraphs of the question
        # Own paragraphs occupy the first slots before the fixed shuffle.
        perm = fixed_permutation(SEED, len(docs))
        assert [docs[perm.index(j)] for j in range(len(own))] == own
        gold = [r["input"][a:b].split("\n", 1)[1] for a, b in d.gold_spans]
        assert sorted(gold) == sorted(doc for doc in own if doc.split("\n")[0] in titles)


def test_more_documents_than_the_corpus_repeat_it():
    gen = generator("qa_2", "llama-3.1", 131072)
    n_docs = len(gen.data.docs)
    d = gen.draft(5, random.Random(0), n_docs + 7)
    docs, _ = documents(d.input)
    assert len(docs) == n_docs + 7 and set(docs) == set(gen.data.docs)
    assert len(d.gold_spans) >= 2 and check_row({"task": "qa_2", "input": d.input,
                                                 "outputs": list(d.outputs)}) is None


def test_lengths_exact_and_fill_4k(squad4k, hotpot4k):
    # Whole documents (~150 tokens each) cap the fill at 4K; measured llama-3.1 figures:
    # qa_1 mean 0.983 / min 0.970, qa_2 mean 0.979 / min 0.943 (upstream: qa_2 0.81).
    assert_lengths_and_fill(squad4k, "llama-3.1", 4096, mean_min=0.97, min_min=0.93)
    assert_lengths_and_fill(hotpot4k, "llama-3.1", 4096, mean_min=0.96, min_min=0.90)


@pytest.mark.parametrize("task,tok_name,L,n,mean_min,min_min", [
    ("qa_1", "llama-3.1", 16384, 8, 0.99, 0.98), ("qa_2", "llama-3.1", 16384, 8, 0.985, 0.96),
    ("qa_1", "gpt-4", 4096, 5, 0.96, 0.90), ("qa_2", "llama-2", 4096, 5, 0.95, 0.90)])
def test_lengths_exact_and_fill_other(task, tok_name, L, n, mean_min, min_min):
    samples = fit_many(task, tok_name, L, n)
    assert_lengths_and_fill(samples, tok_name, L, mean_min, min_min)
    assert all(check_row(s.row) is None for s in samples)


def test_answers_recoverable_and_check_can_fail(squad4k, hotpot4k):
    for s in squad4k + hotpot4k:
        assert check_row(s.row) is None
    r = dict(squad4k[0].row)
    assert check_row({**r, "outputs": ["qwxzv no such answer"]}) is not None
    gold = squad4k[0].fitted.draft.gold_spans[0]
    no_gold = r["input"][:gold[0]] + r["input"][gold[1]:]
    assert check_row({**r, "input": no_gold}) is not None


def test_every_hotpot_question_is_recoverable():
    gen = generator("qa_2", "llama-3.1", 4096)
    for i in range(len(gen.data.questions)):
        d = gen.draft(i, random.Random(i), 12)
        assert check_row({"task": "qa_2", "input": d.input, "outputs": list(d.outputs)}) is None


def test_deterministic_and_index_dependent():
    gen = generator("qa_1", "llama-3.1", 4096)
    a, b, c = fit(gen, 4), fit(gen, 4), fit(gen, 5)
    assert a.row == b.row and a.row["input"] != c.row["input"]


def test_more_samples_than_questions_is_a_clear_error():
    with pytest.raises(RulerError, match=r"has 100 questions; --samples 101"):
        generator("qa_2", "llama-3.1", 4096).check_samples(101)
    with pytest.raises(RulerError, match=r"has 2910 answerable questions; --samples 3000"):
        generator("qa_1", "llama-3.1", 4096).check_samples(3000)
    generator("qa_2", "llama-3.1", 4096).check_samples(100)


@pytest.mark.parametrize("dataset,task,content", [
    ("squad", "qa_1", "{not json"),
    ("squad", "qa_1", json.dumps([{"question": "q", "answer": "a", "context": []}])),
    ("squad", "qa_1", json.dumps({"data": [{"title": "t", "paragraphs": [{"context": "c"}]}]})),
    ("hotpotqa", "qa_2", json.dumps({"version": "v2.0", "data": []})),
    ("hotpotqa", "qa_2", json.dumps([{"question": "q", "answer": "a", "context": [["t"]]}])),
])
def test_malformed_source_is_a_clear_error(tmp_path, dataset, task, content):
    name = {"squad": "dev-v2.0.json", "hotpotqa": "hotpot_dev_distractor_v1.json"}[dataset]
    (tmp_path / dataset).mkdir()
    (tmp_path / dataset / name).write_text(content)
    with pytest.raises(RulerError, match=re.escape(str(tmp_path / dataset / name)) + ": not a"):
        generator(task, "llama-3.1", 4096, sources_dir=str(tmp_path))


def test_too_short_length_is_a_clear_error():
    tok = tokenizer("llama-3.1")
    for task, L in (("qa_1", 128), ("qa_2", 1024)):
        gen = generator(task, "llama-3.1", L)
        with pytest.raises(TooShortError, match=f"cannot be built at length {L}"):
            fit_sample(gen, 0, lambda: random.Random(1),
                       lambda d: tok.prompt_length(d.input, d.answer_prefix), L)


def test_build_stops_before_writing_on_bad_qa_input(tmp_path):
    from helpers.builds import build

    out = tmp_path / "out"
    with pytest.raises(RulerError, match=r"has 100 questions; --samples 101"):
        build(out, "llama-3.1", ("vt", "qa_2"), (4096,), 101, workers=1)
    assert not list(out.glob("data/**/*.parquet"))
    bad = tmp_path / "sources"
    (bad / "squad").mkdir(parents=True)
    (bad / "squad" / "dev-v2.0.json").write_text('{"data": 3}')
    with pytest.raises(RulerError, match="not a SQuAD v2.0"):
        build(out, "llama-3.1", ("qa_1",), (4096,), 2, workers=1, sources_dir=str(bad))
    assert not list(out.glob("data/**/*.parquet"))


def test_differences_cover_these_tasks():
    from ruler.benchmarks.ruler.differences import DIFFERENCES

    scopes = " ".join(scope for scope, _, _ in DIFFERENCES)
    for task in ("vt", "cwe", "fwe", "qa_1", "qa_2"):
        assert task in scopes
    assert all(len(e) == 3 and all(isinstance(x, str) and x for x in e) for e in DIFFERENCES)


def test_a_qa_file_is_read_once_a_process_for_its_content_and_anew_when_it_changes(tmp_path):
    """Build contexts share the questions read from one file content (a session of builds
    read SQuAD again for each); the same path holding other content is read again."""
    here = tmp_path / SQUAD.relative_to(SOURCES)
    here.parent.mkdir(parents=True)
    here.write_bytes(SQUAD.read_bytes())

    def data():
        ctx = BuildContext(tokenizer("gpt-4"), "gpt-4", SEED, str(tmp_path))
        return make_generator(get_task("qa_1"), ctx, 4096).data

    first = data()
    assert data() is first and len(first.questions) == len(squad_questions())
    squad = json.loads(SQUAD.read_text())
    squad["data"] = squad["data"][1:]  # one article fewer
    here.write_text(json.dumps(squad))
    changed = data()
    assert changed is not first and len(changed.questions) < len(first.questions)
    assert changed.path == first.path == here
