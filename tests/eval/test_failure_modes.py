"""The failure-mode labeler on hand-made rows (`ruler.eval.failure_modes`): rows written with
the catalog's templates and upstream's needle, chain and list formats, for what the standard
tasks cannot show (UUID keys, several chains, a truncated distractor) and for each edge case
of `paper-analysis.md` §4.6. The labels on real builds, with the fake backend's purposeful
failures: test_failure_modes_fake.py."""

from __future__ import annotations

import pytest

from ruler.benchmarks.ruler.failure_modes.base import LabelRow
from ruler.benchmarks.ruler.failure_modes.fake_answers import answer as purposeful
from ruler.benchmarks.ruler.failure_modes.labeler import label_row
from ruler.benchmarks.ruler.failure_modes.labels import MODES, PRECEDENCE, SUB_FLAGS, primary
from ruler.benchmarks.ruler.failure_modes.niah import needles
from ruler.benchmarks.ruler.failure_modes.qa import question_key
from ruler.benchmarks.ruler.failure_modes.report import FailureCell, FailureReport, _coincide
from ruler.benchmarks.ruler.tasks import COMMON_WORDS, FREQ_WORDS, NIAH, QA, VARIABLE_TRACKING
from ruler.eval.failure_modes.record import CellFailures, QaAnswer, RowFailure
from ruler.kernel.errors import RulerError

NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."


# --- hand-made rows ------------------------------------------------------------------------

def niah_row(pairs, asked, kind="numbers", task="niah_multikey_2"):
    """A needle-haystack row: `pairs` (key, value) as needle lines between noise lines, the
    keys `asked` asked for; noise first, so that no needle is in the input's first 500
    characters (an answer quoting one would copy the input's start)."""
    lines = [NOISE] * 6
    for key, value in pairs:
        lines += [NOISE, f"One of the special magic {kind} for {key} is: {value}."]
    lines.append(NOISE)
    query = ", ".join(asked)
    text = NIAH.template.format(type_needle_v=kind, context="\n".join(lines), query=query)
    outputs = tuple(v for k, v in pairs if k in asked)
    return LabelRow(task=task, family="niah", input=text, outputs=outputs,
                    answer_prefix=NIAH.answer_prefix.format(type_needle_v=kind, query=query),
                    metric="string_match_all", question=text[text.rfind("\nWhat") + 1:])


def chain(names, value):
    return [f"VAR {names[0]} = {value}"] + [f"VAR {b} = VAR {a} " for a, b in zip(names, names[1:])]


def vt_text(chains, value, with_answer=None):
    lines = []
    for c in chains:
        for line in c:
            lines += [NOISE, line]
    lines.append(NOISE)
    text = VARIABLE_TRACKING.template.format(context="\n".join(lines), query=value, num_v=5)
    prefix = VARIABLE_TRACKING.answer_prefix.format(query=value, num_v=5)
    if with_answer is not None:
        text += prefix + " " + " ".join(with_answer) + "\n"
    return text, prefix


EXAMPLE = ("JUR", "EDD", "THE", "HOP", "GHY")
ASKED = ("HZLPN", "BDMMP", "NXLIM", "KHUSI", "ECHNL")
OTHER = ("QWERT", "ASDFG", "ZXCVB", "POIUY", "LKJHG")


def vt_row(chains=(ASKED, OTHER)):
    icl, _ = vt_text([chain(EXAMPLE, 64470)], 64470, with_answer=EXAMPLE)
    main, prefix = vt_text([chain(c, 15963 + n) for n, c in enumerate(chains)], 15963)
    text = icl + "\n" + main
    return LabelRow(task="vt", family="variable_tracking", input=text, outputs=ASKED,
                    answer_prefix=prefix, metric="string_match_all",
                    question=text[text.rfind("\nQuestion:") + 1:])


def numbered(words):
    return " ".join(f"{n}. {w}" for n, w in enumerate(words, 1))


EX_COMMON = ["alligator", "gearshift", "salesman"]
EX_OTHER = ["zoologist", "fund", "dirt", "pancake"]
GOLD_WORDS = ["petitioner", "sin", "gnat"]
UNCOMMON = ["crowd", "patience", "molding", "fund", "waterbed"]  # "fund" also in the example


def cwe_row():
    head, tail = COMMON_WORDS.template.split("{context}")
    example = head + numbered(EX_COMMON * 3 + EX_OTHER) + tail
    example += COMMON_WORDS.answer_prefix + " " + numbered(EX_COMMON)
    main = head + numbered(UNCOMMON + GOLD_WORDS * 4) + tail
    text = example + "\n" + main
    return LabelRow(task="cwe", family="common_words_extraction", input=text,
                    outputs=tuple(GOLD_WORDS), answer_prefix=COMMON_WORDS.answer_prefix,
                    metric="string_match_all", question=tail.lstrip("\n"))


CODED = ["..."] * 200 + ["cdpmiy"] * 6 + ["ndocyv"] * 5 + ["htyseq"] * 4 + ["thxbsg"] * 3 \
    + ["sqggjk"] * 2 + ["rewjcd", "xfcwlh"]


def fwe_row():
    text = FREQ_WORDS.template.format(context=" ".join(CODED))
    return LabelRow(task="fwe", family="freq_words_extraction", input=text,
                    outputs=("cdpmiy", "ndocyv", "htyseq"), answer_prefix=FREQ_WORDS.answer_prefix,
                    metric="string_match_all", question=text[text.rfind("\nQuestion:") + 1:])


DOCS = ["Normandy is a region in France. Its capital is Rouen.",
        "The Bayeux Tapestry is an embroidery commissioned by Bishop Odo.",
        "Rollo was a Viking leader who founded the duchy."]


def qa_row():
    context = "\n\n".join(f"Document {n}:\n{d}" for n, d in enumerate(DOCS, 1))
    text = QA.template.format(context=context, query="In what country is Normandy located?")
    return LabelRow(task="qa_1", family="qa", input=text, outputs=("France",),
                    answer_prefix=QA.answer_prefix, metric="string_match_part",
                    question=text[text.rfind("Answer the question"):])


def label(row, prediction, finish=""):
    return label_row(row, prediction, finish)


# --- the labels ------------------------------------------------------------------------------

def test_the_needle_format_is_the_builders():
    """The labeler reads needles in the builder's own format."""
    from ruler.benchmarks.ruler.niah import NEEDLE as BUILT

    made = " ".join(BUILT.format(type_needle_v=kind, key=key, value=value) for kind, key, value
                    in (("numbers", "lazy-dog", "1234567"), ("uuids", UUIDS[0], UUIDS[1])))
    assert [(n.key, n.value, n.kind) for n in needles(made)] == [
        ("lazy-dog", "1234567", "numbers"), (UUIDS[0], UUIDS[1], "uuids")]


def test_right_rows_carry_no_label():
    """Score 1 under the task's metric: no failure label, whatever else the answer holds
    (a distractor value, a name of another chain, a duplicate: §4.1)."""
    pairs = [("lazy-dog", "1234567"), ("big-cat", "7654321")]
    assert label(niah_row(pairs, ["lazy-dog"]), "1234567 and 7654321 and 1234567") is None
    assert label(vt_row(), " ".join(ASKED + OTHER[:1])) is None
    assert label(cwe_row(), "petitioner, sin, gnat, the, crowd") is None
    assert label(fwe_row(), "cdpmiy ndocyv htyseq ...") is None
    assert label(qa_row(), "France, I think") is None


UUIDS = ["9f1c2a3b-4d5e-4f60-8a7b-1c2d3e4f5a6b", "0a1b2c3d-4e5f-4a6b-9c7d-8e9f0a1b2c3d",
         "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9", "c0ffee00-1234-4abc-8def-0123456789ab"]


def uuid_row():
    """K=U V=U with distractor needles: the needle haystack of niah_multikey_3, whose keys
    a configured task may make UUIDs of any count."""
    pairs = [(UUIDS[0], UUIDS[1]), (UUIDS[2], UUIDS[3]),
             ("d1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6", "11111111-2222-4333-8444-555555555555")]
    return niah_row(pairs, [UUIDS[2]], kind="uuids", task="niah_multikey_3")


def test_a_uuid_cut_short_is_an_incomplete_value():
    row = uuid_row()
    gold = UUIDS[3]
    got = label(row, f"The special magic uuid is {gold[:18]}")
    assert got.label == "incomplete_value" and got.flags == ("incomplete_value",)
    # corrupted in the middle: 8+ hex digits in a row of the gold's remain
    corrupted = gold[:9] + "9999" + gold[13:]
    assert label(row, corrupted).label == "incomplete_value"
    # another UUID altogether: a value not in the context
    assert label(row, "deadbeef-0000-4000-8000-feedfacecafe").label == "hallucinated_value"
    # a distractor's value cut short is that distractor (§4.5)
    cut = label(row, UUIDS[1][:20])
    assert cut.label == "distractor_value" and "vicinity" in cut.flags
    # the key echoed, no value: key_echo; with the full distractor value: distractor_value
    assert label(row, f"for {UUIDS[2]} I do not know").label == "key_echo"
    assert label(row, f"{UUIDS[2]}: {UUIDS[1]}").label == "distractor_value"


def test_a_number_cut_short_is_a_partial_number_and_ours():
    """7-digit values cut short are `partial_number` ([ours]: the paper names UUIDs only),
    never `incomplete_value`."""
    row = niah_row([("lazy-dog", "1234567"), ("big-cat", "9876543")], ["lazy-dog"])
    assert label(row, "12345").label == "partial_number"
    assert label(row, "987654").label == "distractor_value"  # a distractor's prefix
    assert label(row, "9876").label == "hallucinated_value"  # too short to say whose
    assert label(row, "5555555").label == "hallucinated_value"
    assert {m.name: m.source for m in MODES}["partial_number"] == "ours"


def test_distractor_distance_vicinity_and_chance():
    pairs = [(f"key-{chr(97 + n)}x", str(1000000 + 111111 * n)) for n in range(12)]
    row = niah_row(pairs, ["key-gx"])  # the target is needle 6 of 12
    near = label(row, pairs[8][1])
    assert near.label == "distractor_value" and "vicinity" in near.flags
    assert near.distance == 2 and near.chance == pytest.approx((5 + 5) / 11)
    assert 0 < near.char_distance < 1
    far = label(row, pairs[0][1])
    assert far.distance == 6 and "vicinity" not in far.flags


def test_format_is_one_value_in_another_format_not_digits_side_by_side():
    row = niah_row([("lazy-dog", "1234567"), ("big-cat", "4810927")], ["lazy-dog"])
    assert label(row, "1,234,567").label == "format"
    assert label(row, "1 234 567").label == "format"
    # the digits of two answers side by side hold the gold's, but no value is written so
    assert "format" not in label(row, "4810 1234 5670").flags
    words = niah_row([("lazy-dog", "fancy-hat")], ["lazy-dog"], kind="words")
    assert label(words, "fancy hat").label == "format"


def test_an_echoed_prefix_is_not_copying():
    """A model restating the answer prefix echoes the task: the row is labelled by the value
    it gives, not as a copy of the context (§4.6 echoed scaffolding)."""
    row = niah_row([("lazy-dog", "1234567"), ("big-cat", "9876543")], ["lazy-dog"])
    said = "The special magic numbers for lazy-dog mentioned in the provided text are 9876543."
    assert label(row, said).label == "distractor_value"
    vt = vt_row()
    echo = vt.answer_prefix.strip() + " " + " ".join(ASKED[:2])
    got = label(vt, echo)
    assert got.label == "incomplete_chain" and "copy_context" not in got.flags


def test_empty_answers():
    row = niah_row([("lazy-dog", "1234567")], ["lazy-dog"])
    for said in ("", "  \n", "...", row.answer_prefix, row.answer_prefix + ":"):
        assert label(row, said).label == "empty", said
    assert label(cwe_row(), "The top 10 words that appear most often in the list are:").label \
        == "empty"
    assert label(qa_row(), "The.").label == "empty"


def test_another_chains_variable():
    """Several chains (a configured vt): a name of another chain is `other_chain`; the fake
    backend's purposeful answer is labelled as it means it."""
    row = vt_row()
    assert label(row, "QWERT ASDFG").label == "other_chain"
    assert label(row, "HZLPN QWERT").label == "other_chain"
    made = purposeful("other_chain", "variable_tracking", {
        "input": row.input, "outputs": list(row.outputs), "task": "vt"})
    assert made.text == " ".join(OTHER) and label(row, made.text).label == made.label


def test_vt_copying_the_example_and_names_in_any_case():
    row = vt_row(chains=(ASKED,))
    assert label(row, "JUR EDD THE HOP GHY").label == "copy_oneshot"  # I_ans in order
    assert label(row, "JUR HZLPN").label == "copy_oneshot"  # as many example names
    # "the" in lower case is no name of the example's ("THE"): no copying
    got = label(row, "the hzlpn bdmmp")  # the asked chain's names in lower case count
    assert got.label == "incomplete_chain"
    assert label(row, "ABCDE").label == "hallucinated_name"
    assert label(row, "HZLPN HZLPN").flags == ("incomplete_chain", "duplicated")


def test_cwe_modes():
    row = cwe_row()
    assert label(row, numbered(EX_COMMON)).label == "copy_oneshot"
    # words the example shares with the main list are no evidence of copying (E_only)
    assert label(row, "fund crowd patience").label == "inaccurate_aggregation"
    para = label(row, "the an a")
    assert para.label == "parametric" and "stopword" in para.flags
    # in a numbered answer "the" is an item of the parametric test
    assert label(row, numbered(["the", "the", "sin"])).label == "parametric"
    part = label(row, "petitioner sin")
    assert part.label == "inaccurate_aggregation" and 0 < 2 / 3
    assert label(row, "petitioner, petitioner, crowd").flags == (
        "inaccurate_aggregation", "duplicated")


def test_cwe_without_example_copies_the_input_start():
    row = cwe_row()
    main = row.input[row.input.rfind("Below is"):]
    bare = LabelRow(task="cwe", family="common_words_extraction", input=main,
                    outputs=row.outputs, answer_prefix=row.answer_prefix, metric=row.metric,
                    question=row.question)
    first = main.split("often.\n")[1].split()
    said = " ".join(first[1:6:2])  # items 1..3 of the first list
    assert said == "crowd patience molding"
    assert label(bare, said).label == "copy_input_start"
    assert label(row, numbered(EX_COMMON * 2)).label == "copy_oneshot"


def test_an_answer_of_list_numbers_alone_holds_no_word():
    """Seen on Gemma 3 270M's cwe answers (docs/failure-modes.md): list numbers without words,
    cut at the budget, hold no word item, so the answer is `empty` (§4.2's "no item of the
    task's kind"), not a parametric word."""
    row = cwe_row()
    assert label(row, "1. 1. 2. 3. 4. 5. 6. 7. 8. 9. 10. 1. 1. 2. 3. 4. 5.").label == "empty"
    assert label(row, "1. 2. 3.").label == "empty"
    assert label(fwe_row(), "1. 2. 3. 4").label == "empty"
    assert label(row, numbered(["the", "the", "sin"])).label == "parametric"  # words still count


def test_letter_enumerators_are_not_part_of_an_item():
    """Seen on Gemma 3 270M's cwe_no_oneshot answers (docs/failure-modes.md): "1. A. father
    2. B. axis ..." kept "A. father" as the item, a word in no list, so an answer of listed
    words was labelled `parametric`; the enumerator is list markup, as "1." is."""
    row = cwe_row()
    lettered = " ".join(f"{n}. {chr(64 + n)}. {w}" for n, w in enumerate(UNCOMMON, 1))
    assert label(row, lettered).label == "inaccurate_aggregation"  # listed, not the common
    assert label(row, "a) crowd, b) patience, (c) sin").label == "inaccurate_aggregation"
    assert label(row, numbered(["A. the", "B. an", "C. sin"])).label == "parametric"


def test_the_last_item_of_an_answer_cut_at_its_budget_is_not_read():
    """Seen on Gemma 3 270M (docs/failure-modes.md): "... 24. loaf 25. loaf 2" ended at the
    budget; its last item "loaf 2" was read as a word of no list, so an answer of gold and
    listed words fell to `other`. An answer that ended by itself keeps every item."""
    row = cwe_row()
    said = "1. sin 2. crowd 3. sin 4. cr"
    assert label(row, said, finish="length").label == "inaccurate_aggregation"
    assert label(row, said).label == "other"
    assert label(fwe_row(), "cdpmiy cd").label == "parametric"  # "cd": a word of no text
    assert label(fwe_row(), "cdpmiy cd", finish="length").label == "other"  # a cut "cdpmiy"
    assert label(row, "1. pothole", finish="length").label == "parametric"  # one item kept


def test_fwe_modes():
    row = fwe_row()
    # only punctuation is empty (§4.6), flagged as the noise token it is
    assert label(row, "...").flags == ("empty", "noise_token")
    assert label(row, "cdpmiy, ...").label == "noise_token"
    wrong = label(row, "cdpmiy thxbsg sqggjk")
    assert wrong.label == "inaccurate_aggregation" and wrong.rank == 5
    assert "near_rank" in wrong.flags
    assert label(row, "the an a").label == "parametric"
    copied = label(row, "thxbsg thxbsg thxbsg sqggjk sqggjk")
    assert copied.label == "copy_context" and copied.rank == 5


def test_qa_modes():
    row = qa_row()
    assert label(row, "Germany").label == "not_in_context"
    assert label(row, "Rollo").label == "distractor_document"
    assert label(row, "Rouen").label == "other"  # in the gold document, not the answer
    start = row.input[:45]
    assert label(row, start).label == "copy_input_start"


def test_at_budget_is_a_flag():
    got = label(qa_row(), "Germany", finish="length")
    assert got.label == "not_in_context" and got.flags == ("not_in_context", "at_budget")


def test_precedence_and_flags():
    assert PRECEDENCE[0] == "empty" and PRECEDENCE[-1] == "other"
    assert primary(["key_echo", "distractor_value", "vicinity"]) == "distractor_value"
    assert primary(["duplicated"]) == "other" and primary([]) == "other"
    assert not {s.name for s in SUB_FLAGS} & set(PRECEDENCE)


# --- the no-context coincidence (ruler report --no-context) -----------------------------------

def _qa_cell(rows, answers):
    return FailureCell(task="qa_1", length=4096, family="qa", answered=len(answers),
                       rows=tuple(rows))


def test_the_no_context_coincidence():
    q = question_key("Question: In what country is Normandy located?")
    rows = [RowFailure(index=0, label="not_in_context", flags=["not_in_context"]),
            RowFailure(index=1, label="distractor_document", flags=["distractor_document"]),
            RowFailure(index=2, label="empty", flags=["empty"]),
            RowFailure(index=3, label="other", flags=["other"])]
    run = [QaAnswer(index=0, answer="germany", question=q),
           QaAnswer(index=1, answer="rollo viking leader", question=q),
           QaAnswer(index=2, answer="", question=q),
           QaAnswer(index=3, answer="rouen", question=q),
           QaAnswer(index=4, answer="france", question=q)]  # right: no label to change
    blind = [QaAnswer(index=0, answer="germany", question=q),
             QaAnswer(index=1, answer="rollo viking", question=q),
             QaAnswer(index=2, answer="", question=q),
             QaAnswer(index=4, answer="france", question=q)]
    cell = _coincide(_qa_cell(rows, run), run, blind, "RUN0")
    got = {r.index: (r.label, r.flags) for r in cell.rows}
    assert got[0] == ("no_context_coincidence", ["no_context_coincidence", "not_in_context"])
    assert got[1] == ("distractor_document", ["distractor_document", "near"])
    assert got[2] == ("empty", ["empty"])  # two empty answers do not coincide
    assert got[3] == ("other", ["other"])  # no no-context answer: not paired
    assert cell.coincidence.to_json() == {"paired": 3, "equal": 1, "near": 1}
    assert cell.labels["correct"] == 1
    other_question = [QaAnswer(index=0, answer="germany", question="0" * 16)]
    with pytest.raises(RulerError, match="asks another question"):
        _coincide(_qa_cell(rows, run), run, other_question, "RUN0")


def test_cell_failures_shape():
    good = CellFailures(definitions="d", family="qa", labelled=2,
                        rows=[RowFailure(index=1, label="empty", flags=["empty"])],
                        answers=[QaAnswer(index=1, answer="", question="q")]).to_json()
    assert CellFailures.shape_ok(good) and CellFailures.shape_ok(None)
    assert CellFailures.from_json(good).to_json() == good
    assert "distance" not in good["rows"][0]  # measures that do not apply are left out
    for broken in ({**good, "labelled": -1}, {**good, "rows": [{"index": "x"}]},
                   {**good, "answers": [{"index": 0}]}, [good]):
        assert not CellFailures.shape_ok(broken)
    assert FailureReport(cells=[]).tasks == []


def test_any_answer_gets_a_label_or_none():
    """Seeded fuzz: whatever a model writes (pieces of the row, numbers, names, dots, unicode,
    control characters), the labeler returns None (right) or one known label whose flags
    start with it, and never fails."""
    import random

    rng = random.Random(42)
    rows = [niah_row([("lazy-dog", "1234567"), ("big-cat", "7654321")], ["lazy-dog"]),
            uuid_row(), vt_row(), cwe_row(), fwe_row(), qa_row()]
    for _ in range(400):
        row = rng.choice(rows)
        words = row.input.split() + list(row.outputs) + [
            "the", "...", "1.", "2,", "VAR", "ZZZZZ", "é", "\x00", "\n", "12345678", "-", ":"]
        pred = " ".join(rng.choice(words) for _ in range(rng.randint(0, 40)))
        got = label(row, pred)
        if got is not None:
            assert got.label in PRECEDENCE and got.flags[0] == got.label, (pred, got)
