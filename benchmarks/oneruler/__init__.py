"""ONERULER (id "oneruler"): RULER's needle and common-words tasks in 26 languages
(mungg/OneRuler @ a3fe6af), one config per language or cross-lingual pair
(`<tokenizer>--oneruler-<lang>`: its build axis, `languages.LanguageAxis`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ruler.benchmarks.oneruler import sources, tasks
from ruler.benchmarks.oneruler.languages import LanguageAxis, row_languages
from ruler.benchmarks.oneruler.metric import check_language, oneruler, oneruler_corrected
from ruler.catalog.benchmarks import Aggregation, Benchmark
from ruler.eval.metrics.specs import MetricSpec, percent_of_rows, raw_generation

if TYPE_CHECKING:
    from ruler.builder.manifest import BuildEntry


def build_language(build: BuildEntry) -> str:
    """The language a ONERULER build records (upstream's `--language`: "ko", "en-ko"): what its
    keyed metrics read of a row's build."""
    code = build.axis_codes().get("language")
    if code is None:
        raise ValueError("its manifest entry records no ONERULER language")
    return check_language(code)


#: Its metrics: upstream's evaluate.py exactly, and the corrected variant that may rescore its
#: rows (`ruler score --metric oneruler_corrected`); on the raw generation, given the row's task
#: and its build's language; a task's score upstream's `avg_acc`, the plain mean of the rows'
#: 0/1, not rounded.
METRICS = {
    "oneruler": MetricSpec(oneruler, raw_generation, percent_of_rows, "oneruler", keyed=True,
                           build_key=build_language, partial_credit=False),
    "oneruler_corrected": MetricSpec(oneruler_corrected, raw_generation, percent_of_rows,
                                     "oneruler", keyed=True, build_key=build_language,
                                     partial_credit=False, replaces="oneruler"),
}

#: ONERULER's lengths: upstream's `config_models.sh` (`SEQ_LENGTHS=(8000 32000 64000 128000)`,
#: the paper's 8K..128K), not powers of two; the default of `--benchmark oneruler`.
LENGTHS = (8000, 32000, 64000, 128000)

BENCHMARK = Benchmark(
    id="oneruler", title="ONERULER", tasks=tasks.TASKS, family="RULER",
    help="oneruler (ONERULER: RULER's NIAH and CWE tasks in 26 languages, one config per "
         "language, <tokenizer>--oneruler-<lang>, see --languages; its data: `ruler sources "
         "fetch oneruler`)",
    # its rows follow RULER's length rule (the prompt as the model reads it + the budget <= L)
    # and have no depth sweep, base or no-context variant
    variants=("", "replicate"), axes=(LanguageAxis(),), default_lengths="oneruler",
    length_sets={"oneruler": LENGTHS}, packages=("sentencex",), languages=row_languages,
    tags=("multilingual", "oneruler"), metrics=METRICS,
    aggregation=Aggregation(
        text="(the paper's accuracy of a language at a length); Avg.: their mean over the "
             "lengths. ONERULER defines no weighted averages and no effective length. Task "
             "scores are upstream's `avg_acc` in percent (the share of rows right), not "
             "rounded."),
    sources=sources.SOURCES,
    card_section="ruler.benchmarks.oneruler.card:oneruler_section",
    card_body="ruler.benchmarks.ruler.card:BODY",
    report="ruler.benchmarks.oneruler.report:REPORT",
    lm_eval="ruler.benchmarks.oneruler.lm_eval:LM_EVAL",
    release_gates=("ruler.benchmarks.oneruler.licences:BOOK_STATUS",),
)
