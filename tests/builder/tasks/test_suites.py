"""The paper's analysis configurations as suites (issue 42 item 2): Section 5's Figure 2 and 3
panels, the CWE copying pair and Appendix C's 18, each a named frozen set of RULER's tasks and
declared tasks with the source of its values."""

from __future__ import annotations

import pytest

from helpers.declared import forget_declared_tasks  # noqa: F401 (autouse)
from ruler.benchmarks.ruler.suites import APPENDIX_C, PANELS, SECTION5, SUITES
from ruler.benchmarks.ruler.tasks import TASKS as RULER_13
from ruler.catalog.benchmarks import get_benchmark
from ruler.catalog.declared import declare_all, make_spec
from ruler.catalog.suites import benchmark_suites, find_suite
from ruler.catalog.tasks import TASKS
from ruler.kernel.errors import RulerError

SOURCES = {"[paper]", "[figure]", "[inferred]", "[ours]"}



def test_ruler_offers_its_suites_by_name():
    assert benchmark_suites(get_benchmark("ruler")) is SUITES
    assert list(SUITES) == ["section5", "fig2_needle_types", "fig2_distractors", "fig2_values",
                            "fig2_queries", "fig3_hops", "fig3_chains", "fig3_alpha", "fig3_qa",
                            "cwe_copying", "appendix_c"]
    assert find_suite(get_benchmark("ruler"), "fig3_hops").task_names == \
        ("vt", "vt_c1_h6", "vt_c1_h10")
    with pytest.raises(RulerError, match="--suite fig9: RULER has no such suite.*section5"):
        find_suite(get_benchmark("ruler"), "fig9")
    assert benchmark_suites(get_benchmark("ruler2")) == {}


def test_every_configuration_is_declarable_and_one_name_is_one_configuration():
    configs: dict[str, object] = {}
    for suite in SUITES.values():
        for t in suite.tasks:
            assert t.source in SOURCES, (suite.name, t.name)
            if t.declared:
                spec = make_spec(t.name, t.family, t.args)
                assert configs.setdefault(t.name, spec) == spec, t.name
                assert t.name not in RULER_13
            else:
                assert t.name in RULER_13 and not t.args
        declare_all(suite.declarations())


def test_section5_is_every_panel_once():
    names = [t.name for p in PANELS for t in p.tasks]
    assert SECTION5.task_names == tuple(dict.fromkeys(names))
    assert len(SECTION5.task_names) == 30  # 15 niah, 6 vt, 5 fwe, 2 qa, 2 cwe
    fams = [TASKS[t.name].family.name if not t.declared else t.family for t in SECTION5.tasks]
    assert [fams.count(f) for f in ("niah", "variable_tracking", "freq_words_extraction", "qa",
                                    "common_words_extraction")] == [15, 6, 5, 2, 2]


def test_appendix_c_is_the_13_and_the_5_removed():
    assert len(APPENDIX_C.tasks) == 18
    kept = [t.name for t in APPENDIX_C.tasks if not t.declared]
    assert sorted(kept) == sorted(RULER_13)
    assert all(t.note == "kept" for t in APPENDIX_C.tasks if not t.declared)
    removed = {t.name: dict(t.args) for t in APPENDIX_C.tasks if t.declared}
    assert removed == {
        "niah_single_kw_vw": {"type_haystack": "essay", "type_needle_k": "words",
                              "type_needle_v": "words"},
        "niah_multivalue_v2": {"type_haystack": "essay", "num_needle_v": 2},
        "niah_multiquery_q2": {"type_haystack": "essay", "num_needle_q": 2},
        "vt_c2_h2": {"type_haystack": "noise", "num_chains": 2, "num_hops": 2},
        "fwe_a3.5": {"alpha": 3.5}}


def test_the_paper_configurations_upstream_cannot_build_are_built_as_the_paper_describes():
    hop10 = make_spec("vt_c1_h10", "variable_tracking", {"num_hops": 10})
    assert hop10.tokens_to_generate == 66  # 11 names take 30-40 tokens
    assert make_spec("vt_c1_h6", "variable_tracking", {"num_hops": 6}).tokens_to_generate == 30
    cwe0 = make_spec("cwe_no_oneshot", "common_words_extraction", {"num_fewshot": 0})
    assert cwe0.params["num_fewshot"] == 0 and cwe0.tokens_to_generate == 120


def test_the_card_differences_name_the_declared_tasks_they_concern():
    from ruler.benchmarks.ruler.declared_differences import declared_differences
    from ruler.catalog.declared import DeclaredTask

    declared_all = {t.name: make_spec(t.name, t.family, t.args)
                    for t in SECTION5.tasks if t.declared}
    records = {n: DeclaredTask(task=s.family.name,
                               args={**s.params, **({"tokens_to_generate": s.answer_budget}
                                                    if s.answer_budget else {})})
               for n, s in declared_all.items()}
    rows = declared_differences(records)
    scopes = [scope for scope, _, _ in rows]
    assert scopes == ["`vt_c1_h10`, `vt_c1_h6`", "`vt_c2_h2`, `vt_c4_h2`, `vt_c8_h2`",
                      "`vt_c1_h10`", "`cwe_no_oneshot`"]
    assert all("{" not in why for _, _, why in rows)  # every measured figure filled in
    assert declared_differences({"x": DeclaredTask(task="niah", args={"num_needle_k": 8})}) \
        == []
