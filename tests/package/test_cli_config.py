"""The command line is generated from the config dataclasses (issue 33.2): every flag of every
command is a declared field of its config (or of a variant kind, a backend's options, an
exporter's options), the command and `ruler.build / evaluate / score` make equal configs from
equal options, and a bad value is refused in the same words by both."""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path

import pytest

from ruler import api
from ruler.builder.pipeline.config import BuildConfig
from ruler.builder.release_gates import gate_flags
from ruler.catalog.variants import DepthSweep, variant_kinds
from ruler.commands.build import axis_flags
from ruler.commands.eval import eval_config
from ruler.commands.main import main, make_parser
from ruler.commands.merge import MergeConfig
from ruler.commands.sources import FetchSources, ListSources
from ruler.commands.verify import VerifyConfig
from ruler.eval.backends import BACKENDS, BackendOptions
from ruler.eval.config import (
    CompareConfig,
    EvalConfig,
    PublishedConfig,
    ReportConfig,
    ScoreConfig,
)
from ruler.eval.integrations.exporters import EXPORTERS
from ruler.kernel.errors import RulerError
from ruler.kernel.flags import flagged_fields, from_flags
from ruler.release import ReleaseConfig

#: The configs each command's flags come from (besides build's variant kinds, below).
CONFIGS = {
    ("build",): [BuildConfig, axis_flags()], ("merge",): [MergeConfig],
    ("verify",): [VerifyConfig],
    ("release",): [ReleaseConfig, gate_flags()], ("sources", "list"): [ListSources],
    ("sources", "fetch"): [FetchSources], ("score",): [ScoreConfig],
    ("report",): [ReportConfig], ("compare",): [CompareConfig],
    ("published",): [PublishedConfig],
    ("eval",): [EvalConfig, BackendOptions, *(s.options_type for s in BACKENDS.values())],
    **{("export", e.name): [e.options] for e in EXPORTERS.values()},
}


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, sub in subs[0].choices.items():
        yield from _commands(sub, (*path, name))


def _declared(classes: list[type]) -> set[str]:
    """Option strings (a positional: its field name) the classes' fields declare."""
    found = set()
    for cls in classes:
        for f, flag in flagged_fields(cls):
            found |= set(flag.names + flag.hidden) if flag.names else {f.name}
    return found


def test_every_flag_of_every_command_is_a_declared_config_field():
    commands = dict(_commands(make_parser()))
    assert set(commands) == set(CONFIGS)
    variant_flags = {name for kind in variant_kinds() for flag in kind.flags()
                     for name in flag.names}
    for path, parser in commands.items():
        parsed = {s for a in parser._actions if not isinstance(a, argparse._HelpAction)
                  for s in (a.option_strings or [a.dest])}
        declared = _declared(CONFIGS[path]) | (variant_flags if path == ("build",) else set())
        assert parsed == declared, path


@pytest.mark.parametrize("argv, keywords", [
    ([], {}),
    (["--backend", "fake", "--fake-answers", "empty", "--lengths", "4k,8192", "--tasks",
      "vt,qa_1", "--limit", "3", "--max-model-len", "9000", "--no-report",
      "--chat-template-kwargs", '{"enable_thinking": false}', "--mode", "base"],
     {"backend": "fake", "fake_answers": "empty", "lengths": [4096, "8k"],
      "tasks": ("vt", "qa_1"), "limit": 3, "max_model_len": "9000", "no_report": True,
      "chat_template_kwargs": {"enable_thinking": False}, "mode": "base"}),
    (["--backend", "openai", "--model-tokenizer", "gpt-4", "--api", "chat",
      "--answer-prefix-turn", "user", "--concurrency", "4", "--timeout", "30",
      "--out", "r", "--no-progress"],
     {"backend": "openai", "model_tokenizer": "gpt-4", "api": "chat",
      "answer_prefix_turn": "user", "concurrency": 4, "timeout": 30, "out": Path("r"),
      "progress": False}),
    (["--tensor-parallel-size", "2", "--enforce-eager", "--dtype", "bfloat16"],
     {"tensor_parallel_size": 2, "enforce_eager": True, "dtype": "bfloat16"}),
])
def test_evaluate_makes_the_config_ruler_eval_makes(argv, keywords):
    progress = [] if "--no-progress" in argv or keywords.get("progress") is not None \
        else ["--no-progress"]  # ruler.evaluate shows no progress bars unless asked
    cli = eval_config(make_parser().parse_args(
        ["eval", "--model", "org/m", "--data", "d", *argv, *progress]))
    assert api._eval_config("org/m", "d", **keywords) == cli
    assert type(cli.backend_options) is BACKENDS[cli.backend].options_type


@pytest.mark.parametrize("argv, keywords", [
    ([], {}),
    (["--tasks", "vt,niah_single_1", "--lengths", "paper", "--samples", "7", "--shard", "1/4",
      "--sources", "S", "--no-progress", "--executor", "ray", "--ray-address", "auto"],
     {"tasks": ["vt", "niah_single_1"], "lengths": "paper", "samples": 7, "shard": (1, 4),
      "sources_dir": "S", "no_progress": True, "executor": "ray", "ray_address": "auto"}),
    (["--benchmark", "v2", "--lengths", "8k"], {"benchmark": "v2", "lengths": 8192}),
    (["--depths", "4", "--lengths", "4k"], {"depths": "4", "lengths": "4k"}),
    (["--base", "--tasks", "vt"], {"base": True, "tasks": "vt"}),
])
def test_build_makes_the_config_ruler_build_makes(argv, keywords):
    from ruler.catalog.variants import variants_from_flags
    from ruler.kernel.flags import flag_values

    args = make_parser().parse_args(["build", "--tokenizer", "gpt-4", *argv])
    cli, = (BuildConfig(**flag_values(BuildConfig, args), variant=v)
            for v in variants_from_flags(vars(args)))
    progress = "--no-progress" not in argv
    assert api._build_config("gpt-4", progress=progress, **keywords) == cli


def test_score_makes_the_config_ruler_score_makes():
    argv = ["score", "--predictions", "p.jsonl", "--data", "d", "--tasks", "vt", "--lengths",
            "4k", "--limit", "2", "--strict"]
    assert api._score_config("p.jsonl", "d", tasks="vt", lengths=[4096], limit=2,
                             strict=True) == from_flags(ScoreConfig, make_parser().parse_args(argv))


def _cli_error(argv: list[str]) -> str:
    """What the command says of a bad value: argparse's usage error or the config's one line,
    after its `error: `."""
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    assert code == 2
    return said.getvalue().strip().splitlines()[-1].split("error: ", 1)[1]


@pytest.mark.parametrize("model, keywords, argv", [
    ("m", {"limit": "two"}, ["--limit", "two"]),
    ("m", {"limit": 0}, ["--limit", "0"]),
    ("m", {"backend": "nope"}, ["--backend", "nope"]),
    ("m", {"backend": "fake", "fake_answers": "all"}, ["--backend", "fake", "--fake-answers",
                                                       "all"]),
    ("m", {"chat_template_kwargs": "[1]"}, ["--chat-template-kwargs", "[1]"]),
    ("m", {"window_tokens": 0}, ["--window-tokens", "0"]),
    ("m", {"render_workers": 5000}, ["--render-workers", "5000"]),
    ("m", {"backend": "openai", "model_tokenizer": "gpt-4", "api": "completions-text",
           "answer_prefix_turn": "user"},
     ["--backend", "openai", "--model-tokenizer", "gpt-4", "--api", "completions-text",
      "--answer-prefix-turn", "user"]),
    ("served", {"backend": "openai"}, ["--backend", "openai"]),
    ("m", {"backend": "openai", "model_tokenizer": "gpt-4", "startup_timeout": float("nan")},
     ["--backend", "openai", "--model-tokenizer", "gpt-4", "--startup-timeout", "nan"]),
])
def test_a_bad_evaluate_keyword_is_refused_as_ruler_eval_refuses_its_flag(
        model, keywords, argv, tmp_path):
    said = _cli_error(["eval", "--model", model, "--data", "d", "--out", str(tmp_path / "r"),
                       *argv])
    with pytest.raises(RulerError) as e:
        api._eval_config(model, "d", out=tmp_path / "r", **keywords)
    assert said in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("keywords, argv", [
    ({"samples": 0}, ["--samples", "0"]),
    ({"shard": "4/4"}, ["--shard", "4/4"]),
    ({"lengths": "4q"}, ["--lengths", "4q"]),
    ({"executor": "dask"}, ["--executor", "dask"]),
    ({"depths": 1}, ["--depths", "1"]),
    ({"depths": 4, "base": True}, ["--depths", "4", "--base"]),
    ({"seed": "x"}, ["--seed", "x"]),
])
def test_a_bad_build_keyword_is_refused_as_ruler_build_refuses_its_flag(keywords, argv):
    said = _cli_error(["build", "--tokenizer", "gpt-4", *argv])
    with pytest.raises(RulerError) as e:
        api._build_config("gpt-4", progress=False, **keywords)
    assert said in str(e.value)


def test_a_variant_is_asked_for_by_its_flag_or_given_not_both():
    depth = api._build_config("gpt-4", progress=False, depths=4)
    assert depth == api._build_config("gpt-4", progress=False, variant=DepthSweep(4))
    assert depth.variant == DepthSweep(4) and "vt" not in depth.tasks  # the swept tasks
    with pytest.raises(RulerError, match="one variant per build"):
        api._build_config("gpt-4", progress=False, variant=DepthSweep(4), base=True)
