"""Declared tasks (issue 42 item 1): RULER's generators with the complexity a user asks for, in
upstream's own schema (`name: {task: <generator>, args: {...}}`), each argument checked
against its domain when the task is declared; upstream's scripts/synthetic.yaml declares the
13 tasks themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.declared import forget_declared_tasks  # noqa: F401 (autouse)
from ruler.builder.pipeline.config import BuildConfig
from ruler.catalog.benchmarks import tasks_of
from ruler.catalog.declared import (
    declare,
    declare_all,
    is_declared,
    make_spec,
    parse_declarations,
    parse_task_yaml,
    read_task_file,
    record,
)
from ruler.catalog.tasks import TASKS
from ruler.kernel.errors import RulerError

UPSTREAM_YAML = Path(__file__).parent / "data" / "upstream_synthetic.yaml"
RULER_13 = ("niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1",
            "niah_multikey_2", "niah_multikey_3", "niah_multivalue", "niah_multiquery", "vt",
            "cwe", "fwe", "qa_1", "qa_2")



def test_upstream_synthetic_yaml_declares_the_13_tasks_themselves():
    declarations = read_task_file(UPSTREAM_YAML)
    assert tuple(d.name for d in declarations) == RULER_13
    for d in declarations:  # the same spec: parameters, sources, budget, family
        assert make_spec(d.name, d.family, d.args) == TASKS[d.name], d.name
    assert declare_all(declarations) == RULER_13
    assert not any(is_declared(t) for t in RULER_13)  # the catalog's own, nothing recorded
    assert all(record(t) is None for t in RULER_13)


def test_a_declared_task_is_the_family_spec_with_other_parameters():
    spec = declare("decl_unit_k8", "niah", {"type_haystack": "essay", "num_needle_k": 8})
    std = TASKS["niah_multikey_1"]
    assert spec.family is std.family  # one family: template, prefix, budget, metric
    assert dict(spec.params) == {**std.params, "num_needle_k": 8}
    assert spec.sources == std.sources and spec.metric == std.metric
    assert spec.tokens_to_generate == 128
    assert record("decl_unit_k8").to_json() == {"task": "niah", "args": dict(spec.params)}
    assert "decl_unit_k8" in tasks_of("ruler")
    assert "decl_unit_k8" not in tasks_of("ruler2") and "decl_unit_k8" not in tasks_of("oneruler")
    # declaring it again, the same way (a manifest's reader), is the same task
    assert declare("decl_unit_k8", "niah", dict(spec.params)) == spec


@pytest.mark.parametrize("family, args, params, budget", [
    # the paper's name of the noise haystack
    ("niah", {"type_haystack": "repeat"}, {"type_haystack": "noise"}, 128),
    # 8 UUIDs take 176-282 tokens: the budget grows with the answer
    ("niah", {"type_needle_v": "uuids", "num_needle_v": 8}, {"num_needle_v": 8}, 320),
    # 11 names take 30-40 tokens: 6 a name
    ("variable_tracking", {"num_hops": 10}, {"num_hops": 10}, 66),
    ("variable_tracking", {"num_chains": 4, "num_hops": 2}, {"num_chains": 4}, 30),
    ("common_words_extraction", {"num_fewshot": 0}, {"num_fewshot": 0}, 120),
    ("common_words_extraction", {"num_cw": 5}, {"num_cw": 5}, 120),
    ("common_words_extraction", {"num_cw": 15}, {"num_cw": 15}, 180),  # 12 tokens a word
    ("freq_words_extraction", {"alpha": 3.5}, {"alpha": 3.5}, 50),
    ("freq_words_extraction", {"alpha": 2}, {"alpha": 2.0}, 50),  # read as a number
    ("freq_words_extraction", {"vocab_size": 100}, {"vocab_size": 100}, 50),
    ("qa", {"dataset": "hotpotqa", "tokens_to_generate": 64}, {"dataset": "hotpotqa"}, 64),
])
def test_arguments_read_into_parameters_and_budget(family, args, params, budget):
    spec = make_spec("decl_unit_x", family, args)
    assert params.items() <= dict(spec.params).items()
    assert spec.tokens_to_generate == budget


def test_defaults_left_implicit_by_the_13_stay_implicit():
    # num_fewshot 1, add_fewshot, vocab_size -1 are upstream's defaults: not parameters, so a
    # declaration spelling them out is still the standard task
    assert make_spec("cwe", "common_words_extraction", {"num_fewshot": 1}) == TASKS["cwe"]
    assert make_spec("vt", "variable_tracking", {"add_fewshot": True}) == TASKS["vt"]
    assert make_spec("fwe", "freq_words_extraction",
                     {"vocab_size": -1, "add_fewshot": False}) == TASKS["fwe"]
    assert make_spec("niah_single_3", "niah", {"type_needle_v": "uuids",
                                               "tokens_to_generate": 128}) \
        == TASKS["niah_single_3"]


@pytest.mark.parametrize("family, args, says", [
    ("niah", {"type_haystack": "book"}, "type_haystack: 'book' is none of essay, noise, needle"),
    ("niah", {"type_needle_k": "digits"}, "type_needle_k: 'digits' is none of"),
    ("niah", {"num_needle_k": 0}, "num_needle_k: must be a whole number >= 1"),
    ("niah", {"num_needle_v": True}, "num_needle_v: must be a whole number"),
    ("niah", {"num_needle_q": 1.5}, "num_needle_q: must be a whole number"),
    ("niah", {"num_needle_k": 10 ** 400}, "num_needle_k: must be a whole number >= 1 and <= 1000"),
    ("niah", {"num_needle_k": 41}, "41 needles on an essay haystack"),
    ("niah", {"num_needle_q": 8, "num_needle_v": 8}, "64 needles on an essay haystack"),
    ("niah", {"needles": 3}, "unknown argument 'needles' of niah"),
    ("niah", {"random_seed": 7}, "random_seed is not a task's: it is set by the build's --seed"),
    ("niah", {"num_samples": 7}, "--samples"),
    ("niah", {"max_seq_length": 7}, "--lengths"),
    ("niah", {"tokens_to_generate": 0}, "tokens_to_generate: must be a whole number >= 1"),
    ("variable_tracking", {"num_hops": 11}, "num_hops: must be a whole number >= 1 and <= 10"),
    ("variable_tracking", {"num_hops": 0}, "num_hops"),
    ("variable_tracking", {"num_chains": 0}, "num_chains"),
    ("variable_tracking", {"type_haystack": "essay"}, "type_haystack: 'essay' is not built"),
    ("variable_tracking", {"add_fewshot": False}, "add_fewshot: only True is built"),
    ("common_words_extraction", {"freq_cw": 3, "freq_ucw": 3}, "freq_cw: 3 <= freq_ucw 3"),
    ("common_words_extraction", {"freq_cw": 2, "freq_ucw": 5}, "freq_cw: 2 <= freq_ucw 5"),
    ("common_words_extraction", {"num_cw": 20}, "num_cw: must be a whole number >= 1 and <= 19"),
    ("common_words_extraction", {"num_cw": 0}, "num_cw: must be a whole number >= 1"),
    ("common_words_extraction", {"num_fewshot": -1}, "num_fewshot"),
    ("freq_words_extraction", {"alpha": 1.0}, "alpha: must be a number > 1"),
    ("freq_words_extraction", {"alpha": 0.5}, "alpha"),
    ("freq_words_extraction", {"alpha": "2"}, "alpha"),
    ("freq_words_extraction", {"coded_wordlen": 3}, "coded_wordlen"),
    ("freq_words_extraction", {"vocab_size": 4}, "vocab_size"),
    ("freq_words_extraction", {"add_fewshot": True}, "add_fewshot: only False is built"),
    ("qa", {}, "argument dataset is required"),
    ("qa", {"dataset": "nq"}, "dataset: 'nq' is none of squad, hotpotqa"),
])
def test_a_value_outside_its_domain_is_refused_in_one_line_naming_it(family, args, says):
    with pytest.raises(RulerError) as e:
        declare("decl_unit_bad", family, args)
    assert says in str(e.value) and "\n" not in str(e.value)
    assert "decl_unit_bad" not in TASKS.known_names()


def test_unknown_family_and_families_without_declared_tasks_are_refused():
    with pytest.raises(RulerError, match="unknown task family 'niahh'.*niah, variable_tracking"):
        declare("decl_unit_f", "niahh", {})
    other = TASKS[tasks_of("oneruler")[0]].family.name  # declares no configure hook
    with pytest.raises(RulerError, match=f"family '{other}' takes no declared tasks"):
        declare("decl_unit_f", other, {})


def test_one_name_is_one_task():
    declare("decl_unit_same", "variable_tracking", {"num_hops": 6})
    with pytest.raises(RulerError, match="'decl_unit_same' is variable_tracking.*num_hops=2.*"
                                         "declares it as variable_tracking.*num_hops=6"):
        declare("decl_unit_same", "variable_tracking", {"num_hops": 2})
    with pytest.raises(RulerError, match="the catalog's task is niah"):
        declare("niah_single_2", "niah", {"num_needle_k": 2})
    with pytest.raises(RulerError, match="declared twice"):
        declare_all(parse_declarations("decl_unit_t=niah;decl_unit_t=niah"))


def test_one_line_form():
    got = parse_declarations(" a1=niah:type_haystack=needle,num_needle_k=2 ; "
                             "b1=freq_words_extraction:alpha=1.5;c1=qa:dataset=squad,"
                             "tokens_to_generate=64;d1=variable_tracking")
    assert [(d.name, d.family, dict(d.args)) for d in got] == [
        ("a1", "niah", {"type_haystack": "needle", "num_needle_k": 2}),
        ("b1", "freq_words_extraction", {"alpha": 1.5}),
        ("c1", "qa", {"dataset": "squad", "tokens_to_generate": 64}),
        ("d1", "variable_tracking", {})]
    for bad, says in [("a1", "NAME=FAMILY"), ("=niah", "NAME=FAMILY"),
                      ("a1=niah:num_needle_k", "not ARG=VALUE"),
                      ("a1=niah:num_needle_k=1,num_needle_k=2", "given twice"),
                      ("a1=niah:num_needle_k=[1]", "not one string, number"), (";", "no task")]:
        with pytest.raises(RulerError, match=says):
            parse_declarations(bad)


@pytest.mark.parametrize("text, says", [
    ("", "must be a mapping of task name"),
    ("- niah\n", "must be a mapping of task name"),
    ("a: {task: niah\n", "not valid YAML"),
    ("a: {task: niah}\na: {task: qa}\n", "key 'a' appears twice"),
    ("a: {task: niah, args: {num_needle_k: 1, num_needle_k: 2}}\n", "appears twice"),
    ("a: {task: niah, args: {num_needle_k: [1, 2]}}\n", "must be a name with one value"),
    ("a: {task: niah, args: {num_needle_k: {x: 1}}}\n", "must be a name with one value"),
    ("a: {task: niah, args: [1]}\n", "`args` must be a mapping"),
    ("a: {task: freq_words_extraction, args: {alpha: .nan}}\n", "must be a name with one value"),
    ("a: {task: niah, arg: {}}\n", "has arg: an entry holds `task` and `args` only"),
    ("a: niah\n", "must be a mapping with `task`"),
    ("a: {args: {}}\n", "must be a mapping with `task`"),
    ("1: {task: niah}\n", "task name 1 is not a string"),
    ("a: &x [*x]\n", "must be a mapping with `task`"),
    ("[" * 5000, "nested too deeply"),
])
def test_task_file_reader_refuses_what_is_no_task_file_in_one_line(text, says):
    with pytest.raises(RulerError) as e:
        declare_all(parse_task_yaml(text, "t.yaml"))
    assert says in str(e.value) and "\n" not in str(e.value)


def test_task_file_encodings_and_size(tmp_path):
    good = tmp_path / "bom.yaml"
    good.write_bytes(b"\xef\xbb\xbfdecl_unit_bom:\r\n  task: niah\r\n  args: {num_needle_v: 2}\r\n")
    assert [d.name for d in read_task_file(good)] == ["decl_unit_bom"]
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("a: {task: niah, args: {type_haystack: \xe9}}".encode("latin-1"))
    with pytest.raises(RulerError, match="is not UTF-8 text"):
        read_task_file(latin)
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (2 << 20))
    with pytest.raises(RulerError, match="a task file is a small YAML mapping"):
        read_task_file(big)
    with pytest.raises(RulerError, match="cannot read task file"):
        read_task_file(tmp_path / "missing.yaml")


def test_a_task_declared_earlier_in_the_process_is_not_built_unasked():
    """`ruler.build(suite=...)` and then `ruler.build()` in one session: the second build is
    the 13 tasks, not the 13 and every task the first declared (they stay declared: a folder
    holding them can still be read)."""
    declare("decl_unit_vt", "variable_tracking",
            {"type_haystack": "noise", "num_chains": 2, "num_hops": 2})
    assert BuildConfig(tokenizer="qwen2.5").tasks == RULER_13
    assert "decl_unit_vt" in tasks_of("ruler")
    assert BuildConfig(tokenizer="qwen2.5", declare="decl_unit_v2=niah:type_haystack=essay,"
                       "num_needle_v=2").tasks == ("decl_unit_v2",)
