"""Build variants: `--output-budget N` writes the reasoning config `<tokenizer>--out<N>`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from helpers.builds import build, rows
from helpers.reasoning import expected_prompt, thinking_tokenizer
from ruler.builder.manifest import Manifest
from ruler.builder.pipeline import BuildConfig
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.builder.verify.run import verify
from ruler.catalog.variants import NO_VARIANT, OutputBudget
from ruler.commands.main import main
from ruler.kernel.errors import RulerError

TASKS = ("niah_single_1", "vt", "qa_1")


def test_variant_names():
    assert OutputBudget(16384).suffix() == "out16k"
    assert OutputBudget(1000).suffix() == "out1000"
    assert OutputBudget(16384).config_name("llama-3.1") == "llama-3.1--out16k"
    assert NO_VARIANT.config_name("llama-3.1") == "llama-3.1"


def test_a_budget_must_leave_room_at_every_length():
    with pytest.raises(RulerError, match="4096, 16384.*exceed"):
        BuildConfig(tokenizer="qwen2.5", lengths=(4096, 16384, 32768),
                    variant=OutputBudget(16384))
    with pytest.raises(RulerError, match="positive"):
        BuildConfig(tokenizer="qwen2.5", variant=OutputBudget(0))


def test_a_tokenizer_without_chat_template_is_refused(tmp_path, capsys):
    code = main(["build", "--tokenizer", "gpt-4", "--tasks", "vt", "--lengths", "2048",
                 "--samples", "1", "--output-budget", "256", "--out", str(tmp_path / "o"),
                 "--no-progress"])
    assert code == 2 and "no chat template" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    """qwen2.5's default config and its 256-token variant, side by side in one folder."""
    out = tmp_path_factory.mktemp("variant")
    build(out, "qwen2.5", TASKS, (2048,), samples=3, workers=1, variant=OutputBudget(256))
    build(out, "qwen2.5", TASKS, (2048,), samples=3, workers=1)
    return out


@pytest.mark.build
def test_variant_rows_reserve_the_budget_and_count_the_reasoning_prompt(out):
    tok = load_tokenizer("qwen2.5")
    for task in TASKS:
        variant = rows(out, "qwen2.5--out256", task, 2048)
        default = rows(out, "qwen2.5", task, 2048)
        for v, d in zip(variant, default):
            assert v["tokenizer"] == "qwen2.5--out256" and v["tokens_to_generate"] == 256
            # the prompt a reasoning model is given: generation prompt, no answer prefix
            ids = tok.hf.apply_chat_template([{"role": "user", "content": v["input"]}],
                                             tokenize=True, add_generation_prompt=True,
                                             return_dict=False)
            assert len(ids) + 256 == v["length"] <= 2048
            assert v["length"] > 2048 - 256 // 2  # still tightly fitted
            # same per-sample seeds as the default config: same answers, smaller haystack
            assert v["outputs"] == d["outputs"] and v["answer_prefix"] == d["answer_prefix"]
            assert v["haystack_size"] < d["haystack_size"]
            assert d["tokens_to_generate"] < 256


@pytest.mark.build
def test_variant_is_recorded_explained_and_verified(out):
    manifest = json.loads((out / "manifest.json").read_text())
    variant, default = manifest["builds"]["qwen2.5--out256"], manifest["builds"]["qwen2.5"]
    assert variant["variant"] == {"output_budget": 256} and "variant" not in default
    assert variant["prompt_mode"] == "reasoning" and default["prompt_mode"] == "chat"
    assert variant["identity"]["variant"] == {"output_budget": 256}
    assert "variant" not in default["identity"]
    card = (out / "README.md").read_text()
    configs = {c["config_name"] for c in yaml.safe_load(card.split("---\n")[1])["configs"]}
    assert {"qwen2.5--out256", "qwen2.5--out256--vt", "qwen2.5", "qwen2.5--vt"} <= configs
    assert "## Variant configs" in card and "### Reserved output budget" in card
    assert "`qwen2.5--out256` (output_budget = 256)" in card
    assert "- variant: `output_budget=256`" in card
    report = verify(out, full=True, workers=1)  # re-tokenizes every row, loads every config
    assert report.ok, [str(p) for p in report.all_problems()]
    assert {("qwen2.5--out256", "2048"), ("qwen2.5--out256--qa_1", "2048")} <= \
        {(x.config, x.split) for x in report.loads}


@pytest.mark.build
def test_verify_expects_the_variants_budget(out, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["builds"]["qwen2.5--out256"]["variant"] = {"output_budget": 128}
    (copy / "manifest.json").write_text(json.dumps(manifest))
    report = verify(copy, workers=1, load=False)
    assert any("tokens_to_generate=256 (expected 128)" in str(p) for p in report.all_problems())


@pytest.mark.build
def test_a_default_build_has_the_identity_it_had(tmp_path):
    """No `variant` key enters a default config's identity (its files' build keys, and so an
    existing build's up-to-date check, stay as they were)."""
    build(tmp_path, "qwen2.5", ("vt",), (1024,), samples=1, workers=1)
    identity = json.loads((tmp_path / "manifest.json").read_text())["builds"]["qwen2.5"][
        "identity"]
    assert set(identity) == {"generator_version", "seed", "tokenizer", "tokenizer_revision",
                             "prompt_mode", "samples", "packages"}


@pytest.mark.build
def test_variant_of_a_thinking_template(tmp_path):
    think = thinking_tokenizer(Path(os.environ["RULER_TOKENIZERS"]) / "qwen2.5",
                               tmp_path / "qwen-think")
    build(tmp_path / "o", str(think), ("niah_single_1",), (1024,), samples=2, workers=1,
          variant=OutputBudget(100))
    tok = load_tokenizer(str(think))
    for r in rows(tmp_path / "o", "qwen-think--out100", "niah_single_1", 1024):
        text = expected_prompt(r["input"])
        assert len(tok.hf.backend_tokenizer.encode(text, add_special_tokens=False).ids) + 100 \
            == r["length"]


@pytest.mark.build
def test_reasoning_configs_are_left_out_of_the_lm_eval_export_and_say_so(out):
    """lm-eval's generation tasks would score the whole output, thinking included: the export
    keeps the default config, leaves the reasoning config out, and says why."""
    from ruler.cards import lm_eval_usage
    from ruler.eval.integrations import lm_eval_export as ex

    manifest = Manifest.load(out)
    files = ex.export_files(manifest, ex.local_source(out))
    assert "ruler_qwen2.5_vt_2048.yaml" in files
    assert not [name for name in files if "out256" in name]
    assert "Not exported: `qwen2.5--out256`" in files["README.md"]
    assert "ruler eval --mode reasoning" in lm_eval_usage.card_section(manifest, None, None)
    for rel in [rel for rel, f in manifest.files.items() if f.config != "qwen2.5--out256"]:
        manifest.remove_file(rel)  # only the variant's files are left
    with pytest.raises(RulerError, match="qwen2.5--out256 are evaluated with"):
        ex.export_files(manifest, ex.local_source(out))
