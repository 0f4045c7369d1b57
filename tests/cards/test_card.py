"""The dataset card: YAML that `datasets` reads, a body rendered from the project's facts."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from datasets import load_dataset

from helpers.builds import build
from helpers.paths import ROOT
from ruler.benchmarks.ruler.differences import DIFFERENCES
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.builder.manifest import Manifest
from ruler.builder.schema import ROW_SCHEMA
from ruler.cards.render import GENERATOR_LICENSE, card_is_current, render_card, write_card
from ruler.catalog.tasks import TASKS
from ruler.commands.main import main

TASKS_BUILT = ("niah_single_1", "niah_multikey_2")
LENGTHS = (1024, 2048)


@pytest.fixture(scope="module")
def out(built_gpt4_niah) -> Path:
    return built_gpt4_niah  # gpt-4: TASKS_BUILT x LENGTHS x 3 samples (conftest; read only)


def front_matter(text: str) -> dict:
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def manifest_of(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


@pytest.mark.build
def test_yaml_configs_per_tokenizer_and_task_with_quoted_length_splits(out):
    text = (out / "README.md").read_text()
    meta = front_matter(text)
    configs = {c["config_name"]: c["data_files"] for c in meta["configs"]}
    assert list(configs) == ["gpt-4", "gpt-4--niah_single_1", "gpt-4--niah_multikey_2"]
    assert configs["gpt-4"] == [{"split": str(L), "path": f"data/gpt-4/*/{L}.parquet"}
                                for L in LENGTHS]
    assert configs["gpt-4--niah_multikey_2"] == [
        {"split": str(L), "path": f"data/gpt-4/niah_multikey_2/{L}.parquet"} for L in LENGTHS]
    # numeric split names must be YAML strings, or `datasets` raises a TypeError
    assert "split: '1024'" in text and "split: 1024\n" not in text
    assert meta["license"] == "apache-2.0"  # noise/needle tasks quote no third-party text
    assert "dataset_info" not in meta  # it would need Arrow byte sizes we do not have


@pytest.mark.build
def test_load_dataset_reads_every_config_and_split_offline(out, tmp_path):
    stored = {p.relative_to(out).as_posix(): pq.read_table(p).to_pylist()
              for p in out.glob("data/*/*/*.parquet")}
    for L in LENGTHS:
        ds = load_dataset(str(out), "gpt-4", split=str(L), cache_dir=str(tmp_path))
        expected = [r for t in TASKS_BUILT for r in stored[f"data/gpt-4/{t}/{L}.parquet"]]
        assert sorted(ds.to_list(), key=lambda r: (r["task"], r["index"])) == \
            sorted(expected, key=lambda r: (r["task"], r["index"]))
        for task in TASKS_BUILT:
            one = load_dataset(str(out), f"gpt-4--{task}", split=str(L), cache_dir=str(tmp_path))
            assert one.to_list() == stored[f"data/gpt-4/{task}/{L}.parquet"]
    # slices and sums of length splits work as the card says
    assert load_dataset(str(out), "gpt-4", split="1024[:2]", cache_dir=str(tmp_path)).num_rows == 2
    assert load_dataset(str(out), "gpt-4", split="1024+2048",
                        cache_dir=str(tmp_path)).num_rows == 12


@pytest.mark.build
def test_card_is_deterministic(out, tmp_path):
    before = (out / "README.md").read_bytes()
    copy_dir = tmp_path / "again"
    copy_dir.mkdir()
    (copy_dir / "manifest.json").write_bytes((out / "manifest.json").read_bytes())
    assert write_card(copy_dir).read_bytes() == before
    assert render_card(Manifest.load(out)) == render_card(Manifest.load(out))


def _table_row(text: str, first_cell: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {first_cell} |"))


@pytest.mark.build
def test_body_is_rendered_from_catalog_schema_differences_and_manifest(out):
    text = (out / "README.md").read_text()
    m = manifest_of(out)
    for spec in (TASKS[t] for t in STANDARD_TASKS):  # all 13 tasks, facts from the catalog
        row = _table_row(text, f"`{spec.name}`")
        assert f"| {spec.tokens_to_generate} |" in row and f"`{spec.metric}`" in row
        assert all(f"{k}={v}" in row for k, v in spec.params.items())
        assert row.endswith("| yes |") == (spec.name in TASKS_BUILT)
    for name in ROW_SCHEMA.names:
        assert _table_row(text, f"`{name}`")
    for scope, what, _why in DIFFERENCES:
        assert f"| {scope} | {what.replace('|', chr(92) + '|')} |" in text
    tok = m["builds"]["gpt-4"]["tokenizer"]
    for name, digest in tok["files"].items():
        assert f"| {name} | `{digest}` |" in text
    assert "seed: `42`" in text and "prompt mode: `base`" in text
    for dist, version in m["packages"].items():
        assert f"| {dist} | {version} |" in text
    for needle in ("## How to load", "## How to evaluate", "tokens_to_generate",
                   "answer_prefix", 'revision="<tag>"', "CC BY-SA 4.0", "Paul Graham",
                   f"{GENERATOR_LICENSE}.", "arXiv:2404.06654", "## Differences from upstream"):
        assert needle in text, needle
    assert "Unofficial build" not in text


@pytest.mark.build
def test_the_card_shows_the_real_model_check_from_its_measurement(out):
    """Every card carries the measured equivalence with upstream (cards/real_model.json): the
    pooled difference and one row per task with both scores, the difference and its interval,
    and the no-context score."""
    text = (out / "README.md").read_text()
    section = text[text.index("## Checked with a real model"):]
    section = section[:section.index("\n## ", 5)]
    measured = json.loads((ROOT / "cards" / "real_model.json").read_text())
    pooled = measured["pooled"]
    assert f"{pooled['difference']:+.1f} points [{pooled['ci95'][0]:+.1f}, " in section
    for cell in measured["cells"]:
        row = _table_row(section, cell["task"])
        assert f"| {cell['ours']:.1f} | {cell['upstream']:.1f} | {cell['difference']:+.1f} " \
            in row and row.endswith(f"| {cell['no_context']:.1f} |")
    assert {c["task"] for c in measured["cells"]} == set(STANDARD_TASKS)
    assert "the oracle (answering from the references) scores 100" in section


@pytest.mark.build
def test_release_rendering_names_the_repo_and_tag(out):
    text = render_card(Manifest.load(out), repo_id="nvidia-fans/ruler", revision="v1")
    assert 'load_dataset("nvidia-fans/ruler", "gpt-4", split="1024", revision="v1")' in text
    assert "--data nvidia-fans/ruler --revision v1 --tokenizer-config gpt-4" in text
    assert front_matter(text) == front_matter((out / "README.md").read_text())


@pytest.mark.build
def test_one_folder_with_several_tokenizers_and_an_unofficial_build(out):
    m = manifest_of(out)
    other = copy.deepcopy(m["builds"]["gpt-4"])
    other["tokenizer"] = dict(other["tokenizer"], name="my-tok", pinned=False)
    other["official"] = False
    other["sources"] = {"squad": {"id": "squad", "file": "dev-v2.0.partial.json",
                                  "sha256": "c9" * 32, "official": False,
                                  "official_sha256": "80" * 32}}
    m["builds"]["my-tok"] = other
    for rel, entry in list(m["files"].items()):
        m["files"][rel.replace("gpt-4", "my-tok")] = dict(entry, config="my-tok")
    text = render_card(Manifest.from_json(m))
    names = [c["config_name"] for c in front_matter(text)["configs"]]
    assert names[:3] == ["gpt-4", "gpt-4--niah_single_1", "gpt-4--niah_multikey_2"]
    assert names[3:] == ["my-tok", "my-tok--niah_single_1", "my-tok--niah_multikey_2"]
    assert "### Config `gpt-4`" in text and "### Config `my-tok`" in text
    assert re.search(r"\*\*Unofficial build\*\* \(`my-tok`\)", text)
    assert "| squad | `dev-v2.0.partial.json` | `" + "c9" * 32 + "` | **no** |" in text
    assert front_matter(text)["license"] == "cc-by-sa-4.0"  # QA text is share-alike
    m["builds"]["my-tok"]["sources"]["essays"] = {"id": "essays", "file": "x.json",
                                                  "sha256": "1a" * 32, "official": False,
                                                  "official_sha256": "1a" * 32}
    assert front_matter(render_card(Manifest.from_json(m)))["license"] == "other"


@pytest.mark.build
def test_a_pinned_tokenizer_without_a_recorded_commit_says_what_is_known(out):
    """mistral-nemo's registry pin records no Hub commit (its files' hashes are the identity):
    the card says so, never "@unrecorded revision" beside "official: yes" (issue 30.15g)."""
    m = manifest_of(out)
    tok = dict(m["builds"]["gpt-4"]["tokenizer"], repo="org/tok", revision=None, pinned=True)
    m["builds"]["gpt-4"]["tokenizer"] = tok
    text = " ".join(render_card(Manifest.from_json(m)).split())
    assert "unrecorded revision" not in text
    assert "gpt-4 (org/tok, files pinned by sha256; Hub commit not recorded)" in text
    assert "revision not recorded (the registry pins the files by their sha256, below)" in text
    m["builds"]["gpt-4"]["tokenizer"] = dict(tok, pinned=False)  # nothing pins it: say only that
    text = " ".join(render_card(Manifest.from_json(m)).split())
    assert "gpt-4 (org/tok, revision not recorded)" in text and "pins the files" not in text
    m["builds"]["gpt-4"]["tokenizer"] = dict(tok, revision="abc123")
    assert "gpt-4 (org/tok@abc123)" in render_card(Manifest.from_json(m))


def test_generator_licence_matches_pyproject():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == GENERATOR_LICENSE


# --- issue 21.6: the card always matches the manifest --------------------------------------------

#: `ruler ARGS` in a process killed (SIGKILL) at the moment a build or merge has written the
#: manifest and starts writing the card, with the temporary card that kill leaves behind.
KILLED_AT_THE_CARD = """
import os, sys
from pathlib import Path
import ruler.builder.pipeline.publish as publish

def killed(out):
    (Path(out) / ".README.md.k1ll3d.tmp").write_text("half a card")
    os.kill(os.getpid(), 9)

publish.write_published = killed
from ruler.commands.main import main
sys.exit(main(sys.argv[1:]))
"""


def _killed_at_the_card(*argv: str) -> None:
    proc = subprocess.run([sys.executable, "-c", KILLED_AT_THE_CARD, *argv],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr


def _card_is_current(out: Path) -> bool:
    return (out / "README.md").read_text() == render_card(Manifest.load(out)) \
        and sorted(p.name for p in out.iterdir() if p.name.startswith(".README")) == []


@pytest.mark.build
@pytest.mark.subprocess
@pytest.mark.parametrize("rerun", [[], ["--overwrite"]])
def test_a_card_left_stale_by_a_killed_build_is_rendered_again_by_a_rerun(tmp_path, capsys,
                                                                         rerun):
    out = tmp_path / "ruler"
    build(out, "gpt-4", ["niah_single_1"], [1024], 2, workers=1)
    argv = ["build", "--tokenizer", "gpt-4", "--tasks", "niah_single_1,vt", "--lengths", "1024",
            "--samples", "2", "--out", str(out), "--no-progress", "--workers", "1"]
    _killed_at_the_card(*argv)
    assert "data/gpt-4/vt/1024.parquet" in manifest_of(out)["files"]  # recorded, card not
    assert not _card_is_current(out)
    assert main(["verify", str(out), "--no-load", "--workers", "1"]) == 1
    assert "README.md: `configs` do not match manifest.json" in capsys.readouterr().out
    assert main([*argv, *rerun]) == 0
    assert _card_is_current(out)
    assert main(["verify", str(out), "--workers", "1"]) == 0, capsys.readouterr().out


@pytest.mark.build
@pytest.mark.subprocess
def test_a_card_left_stale_by_a_killed_merge_is_rendered_again_by_a_rerun(tmp_path, capsys):
    parts = [tmp_path / "a", tmp_path / "b"]
    build(parts[0], "gpt-4", ["niah_single_1"], [1024], 2, workers=1)
    build(parts[1], "gpt-4", ["vt"], [1024], 2, workers=1)
    merged = tmp_path / "merged"
    assert main(["merge", str(parts[0]), "--out", str(merged)]) == 0
    _killed_at_the_card("merge", *map(str, parts), "--out", str(merged))
    assert len(manifest_of(merged)["files"]) == 2 and not _card_is_current(merged)
    assert main(["merge", *map(str, parts), "--out", str(merged)]) == 0
    assert "0 file(s) copied, 2 already there" in capsys.readouterr().out
    assert _card_is_current(merged)


@pytest.mark.build
def test_verify_reports_a_stale_card_whose_configs_still_match(tmp_path, capsys):
    """An overwrite with another seed keeps the configs, not the card: the old card names the
    old seed and must not pass."""
    out = tmp_path / "ruler"
    build(out, "gpt-4", ["niah_single_1"], [1024], 2, workers=1)
    stale = (out / "README.md").read_bytes()
    build(out, "gpt-4", ["niah_single_1"], [1024], 2, workers=1, seed=7, overwrite=True)
    assert b"seed: `42`" in stale and b"seed: `7`" in (out / "README.md").read_bytes()
    (out / "README.md").write_bytes(stale)
    assert main(["verify", str(out), "--no-load", "--workers", "1"]) == 1
    assert "README.md: stale" in capsys.readouterr().out
    assert main(["build", "--tokenizer", "gpt-4", "--tasks", "niah_single_1", "--lengths", "1024",
                 "--samples", "2", "--seed", "7", "--out", str(out), "--no-progress"]) == 0
    assert _card_is_current(out)


@pytest.mark.build
def test_a_card_rendered_for_a_release_is_current(out):
    """`ruler release` renders the card for its repo and tag; such a card (downloaded) is the
    manifest's card too."""
    released = render_card(Manifest.load(out), repo_id="org/ruler", revision="v1")
    assert card_is_current(released, Manifest.load(out))
    assert "seed: `42`" in released
    assert not card_is_current(released.replace("seed: `42`", "seed: `43`"), Manifest.load(out))


@pytest.mark.build
def test_a_v2_config_gets_the_ruler2_section_and_a_v1_card_none(built_llama_v2, out):
    from ruler.benchmarks.ruler2.differences import RULER2_DIFFERENCES
    from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS

    text = (built_llama_v2 / "README.md").read_text()
    section = text[text.index("## RULERv2"):text.index("## Licences")]
    for task in RULER2_TASKS:
        row = _table_row(section, f"`{task}`")
        assert f"`{TASKS[task].metric}`" in row and row.endswith("| yes |")
    assert "Configs here: `llama-3.1--v2`." in section
    assert "`cais/mmlu` config `all`" in section and "c30699e8356da336a370243923dbaf21066bb9fe" \
        in section and "`llama-3.1--v2`: stand-in files, no revision (**not official**)" in section
    for scope, what, _ in RULER2_DIFFERENCES:
        assert f"| {scope} | {what} |" in section
    assert 'load_dataset(<repo>, "<tokenizer>--v2", split="8192")' in section
    assert "Unofficial build" in text  # stand-in MMLU and HotpotQA
    assert "## RULERv2" not in (out / "README.md").read_text()


@pytest.mark.build
def test_user_supplied_strings_show_as_themselves(out):
    """Issue 40 #19: a tokenizer's folder, its files, a source's file and note are the user's
    (any path); in the card each shows as itself, and no table gains a cell."""
    from helpers.markdown_check import HOSTILE, check_markdown

    m = manifest_of(out)
    entry = m["builds"]["gpt-4"]
    entry["tokenizer"] = dict(entry["tokenizer"], origin=f"/data/{HOSTILE}",
                              files={f"tok{HOSTILE}.json": "ab" * 32}, repo=None)
    entry["sources"] = {"squad": {"id": "squad", "file": f"/in/{HOSTILE}.json",
                                  "sha256": "c9" * 32, "official": False,
                                  "official_sha256": "80" * 32, "note": HOSTILE}}
    entry["official"] = False
    text = render_card(Manifest.from_json(m)).split("---\n", 2)[2]
    check_markdown(text, f"/data/{HOSTILE}", f"tok{HOSTILE}.json", f"/in/{HOSTILE}.json")
    assert text.count(HOSTILE) == 0  # never raw


@pytest.mark.build
def test_each_config_s_length_rule_comes_from_what_its_files_record(built_llama_v2, out):
    """Issue 40 #21: the card said every row's length is prompt + tokens_to_generate <= L and
    that a model served with max_model_len = L never truncates, for RULERv2's configs too,
    whose rows count the prompt alone (16,384 tokens to generate on top)."""
    v2 = Manifest.load(built_llama_v2)
    assert {f.length_rule for f in v2.files_of("llama-3.1--v2")} == {"prompt"}
    assert v2.build("llama-3.1--v2").length_rules == ["prompt"]
    v1 = Manifest.load(out)
    assert {f.length_rule for f in v1.files_of("gpt-4")} == {"prompt+tokens_to_generate"}
    text = render_card(v2)
    assert "| reasoning | prompt <= L (tokens_to_generate on top) |" in text
    assert ("`manifest.json`: length = its prompt's tokens <= L (tokens_to_generate on top), so "
            "serve a model with a context (`max_model_len`) of L + tokens_to_generate") in \
        " ".join(text.split())
    assert "- length rule (as its files record it): length = its prompt's tokens <= L " \
           "(tokens_to_generate on top)" in text
    assert "prompt + tokens_to_generate" not in text.split("## RULERv2")[0]
    both = manifest_of(out)
    m2 = manifest_of(built_llama_v2)
    both["builds"].update(m2["builds"])
    both["files"].update(m2["files"])
    text = " ".join(render_card(Manifest.from_json(both)).split())
    assert ("length = its prompt's tokens + tokens_to_generate <= L (config `gpt-4`), so serve "
            "a model with a context (`max_model_len`) of L (the answer's budget is inside it)"
            ) in text
    assert "length = its prompt's tokens <= L (tokens_to_generate on top) (config " \
           "`llama-3.1--v2`)" in text
    # a manifest written before files recorded their rule: said so, never assumed
    for entry in both["files"].values():
        entry.pop("length_rule")
    for entry in both["builds"].values():
        entry.pop("length_rules")
    text = " ".join(render_card(Manifest.from_json(both)).split())
    assert "`manifest.json`: not recorded: built before files recorded it." in text
    assert "- length rule (as its files record it): length = a count this manifest does not " \
           "record" in text and "<= L" not in text.split("## Contents")[0]
