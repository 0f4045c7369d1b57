"""ONERULER's 7 tasks in the catalog (the interface with the evaluator): prefixed names beside
upstream's, the parameters upstream's configs pass, metric "oneruler", budgets reserved within
L, the benchmark table, its lengths and one config per language."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ruler.benchmarks.oneruler.languages import LANGUAGES, OnerulerLanguage
from ruler.benchmarks.oneruler.tasks import CROSS_LINGUAL_TASKS as ONERULER_CROSS_LINGUAL_TASKS
from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS
from ruler.benchmarks.oneruler.tasks import UPSTREAM_NAMES as ONERULER_UPSTREAM_NAMES
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.builder.selection import length_sets
from ruler.catalog.benchmarks import (
    BENCHMARKS,
    benchmark_config,
    benchmark_id,
    check_tasks,
    get_benchmark,
)
from ruler.catalog.tasks import TASKS
from ruler.kernel.errors import RulerError

SHARED = Path(os.environ.get("RULER_SHARED", Path(__file__).parents[4] / "shared"))
UPSTREAM = ("niah_single", "niah_none", "niah_multikey", "niah_multivalue", "niah_multiquery",
            "cwe", "cwe_easy")


def test_names_metric_budget():
    assert ONERULER_TASKS == tuple(f"or_{t}" for t in UPSTREAM)
    assert tuple(ONERULER_UPSTREAM_NAMES.values()) == UPSTREAM
    assert not set(ONERULER_TASKS) & set(STANDARD_TASKS)
    assert BENCHMARKS["oneruler"] == ONERULER_TASKS and benchmark_id("oneruler") == "oneruler"
    for t in ONERULER_TASKS:
        spec = TASKS[t]
        assert spec.metric == "oneruler" and spec.family.answer_prefix == ""
        assert spec.tokens_to_generate == (50 if "cwe" in t else 30)  # synthetic/constants.py
    assert ONERULER_CROSS_LINGUAL_TASKS == ONERULER_TASKS[:5]
    assert get_benchmark("oneruler").length_rule == "prompt+tokens_to_generate"


def test_parameters_as_upstream_configs_pass_them():
    """config/synthetic.yaml: k/v/q per NIAH task (multiquery's k raised to q), relevant_needle
    0 for niah_none; cwe 20/10 and cwe_easy 30/3, scaled to 10/5 and 10/1 at <= 8000."""
    kvq = {t: tuple(TASKS[t].params[p] for p in ("num_needle_k", "num_needle_v",
                                                  "num_needle_q", "relevant_needle"))
           for t in ONERULER_CROSS_LINGUAL_TASKS}
    assert kvq == {"or_niah_single": (1, 1, 1, True), "or_niah_none": (4, 1, 1, False),
                   "or_niah_multikey": (4, 1, 1, True), "or_niah_multivalue": (1, 4, 1, True),
                   "or_niah_multiquery": (2, 1, 2, True)}
    cwe = {t: tuple(TASKS[t].params[p] for p in ("freq_cw", "freq_ucw", "short_freq_cw",
                                                 "short_freq_ucw", "short_at_most", "num_cw"))
           for t in ("or_cwe", "or_cwe_easy")}
    assert cwe == {"or_cwe": (20, 10, 10, 5, 8000, 10), "or_cwe_easy": (30, 3, 10, 1, 8000, 10)}


def test_lengths_and_configs():
    assert length_sets()["oneruler"] == (8000, 32000, 64000, 128000)
    ko = {"language": OnerulerLanguage.parse("ko")}
    assert benchmark_config("llama-3.1", "oneruler", ko) == \
        "llama-3.1--oneruler-ko"
    pair = OnerulerLanguage.parse("en-ko")
    assert (pair.context, pair.instructions, pair.cross_lingual) == ("en", "ko", True)
    assert benchmark_config("qwen2.5", "oneruler", {"language": pair}) == "qwen2.5--oneruler-en-ko"
    assert pair.record() == {"context": "en", "instructions": "ko"}
    assert OnerulerLanguage.from_record(pair.record()) == pair
    assert OnerulerLanguage.from_record("ko").record() == "ko"
    for bad in ("xx", "en-ko-ja", "en-xx"):
        with pytest.raises(RulerError, match="ONERULER"):
            OnerulerLanguage.parse(bad)
    with pytest.raises(RulerError, match="--benchmark oneruler"):
        check_tasks("ruler", ["or_cwe"])


def test_a_misspelt_language_or_pair_is_answered_with_the_form_it_means(capsys, tmp_path):
    """`ko_en` got the list of the 26 codes and no word of the pair form (issue 40.25)."""
    from ruler.commands.main import main

    said = {
        "ko_en": "did you mean ko-en or en-ko? (a cross-lingual pair is context-instructions: "
                 "ko-en: the context in ko, the instructions in en)",
        "en:ko": "did you mean en-ko or ko-en? (a cross-lingual pair is context-instructions: "
                 "en-ko: the context in en, the instructions in ko)",
        "KO-EN": "did you mean ko-en?", "KO": "did you mean ko?", " Ko ": "did you mean ko?",
        "ko_ko": "did you mean ko?",
    }
    for text, hint in said.items():
        with pytest.raises(RulerError) as e:
            OnerulerLanguage.parse(text)
        assert str(e.value) == f"ONERULER has no language {text.strip()!r}: {hint}"
    for bad in ("xx", "ko_xx", "en-ko-ja"):  # nothing it could mean: the rule, as before
        with pytest.raises(RulerError) as e:
            OnerulerLanguage.parse(bad)
        assert "did you mean" not in str(e.value)
    assert main(["build", "--benchmark", "oneruler", "--tokenizer", "gpt-4", "--languages",
                 "fr,ko_en", "--out", str(tmp_path / "data")]) == 2
    assert capsys.readouterr().err.strip() == (
        "ruler: error: ONERULER has no language 'ko_en': " + said["ko_en"])
    assert not (tmp_path / "data").exists()


def test_languages_are_upstreams_prompt_folders():
    folder = SHARED / "sources" / "oneruler" / "prompt"
    assert LANGUAGES == tuple(sorted(p.name for p in folder.iterdir() if p.is_dir()))
    for lang in LANGUAGES:  # every language has both prompt files, with upstream's parts
        parts = json.loads((folder / lang / "niah.txt").read_text(encoding="utf-8"))
        assert "none" in parts and "{context}" in (folder / lang / "cwe.txt").read_text("utf-8")
