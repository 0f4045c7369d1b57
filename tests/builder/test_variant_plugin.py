"""The variant extension point, proven from outside the package: this file alone defines and
registers a variant (no product file knows it), then builds it in spawned worker processes,
verifies it (rows regenerated through the recipe the manifest records, in spawned processes
too), loads it with `datasets.load_dataset`, and finds its `ruler build` flag in the CLI.

The variant is small and real: it halves every task's answer budget (`tokens_to_generate`),
which reaches the rows' budget column, the fitted length, and fwe's vocabulary size."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from helpers.builds import build, rows
from ruler.builder.manifest import Manifest
from ruler.builder.pipeline.recipe import BuildRecipe
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.builder.verify.run import verify
from ruler.catalog.tasks import TaskSpec
from ruler.catalog.variants import Variant, register_variant, variant_from_record
from ruler.commands.main import main
from ruler.kernel.errors import RulerError
from ruler.kernel.flags import option

pytestmark = [pytest.mark.build, pytest.mark.subprocess]


@register_variant
@dataclass(frozen=True)
class AnswerBudgetDivided(Variant):
    """Every task's answer budget divided by `divisor` (`--toy-budget-divisor N`)."""

    divisor: int = option("--toy-budget-divisor", type=int, metavar="N")

    field = "toy_budget_divisor"
    title = "Toy: answer budget divided (`--toy-budget-divisor N`)"
    doc = "Config `<tokenizer>--div<N>` reserves 1/N of each task's answer budget."

    @property
    def value(self) -> int:
        return self.divisor

    def suffix(self) -> str:
        return f"div{self.divisor}"

    def check(self, cfg) -> None:
        if self.divisor < 2:
            raise RulerError(f"--toy-budget-divisor must be >= 2, got {self.divisor}")

    def tokens_to_generate(self, spec: TaskSpec) -> int:
        return spec.tokens_to_generate // self.divisor


TOK, L, SAMPLES = "gpt-4", 1024, 3
TASKS = ("niah_single_1", "vt", "fwe")
CONFIG = f"{TOK}--div2"
BUDGETS = {"niah_single_1": 64, "vt": 15, "fwe": 25}  # upstream's 128, 30, 50, halved


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    """The default config and the toy variant, built side by side; the variant by spawned
    workers, which know the variant only from unpickling it (pickle imports this module)."""
    out = tmp_path_factory.mktemp("plugin")
    build(out, TOK, TASKS, (L,), SAMPLES, workers=1)
    build(out, TOK, TASKS, (L,), SAMPLES, workers=2, start_method="spawn",
          variant=AnswerBudgetDivided(2))
    return out


def test_the_variants_rows_reserve_its_budget_and_keep_the_default_seeds(out):
    tok = load_tokenizer(TOK)
    for task in TASKS:
        for v, d in zip(rows(out, CONFIG, task, L), rows(out, TOK, task, L), strict=True):
            assert v["tokenizer"] == CONFIG and v["tokens_to_generate"] == BUDGETS[task]
            assert d["tokens_to_generate"] == 2 * BUDGETS[task]
            assert v["length"] == tok.prompt_length(v["input"], v["answer_prefix"]) \
                + v["tokens_to_generate"] <= L
            if task != "fwe":  # fwe's answers depend on its budget-sized vocabulary
                assert v["outputs"] == d["outputs"]  # the default config's seeds


def test_the_variant_is_recorded_and_explained_by_its_own_class(out):
    manifest = json.loads((out / "manifest.json").read_text())
    entry = manifest["builds"][CONFIG]
    assert entry["variant"] == {"toy_budget_divisor": 2}
    assert entry["identity"]["variant"] == {"toy_budget_divisor": 2}
    assert "variant" not in manifest["builds"][TOK]
    card = (out / "README.md").read_text()
    configs = {c["config_name"] for c in yaml.safe_load(card.split("---\n")[1])["configs"]}
    assert {CONFIG, f"{CONFIG}--vt", TOK} <= configs
    assert "### Toy: answer budget divided" in card
    assert f"`{CONFIG}` (toy_budget_divisor = 2)" in card


@pytest.mark.slow  # end to end: verify in spawned workers
def test_verify_regenerates_the_variants_rows_from_the_manifest_in_spawned_workers(out):
    # (loading is the next test's: load_dataset directly)
    report = verify(out, regenerate=SAMPLES, workers=2, start_method="spawn", load=False)
    assert report.ok, [str(p) for p in report.all_problems()]
    regenerated = {f.path: f.regenerated for f in report.files}
    assert all(regenerated[f"data/{CONFIG}/{t}/{L}.parquet"] == SAMPLES for t in TASKS)


def test_the_recipe_from_the_manifest_is_the_builds_own(out):
    build_entry = Manifest.load(out).build(CONFIG)
    recipe = BuildRecipe.from_manifest(CONFIG, build_entry, load_tokenizer(TOK), None)
    assert recipe.variant == AnswerBudgetDivided(2) and recipe.seed_name == TOK
    assert recipe.identity() == build_entry.identity
    assert variant_from_record({"toy_budget_divisor": 2}) == AnswerBudgetDivided(2)


def test_load_dataset_reads_the_variant(out, tmp_path):
    from datasets import load_dataset

    ds = load_dataset(str(out), CONFIG, split=str(L), cache_dir=str(tmp_path))
    assert ds.num_rows == len(TASKS) * SAMPLES
    assert sorted(set(ds["tokens_to_generate"])) == sorted(BUDGETS.values())
    one = load_dataset(str(out), f"{CONFIG}--vt", split=str(L), cache_dir=str(tmp_path))
    assert one["tokens_to_generate"] == [BUDGETS["vt"]] * SAMPLES


def test_the_build_command_has_the_variants_flag_and_reads_it_back(out, capsys):
    argv = ["build", "--tokenizer", TOK, "--tasks", ",".join(TASKS), "--lengths", str(L),
            "--samples", str(SAMPLES), "--out", str(out), "--no-progress"]
    assert main([*argv, "--toy-budget-divisor", "2"]) == 0
    assert f"{CONFIG}: 0 file(s) built, {len(TASKS)} up to date" in capsys.readouterr().out
    assert main([*argv, "--toy-budget-divisor", "1"]) == 2
    assert "--toy-budget-divisor must be >= 2" in capsys.readouterr().err
    assert main([*argv, "--toy-budget-divisor", "2", "--depths", "4"]) == 2
    assert "one variant per build" in capsys.readouterr().err


def test_a_manifest_of_a_variant_nobody_registered_says_what_to_do(out, tmp_path):
    copy = Path(shutil.copytree(out, tmp_path / "copy"))
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["builds"][CONFIG]["variant"] = {"budget_divisor_v2": 2}
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RulerError, match="records variant 'budget_divisor_v2', which no "
                                         "registered variant knows: import the module"):
        verify(copy, load=False)
