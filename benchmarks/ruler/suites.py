"""The paper's analysis configurations as suites (`ruler build --suite NAME`): Section 5's
Figure 2 and Figure 3 panels (Yi-34B's task error analysis), the CWE copying pair (the 80 %
statistic and footnote 7's run without the one-shot example) and Appendix C's 18
configurations of the correlation study.

Names and values follow `../shared/notes/paper-analysis.md` §2.6 and §3.3. Each
configuration says where its values come from:
- [paper]: the paper's text or tables fix them;
- [figure]: a figure's legend (its axis labels for App. C), the paper's text does not;
- [inferred]: our reading of what the paper does not state (the evidence in the note);
- [ours]: a choice the paper does not make.
The standard tasks of a panel are RULER's own 13 (same names, same rows as the default
config). Where upstream HEAD (c3f5e3b) cannot generate a configuration as the paper describes
(variable tracking with 5+ hops, more than one chain, the hop-10 answer's budget, CWE without
its example), ours builds it as the paper-era generator did, and the card's differences say
how (`declared_differences`).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from ruler.catalog.suites import Suite, SuiteTask

NIAH, VT, CWE, FWE = ("niah", "variable_tracking", "common_words_extraction",
                      "freq_words_extraction")


def _std(name: str, label: str, source: str, note: str = "") -> SuiteTask:
    return SuiteTask(name, label, source, note=note)


def _new(name: str, family: str, label: str, source: str, note: str = "",
         **args: Any) -> SuiteTask:
    return SuiteTask(name, label, source, family, MappingProxyType(args), note)


VANILLA = _std("niah_single_2", "Vanilla NIAH (#K=1, #V=1, #Q=1)", "[paper]",
               "essay haystack, word keys, number values: Fig. 2's default")

FIG2_NEEDLE_TYPES = Suite("fig2_needle_types", "Figure 2 left: needle and haystack types", (
    _std("niah_single_1", "Passkey retrieval", "[paper]"),
    VANILLA,
    _std("niah_single_3", "K=W V=U", "[paper]", "UUID values"),
    _new("niah_single_kw_vw", NIAH, "K=W V=W", "[figure]",
         "App. C's removed 'k=W, v=W, h=essay'", type_haystack="essay", type_needle_k="words",
         type_needle_v="words"),
    _new("niah_single_ku_vu", NIAH, "K=U V=U", "[figure]",
         "the essay haystack is [inferred] from the caption's default", type_haystack="essay",
         type_needle_k="uuids", type_needle_v="uuids"),
))

FIG2_DISTRACTORS = Suite("fig2_distractors", "Figure 2 middle-left: distractor needles (#K)", (
    _std("niah_single_2", "#K=1", "[figure]"),
    _std("niah_multikey_1", "#K=4", "[figure]"),
    _new("niah_multikey_k8", NIAH, "#K=8", "[figure]", type_haystack="essay", num_needle_k=8),
    _std("niah_multikey_2", "#K=FULL", "[paper]", "a haystack of distractor needles"),
    _std("niah_multikey_3", "#K=FULL, K=U V=U", "[inferred]",
         "the transcribed legend reads 'K=1 V=U'; App. C's label and Table 5 give K=U V=U"),
))

FIG2_VALUES = Suite("fig2_values", "Figure 2 middle-right: values per key (#V)", (
    _std("niah_single_2", "#V=1", "[figure]"),
    _new("niah_multivalue_v2", NIAH, "#V=2", "[figure]", "App. C's removed '#v=2'",
         type_haystack="essay", num_needle_v=2),
    _std("niah_multivalue", "#V=4", "[figure]"),
    _new("niah_multivalue_v8", NIAH, "#V=8", "[figure]", type_haystack="essay", num_needle_v=8),
))

FIG2_QUERIES = Suite("fig2_queries", "Figure 2 right: keys asked (#Q)", (
    _std("niah_single_2", "#Q=1", "[paper]", "'from 1 to 8'"),
    _new("niah_multiquery_q2", NIAH, "#Q=2", "[figure]", "App. C's removed '#q=2'",
         type_haystack="essay", num_needle_q=2),
    _std("niah_multiquery", "#Q=4", "[figure]"),
    _new("niah_multiquery_q8", NIAH, "#Q=8", "[paper]", "'from 1 to 8'", type_haystack="essay",
         num_needle_q=8),
))

FIG3_HOPS = Suite("fig3_hops", "Figure 3 left: variable tracking, more hops (1 chain)", (
    _std("vt", "hop=4", "[figure]"),
    _new("vt_c1_h6", VT, "hop=6", "[figure]", "upstream HEAD crashes (see the differences)",
         type_haystack="noise", num_chains=1, num_hops=6),
    _new("vt_c1_h10", VT, "hop=10", "[figure]",
         "upstream HEAD crashes; its 30-token budget cannot hold 11 names (see the "
         "differences)", type_haystack="noise", num_chains=1, num_hops=10),
))

FIG3_CHAINS = Suite("fig3_chains", "Figure 3 middle-left: variable tracking, more chains "
                                   "(2 hops)", (
    _new("vt_c2_h2", VT, "chain=2", "[figure]", "App. C's removed 'chain=2, hop=2'",
         type_haystack="noise", num_chains=2, num_hops=2),
    _new("vt_c4_h2", VT, "chain=4", "[figure]", type_haystack="noise", num_chains=4,
         num_hops=2),
    _new("vt_c8_h2", VT, "chain=8", "[figure]", type_haystack="noise", num_chains=8,
         num_hops=2),
))

FIG3_ALPHA = Suite("fig3_alpha", "Figure 3 middle-right: frequent words, Zipf α", (
    _new("fwe_a3.5", FWE, "α=3.5", "[figure]", "App. C's removed 'a=3.5'", alpha=3.5),
    _std("fwe", "α=2.0", "[ours]", "the standard fwe, absent from the transcribed legend: "
                                   "built as the anchor"),
    _new("fwe_a1.5", FWE, "α=1.5", "[figure]", "low confidence in the transcribed legend",
         alpha=1.5),
    _new("fwe_a1.3", FWE, "α=1.3", "[figure]", "low confidence in the transcribed legend",
         alpha=1.3),
    _new("fwe_a1.2", FWE, "α=1.2", "[figure]", "low confidence in the transcribed legend",
         alpha=1.2),
))

FIG3_QA = Suite("fig3_qa", "Figure 3 right: QA against its no-context baseline", (
    _std("qa_1", "SQuAD", "[paper]"),
    _std("qa_2", "HotpotQA", "[paper]"),
), note="its 'w/o context' lines are the no-context config of the same tasks [ours: the "
        "paper does not give its no-context prompt]: `ruler build --no-context --tasks "
        "qa_1,qa_2` (config `<tokenizer>--nocontext`), scored with `ruler report RUN "
        "--no-context RUN0`")

CWE_COPYING = Suite("cwe_copying", "Section 5: copying from the one-shot example (CWE)", (
    _std("cwe", "CWE (one-shot example)", "[paper]",
         "'Over 80% of Yi's output in the CWE task at 128K is ... copied from the one-shot "
         "example'"),
    _new("cwe_no_oneshot", CWE, "CWE without the one-shot example", "[paper]",
         "footnote 7; the switch is upstream HEAD's num_fewshot 0 (the paper-era code had "
         "none), without HEAD's stray leading newline (see the differences)", freq_cw=30,
         freq_ucw=3, num_cw=10, num_fewshot=0),
), shares=("copy_oneshot", "copy_input_start"))

#: Appendix C's 18 configurations, in Figure 5's order (labels [figure]; the 13 kept are
#: Table 5's, the 5 removed are the rest: [inferred] by arithmetic).
APPENDIX_C = Suite("appendix_c", "Appendix C: the 18 configurations of the correlation study", (
    _std("niah_single_1", "k=W, v=N, h=repeat", "[figure]", "kept"),
    _std("niah_single_2", "k=W, v=N, h=essay", "[figure]", "kept"),
    _std("niah_single_3", "k=W, v=U, h=essay", "[figure]", "kept"),
    _new("niah_single_kw_vw", NIAH, "k=W, v=W, h=essay", "[figure]", "removed",
         type_haystack="essay", type_needle_k="words", type_needle_v="words"),
    _std("niah_multikey_1", "#k=4", "[figure]", "kept"),
    _std("niah_multikey_2", "#k=full", "[figure]", "kept"),
    _std("niah_multikey_3", "#k=full, k=U, v=U", "[figure]", "kept"),
    _new("niah_multivalue_v2", NIAH, "#v=2", "[figure]", "removed", type_haystack="essay",
         num_needle_v=2),
    _std("niah_multivalue", "#v=4", "[figure]", "kept"),
    _new("niah_multiquery_q2", NIAH, "#q=2", "[figure]", "removed", type_haystack="essay",
         num_needle_q=2),
    _std("niah_multiquery", "#q=4", "[figure]", "kept"),
    _std("vt", "chain=1, hop=4", "[figure]", "kept"),
    _new("vt_c2_h2", VT, "chain=2, hop=2", "[figure]", "removed", type_haystack="noise",
         num_chains=2, num_hops=2),
    _std("cwe", "CWE", "[figure]", "kept"),
    _std("fwe", "a=2.0", "[figure]", "kept"),
    _new("fwe_a3.5", FWE, "a=3.5", "[figure]", "removed", alpha=3.5),
    _std("qa_1", "squad", "[figure]", "kept"),
    _std("qa_2", "hotpotqa", "[figure]", "kept"),
))

PANELS = (FIG2_NEEDLE_TYPES, FIG2_DISTRACTORS, FIG2_VALUES, FIG2_QUERIES, FIG3_HOPS,
          FIG3_CHAINS, FIG3_ALPHA, FIG3_QA, CWE_COPYING)

#: Every Section 5 configuration at once: the panels' (each once, in the panels' order).
def _once(panels: tuple[Suite, ...]) -> tuple[SuiteTask, ...]:
    """Every configuration of the panels, once, in the panels' order (as its first panel
    labels it)."""
    seen: dict[str, SuiteTask] = {}
    for panel in panels:
        for task in panel.tasks:
            seen.setdefault(task.name, task)
    return tuple(seen.values())


SECTION5 = Suite("section5", "Section 5 (Figures 2 and 3, the CWE copying pair): every "
                             "configuration", _once(PANELS), note=FIG3_QA.note,
                 panels=PANELS)

SUITES = MappingProxyType({s.name: s for s in (SECTION5, *PANELS, APPENDIX_C)})
