"""What a user types and reads at the `ruler` command line (issue 21.17): usage errors name
the sub-command, flags are spelled alike across commands, commands that need no torch say
nothing about it, and a build's summary says when it is unofficial."""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

from helpers.paths import TOKENIZERS
from ruler.commands.main import main, make_parser


def _leaf_commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, parser) of every sub-command that runs something."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, sub in subs[0].choices.items():
        yield from _leaf_commands(sub, (*path, name))


def _required_args(parser: argparse.ArgumentParser) -> list[str]:
    """Values for a command's required arguments, so that only the unknown flag is wrong."""
    argv = []
    for action in parser._actions:
        value = str(next(iter(action.choices))) if action.choices else "1"
        if not action.option_strings and action.nargs not in ("?", "*", argparse.SUPPRESS):
            argv.append(value)
        elif action.option_strings and action.required:
            argv += [action.option_strings[0], value]
    return argv


COMMANDS = list(_leaf_commands(make_parser()))


@pytest.mark.parametrize("path, parser", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_an_unknown_flag_prints_the_subcommands_usage(path, parser, capsys):
    """argparse let the top-level parser report a sub-command's unknown flags, with its own
    usage (`usage: ruler [-h] COMMAND ...`), which says nothing about the command typed."""
    with pytest.raises(SystemExit) as e:
        main([*path, *_required_args(parser), "--bogus"])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert err.startswith(f"usage: ruler {' '.join(path)} "), err
    assert "unrecognized arguments: --bogus" in err


def _help_text(capsys, *command: str) -> str:
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.build
def test_build_and_verify_spell_samples_alike_and_the_old_spelling_still_works(
        built_gpt4_niah_single, capsys):
    assert "--samples" in _help_text(capsys, "build")
    text = _help_text(capsys, "verify")
    assert "--samples SAMPLES" in text and "--sample " not in text
    out = built_gpt4_niah_single  # gpt-4: niah_single_1 x 1024 x 2 samples (read only)
    for flag in ("--samples", "--sample"):  # the old spelling is a hidden alias
        assert main(["verify", str(out), flag, "1", "--no-load", "--workers", "1"]) == 0
        capsys.readouterr()
    assert main(["verify", str(out), "--samples", "0", "--workers", "1"]) == 2
    assert "--samples must be >= 1" in capsys.readouterr().err


def test_shard_says_it_counts_from_zero(capsys):
    text = _help_text(capsys, "build")
    assert "counting from 0" in text
    assert main(["build", "--tokenizer", "gpt-4", "--shard", "4/4"]) == 2
    assert "counting from 0" in capsys.readouterr().err


@pytest.mark.slow  # end to end: every command in its own process
@pytest.mark.subprocess
@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_commands_that_need_no_torch_say_nothing_about_it(tmp_path):
    """transformers logs "PyTorch was not found ..." when it is imported without torch: on
    every build or verify with a Hugging Face tokenizer, though neither needs torch."""
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSFORMERS_")}
    for argv in (["build", "--tokenizer", "llama-3.1", "--tasks", "niah_single_1",
                  "--lengths", "1024", "--samples", "2", "--workers", "1", "--no-progress",
                  "--out", str(out)],
                 ["verify", str(out), "--no-load", "--workers", "1"]):
        done = subprocess.run([sys.executable, "-m", "ruler", *argv], capture_output=True,
                              text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stderr
        assert "PyTorch" not in done.stderr and "torch" not in done.stderr.lower(), done.stderr


def test_a_real_transformers_error_still_shows(tmp_path, capsys):
    """Silencing that one notice hides nothing else: a broken tokenizer folder still says so."""
    folder = tmp_path / "tok"
    shutil.copytree(TOKENIZERS / "llama-3.1", folder)
    (folder / "tokenizer.json").write_text("{ not json")
    code = main(["build", "--tokenizer", str(folder), "--tasks", "niah_single_1",
                 "--lengths", "1024", "--samples", "2", "--no-progress",
                 "--out", str(tmp_path / "out")])
    assert code == 2 and f"cannot load the tokenizer in {folder}" in capsys.readouterr().err


def _summary(capsys, tmp_path, *argv: str) -> str:
    code = main(["build", "--lengths", "4096", "--samples", "2", "--workers", "1",
                 "--no-progress", "--out", str(tmp_path / "out"), *argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


@pytest.mark.build
def test_the_build_summary_says_when_a_build_is_unofficial(tmp_path, capsys):
    official = _summary(capsys, tmp_path / "a", "--tokenizer", "gpt-4", "--tasks", "vt")
    assert "unofficial" not in official.lower()
    partial = _summary(capsys, tmp_path / "b", "--tokenizer", "gpt-4", "--tasks", "qa_1")
    note = [line for line in partial.splitlines() if "unofficial" in line.lower()]
    assert len(note) == 1 and "squad" in note[0] and "--allow-unofficial" in note[0], partial
    again = _summary(capsys, tmp_path / "b", "--tokenizer", "gpt-4", "--tasks", "qa_1")
    assert "0 file(s) built" in again and "unofficial" in again.lower()  # up to date: still said
    folder = tmp_path / "mytok"
    shutil.copytree(TOKENIZERS / "llama-2", folder)
    unpinned = _summary(capsys, tmp_path / "c", "--tokenizer", str(folder), "--tasks", "vt")
    note = [line for line in unpinned.splitlines() if "unofficial" in line.lower()]
    assert len(note) == 1 and "tokenizer" in note[0] and "pinned" in note[0], unpinned


@pytest.mark.build
def test_the_build_summary_defines_fill(tmp_path, capsys):
    """Every built file's line gives its "fill"; the summary says what that is (issue 30.15h),
    once, and it is what the rows hold: length / L."""
    import pyarrow.parquet as pq

    text = _summary(capsys, tmp_path / "a", "--tokenizer", "gpt-4", "--tasks", "vt")
    (line,) = [x for x in text.splitlines() if "fill mean" in x]
    definition = [x for x in text.splitlines() if "fill:" in x]
    assert definition == ["  (fill: a row's length / L, the share of the length L it uses, where "
                          "length = its prompt's tokens + tokens_to_generate <= L; mean and "
                          "smallest over the file's rows)"], text
    lengths = pq.read_table(tmp_path / "a/out/data/gpt-4/vt/4096.parquet")["length"].to_pylist()
    assert f"fill mean {sum(lengths) / len(lengths) / 4096:.4f} min " \
           f"{min(lengths) / 4096:.4f}" in line


@pytest.mark.build
def test_each_benchmark_s_build_summary_defines_fill_by_its_recorded_length_rule(tmp_path,
                                                                                 capsys):
    """Issue 40 #21: a RULERv2 build printed v1's rule (prompt + tokens_to_generate <= L)
    under its files, whose rows count the prompt alone. Each build prints the rule its files'
    manifest entries record: RULERv2's the prompt alone, ONERULER's (as this builder counts
    it, with the chat template, unlike upstream) RULER's."""
    from ruler.builder.manifest import Manifest

    v2 = _summary(capsys, tmp_path / "v2", "--benchmark", "v2", "--tokenizer", "llama-3.1",
                  "--tasks", "mk_niah_basic")
    assert [x for x in v2.splitlines() if "fill:" in x] == [
        "  (fill: a row's length / L, the share of the length L it uses, where length = its "
        "prompt's tokens <= L (tokens_to_generate on top); mean and smallest over the file's "
        "rows)"], v2
    (entry,) = Manifest.load(tmp_path / "v2/out").files.values()
    assert entry.length_rule == "prompt"
    one = _summary(capsys, tmp_path / "one", "--benchmark", "oneruler", "--languages", "en",
                   "--tokenizer", "llama-3.1", "--tasks", "or_niah_single")
    assert [x for x in one.splitlines() if "fill:" in x] == [
        "  (fill: a row's length / L, the share of the length L it uses, where length = its "
        "prompt's tokens + tokens_to_generate <= L; mean and smallest over the file's rows)"]
    (entry,) = Manifest.load(tmp_path / "one/out").files.values()
    assert entry.length_rule == "prompt+tokens_to_generate"


@pytest.mark.subprocess
def test_the_default_output_folder_does_not_shadow_the_package(tmp_path):
    """Run from a folder (the repository root, say), the default output must not be named
    `ruler`: a later `python -m ruler` or `import ruler` there finds that folder as a namespace
    package instead of the installed one (issue 22.5)."""
    build = [sys.executable, "-m", "ruler", "build", "--tokenizer", "gpt-4", "--tasks", "vt",
             "--lengths", "1024", "--samples", "1", "--workers", "1", "--no-progress"]
    done = subprocess.run(build, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ruler-data" / "manifest.json").is_file()
    imported = subprocess.run([sys.executable, "-c", "import ruler; print(ruler.__file__)"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert imported.returncode == 0 and imported.stdout.strip().endswith("__init__.py"), imported
    again = subprocess.run([sys.executable, "-m", "ruler", "verify", "ruler-data", "--no-load"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
