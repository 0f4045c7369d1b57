"""`ruler build --benchmark oneruler`: one config per language (and per cross-lingual pair),
the language in the manifest and the identity, rows verified against the language's prompt
files and rebuilt from the manifest, loaded with `load_dataset`, the same bytes from two
processes; the card's ONERULER section with the licence facts, and the release's
acknowledgement of books whose status is unknown."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from datasets import load_dataset

from helpers.builds import rows
from ruler.benchmarks.oneruler.cwe import check_row as cwe_check
from ruler.benchmarks.oneruler.licences import check_book_status
from ruler.benchmarks.oneruler.niah import check_row as niah_check
from ruler.benchmarks.oneruler.tasks import CROSS_LINGUAL_TASKS as ONERULER_CROSS_LINGUAL_TASKS
from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS
from ruler.builder.manifest import Manifest, read_manifest
from ruler.catalog.checks import with_build
from ruler.commands.main import main
from ruler.kernel.errors import RulerError

TOK = "qwen2.5"
L = 3000
SAMPLES = 2
CONFIGS = {f"{TOK}--oneruler-sw": ONERULER_TASKS,
           f"{TOK}--oneruler-en-ko": ONERULER_CROSS_LINGUAL_TASKS}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("oneruler") / "ruler"
    assert main(["build", "--tokenizer", TOK, "--benchmark", "oneruler", "--languages",
                 "sw,en-ko", "--lengths", str(L), "--samples", str(SAMPLES), "--out", str(out),
                 "--workers", "2", "--no-progress"]) == 0
    return out


@pytest.mark.build
@pytest.mark.subprocess
def test_one_config_per_language_with_its_language_recorded(built):
    m = read_manifest(built)
    assert sorted(m["builds"]) == sorted(CONFIGS)
    sw, pair = m["builds"][f"{TOK}--oneruler-sw"], m["builds"][f"{TOK}--oneruler-en-ko"]
    assert sw["benchmark"] == "oneruler" and sw["language"] == "sw"
    assert pair["language"] == {"context": "en", "instructions": "ko"}
    assert pair["identity"]["language"] == pair["language"]
    assert sw["identity"]["packages"]["sentencex"] == "1.0.32"
    assert sw["prompt_mode"] == "chat" and sw["official"] is True
    assert sw["sources"]["oneruler"]["official"]
    for config, tasks in CONFIGS.items():
        assert sorted(m["builds"][config]["tasks"]) == sorted(tasks)
        for task in tasks:
            for r in rows(built, config, task, L):
                assert r["length"] <= L and r["answer_prefix"] == "" and r["metric"] == "oneruler"
                assert r["tokens_to_generate"] == (50 if "cwe" in task else 30)
    none = rows(built, f"{TOK}--oneruler-en-ko", "or_niah_none", L)
    assert {tuple(r["outputs"]) for r in none} == {("없음",)}  # the instruction language's


@pytest.mark.slow  # end to end: verify rebuilding every row in its workers
@pytest.mark.build
@pytest.mark.subprocess
def test_verify_rebuilds_rows_and_every_config_loads(built, capsys):
    assert main(["verify", str(built), "--regenerate", "2"]) == 0, capsys.readouterr().out
    for config, tasks in CONFIGS.items():
        ds = load_dataset(str(built), config, split=str(L))
        assert ds.num_rows == len(tasks) * SAMPLES and set(ds["tokenizer"]) == {config}
        one = load_dataset(str(built), f"{config}--{tasks[0]}", split=str(L))
        assert one.num_rows == SAMPLES


@pytest.mark.build
@pytest.mark.subprocess
def test_the_row_checks_read_the_languages_prompt_files(built):
    """verify's answer check: a needle's value, the none-word or a common word changed is
    found (the asked key parsed with the instruction language's question, needles with the
    context language's form)."""
    for config, task, check in ((f"{TOK}--oneruler-en-ko", "or_niah_multikey", niah_check),
                                (f"{TOK}--oneruler-en-ko", "or_niah_none", niah_check),
                                (f"{TOK}--oneruler-sw", "or_niah_multiquery", niah_check),
                                (f"{TOK}--oneruler-sw", "or_cwe", cwe_check)):
        # the row with the language its build records (the manifest's), as verify reads it
        row = with_build(rows(built, config, task, L)[0],
                         Manifest.load(built).builds[config].axis_records())
        assert check(row) is None, (task, check(row))
        wrong = dict(row, outputs=["1234567"] + list(row["outputs"])[1:])
        assert check(wrong) is not None, task


@pytest.mark.build
@pytest.mark.subprocess
def test_the_card_says_what_is_known_of_licences_and_books(built):
    card = (built / "README.md").read_text(encoding="utf-8")
    front = card.split("---\n", 2)[1]
    assert "- en\n- ko\n- sw\n" in front and "license: other" in front
    section = card[card.index("## ONERULER"):card.index("## Licences")]
    assert "`qwen2.5--oneruler-en-ko` | `en` | `ko`" in section
    assert "`niah_none`" in section and "or_niah_none" in section
    assert "CC BY-NC-SA 4.0" in section and "no licence for its data" in section
    assert "`books/sw/my_life_fifty_years_after_shaaban_robert_sw_NEED_CLEANING.txt`" in section
    assert "Copyright status unknown for: `en`, `sw`" in section
    assert "ONERULER differences from upstream" in section and "2867825" in section
    assert "### ONERULER haystack sentences" in section  # the long-segment rule, per book
    assert "| `sw` | regex | 2,400 | 1,254 | 862 / 876 |" in section
    assert "| `en` | sentencex | 4,200 | 6,273 | 321 / 321 |" in section
    assert "`qwen2.5--oneruler-sw` | `sw` | `sw` | upstream's fallback regex " in section


@pytest.mark.build
@pytest.mark.subprocess
def test_release_refuses_books_of_unknown_status_unless_acknowledged(built, capsys):
    code = main(["release", str(built), "--repo", "org/oneruler", "--dry-run"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "(languages: en, sw;" in err and "--acknowledge-book-status en,sw" in err
    code = main(["release", str(built), "--repo", "org/oneruler", "--dry-run",
                 "--acknowledge-book-status", "sw"])
    assert code == 2 and "(given: sw)" in capsys.readouterr().err
    check_book_status(Manifest.load(built), ["sw", "en"])  # named: accepted
    with pytest.raises(RulerError, match="no ONERULER book"):
        check_book_status(Manifest.load(built).__class__.empty(), ["sw"])


def _build_in_process(out: Path, hash_seed: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    return subprocess.run([sys.executable, "-m", "ruler", "build", "--benchmark", "oneruler",
                           "--tokenizer", "llama-3.1", "--languages", "ja,zh-en", "--tasks",
                           "or_niah_multivalue", "--lengths", "2000", "--samples", "2",
                           "--out", str(out), "--workers", "1", "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.slow  # two builds in fresh processes (~30 s)
@pytest.mark.build
@pytest.mark.subprocess
def test_two_processes_with_other_hash_seeds_write_the_same_bytes(tmp_path):
    outs = tmp_path / "a", tmp_path / "b"
    for out, seed in zip(outs, ("1", "2")):
        done = _build_in_process(out, seed)
        assert done.returncode == 0, done.stderr
    a, b = (read_manifest(out)["files"] for out in outs)
    assert sorted(a) == [f"data/llama-3.1--oneruler-{lang}/or_niah_multivalue/2000.parquet"
                         for lang in ("ja", "zh-en")]
    assert a == b
    for rel in a:
        assert (outs[0] / rel).read_bytes() == (outs[1] / rel).read_bytes()


def test_bad_requests_are_one_line(tmp_path, capsys):
    for argv, says in ((["--languages", "xx"], "ONERULER has no language 'xx'"),
                       (["--languages", "en-ko", "--tasks", "or_cwe"], "no cross-lingual"),
                       (["--languages", "ko,ko"], "names a language twice")):
        code = main(["build", "--tokenizer", TOK, "--benchmark", "oneruler", "--out",
                     str(tmp_path / "x"), *argv])
        err = capsys.readouterr().err.strip()
        assert code == 2 and says in err and len(err.splitlines()) == 1, err
    assert main(["build", "--tokenizer", TOK, "--tasks", "or_cwe", "--out",
                 str(tmp_path / "x")]) == 2
    assert "--benchmark oneruler" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
