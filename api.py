"""The Python face of `ruler`: what a notebook user calls, one function per command.

    import ruler
    report = ruler.build("llama-3.1", lengths="4k,16k", samples=20)
    ds = ruler.load(report.out, "llama-3.1", 4096)
    assert ruler.verify(report.out).ok
    outcome = ruler.evaluate("MODEL", report.out, backend="vllm", lengths=4096)
    scores = ruler.score(outcome.out / "predictions.jsonl", report.out)

Each function takes the command's options as keyword arguments, spelled as the flags are
(`max_model_len=8192` is `--max-model-len 8192`), and checks them exactly as the command does:
`evaluate` and `score` go through the command's own parser, so defaults, choices and every
backend's options have one source of truth. Errors are `RulerError` (the one line the command
would print); so is a keyword a function does not take (`OptionError`, a `TypeError` too, as
Python's own would be), naming it and the ones it takes. Nothing is printed that the command
prints, except progress bars when asked.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ruler.builder.errors import RulerError

_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")

if TYPE_CHECKING:  # the heavy imports happen inside the functions
    import datasets

    from ruler.builder.pipeline.config import BuildReport
    from ruler.builder.verify.findings import VerifyReport
    from ruler.eval.runner import EvalOutcome
    from ruler.eval.scores_record import ScoresRecord


class OptionError(RulerError, TypeError):
    """A keyword argument the function does not take: a `RulerError` (the one line naming it
    and the ones it takes) that is also what Python raises for an unknown keyword."""


def _check_keywords(function: str, given: Iterable[str], accepted: Iterable[str]) -> None:
    """Refuse keywords outside `accepted`, naming them and the accepted ones."""
    accepted = sorted(set(accepted))
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise OptionError(f"ruler.{function}(): unknown keyword(s) {', '.join(unknown)}; it "
                          f"takes {', '.join(accepted)}")


def _csv(value: Any) -> str:
    if isinstance(value, (str, int)):
        return str(value)
    return ",".join(str(v) for v in value)


def build(tokenizer: str, *, tasks: str | Iterable[str] | None = None,
          lengths: int | str | Iterable[int | str] = 4096, samples: int = 500,
          out: str | Path | None = None, progress: bool = False, benchmark: str = "v1",
          **options: Any) -> "BuildReport":
    """`ruler build`: generate the tasks for `tokenizer` into `out` (default ./ruler-data).

    `benchmark`: "v1" (RULER) or "v2" (RULERv2, config `<tokenizer>--v2`); `tasks`: names or
    a comma-separated string (default: all of the benchmark's); `lengths`: ints or the
    command's spellings ("4k,128k", "paper"); `options`: any other field of
    `ruler.builder.pipeline.BuildConfig` (seed, workers, variant=DepthSweep(10), overwrite, ...),
    and `no_progress` as the flag spells it (the opposite of `progress`). Returns the build's
    report (`.out`, `.config`, `.files`)."""
    from dataclasses import fields

    from ruler.builder.cli_build import parse_lengths, parse_tasks
    from ruler.builder.pipeline import BuildConfig, run_build
    from ruler.builder.pipeline.config import DEFAULT_OUT
    from ruler.builder.tasks.benchmarks import BENCHMARKS, benchmark_id

    _check_keywords("build", options, {f.name for f in fields(BuildConfig)}
                    - {"tokenizer", "benchmark"} | {"no_progress"})
    if "no_progress" in options:
        progress = not options.pop("no_progress")
    bench = benchmark_id(benchmark)
    cfg = BuildConfig(tokenizer=tokenizer, benchmark=bench,
                      tasks=BENCHMARKS[bench] if tasks is None else parse_tasks(_csv(tasks)),
                      lengths=parse_lengths(_csv(lengths)), samples=samples,
                      out=Path(out if out is not None else DEFAULT_OUT), progress=progress,
                      **options)
    return run_build(cfg)


def load(data: str | Path, config: str | None = None, length: int | str = 4096, *,
         task: str | None = None, revision: str | None = None) -> "datasets.Dataset":
    """The rows of one split: `data` is a build folder or a Hub dataset `ORG/NAME`; `config`
    the tokenizer config (default: the folder's only one); `task` narrows to the config
    `<config>--<task>` that holds one task. Uses `datasets.load_dataset`, so what you get is
    what the Hub's users get."""
    from datasets import load_dataset

    if not Path(data).exists() and not _HUB_ID.match(str(data)):
        raise RulerError(f"{data}: no such build folder (a Hub dataset is named ORG/NAME)")
    if config is None and Path(data).is_dir():
        from ruler.builder.manifest import Manifest

        configs = Manifest.load(Path(data)).configs()
        if len(configs) != 1:
            raise RulerError(f"{data} holds {len(configs)} configs ({', '.join(configs)}): "
                             f"name one")
        config = configs[0]
    name = f"{config}--{task}" if task and config else config
    return load_dataset(str(data), name, split=str(length), revision=revision)


def verify(out: str | Path, **options: Any) -> "VerifyReport":
    """`ruler verify`: check a build folder (`.ok`, `.all_problems()`); `options` as
    `ruler.builder.verify.run.verify` takes them (full, regenerate, workers, load, ...)."""
    import inspect

    from ruler.builder.verify.run import verify as verify_folder

    _check_keywords("verify", options, [
        name for name, p in inspect.signature(verify_folder).parameters.items()
        if p.kind is p.KEYWORD_ONLY])
    return verify_folder(out, **options)


def _flags(options: Mapping[str, Any]) -> list[str]:
    """Keyword arguments as the command's flags: `max_model_len=8192` -> `--max-model-len 8192`,
    True -> the bare flag, False/None -> left out, sequences -> comma-separated, mappings ->
    JSON."""
    argv: list[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, Mapping):
            argv += [flag, json.dumps(dict(value))]
        elif isinstance(value, (list, tuple, set)):
            argv += [flag, _csv(value)]
        else:
            argv += [flag, str(value)]
    return argv


def _parse(command: str, options: Mapping[str, Any],
           also: Iterable[str] = ()) -> argparse.Namespace:
    """The command's own parser on the options: a keyword that is none of its flags (nor in
    `also`, what the function itself takes besides), or a value it refuses, becomes a
    RulerError naming it."""
    import contextlib
    import io

    from ruler.cli import make_parser

    function = command if command != "eval" else "evaluate"
    parser = make_parser()
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = [o for a in subcommands.choices[command]._actions for o in a.option_strings
             if o.startswith("--") and o != "--help"]
    _check_keywords(function, options, [*(f[2:].replace("-", "_") for f in flags), *also])
    argv = [command, *_flags(options)]
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            return parser.parse_args(argv)
    except SystemExit as e:  # argparse's usage line and its reason, e.g. an invalid choice
        why = said.getvalue().strip().splitlines()
        reason = why[-1].split("error: ", 1)[-1] if why else f"invalid options {argv[1:]}"
        raise RulerError(f"ruler.{function}(): {reason} (see `ruler {command} --help`)") from e


def evaluate(model: str, data: str | Path, **options: Any) -> "EvalOutcome":
    """`ruler eval`: run `model` on a build folder or Hub dataset; `options` are the command's
    flags (backend="openai", base_url=..., tokenizer_config=..., lengths=[4096], limit=20, ...).
    Returns the run's outcome (`.out` holds predictions.jsonl and the report)."""
    from ruler.eval.cli import eval_config
    from ruler.eval.runner import run_eval

    options = {"no_progress": not options.pop("progress", False), **options}
    args = _parse("eval", {"model": model, "data": str(data), **options}, also=["progress"])
    return run_eval(eval_config(args))


def score(predictions: str | Path, data: str | Path, **options: Any) -> "ScoresRecord":
    """`ruler score`: score a predictions file or folder (ruler eval, lm-eval samples, Inspect
    logs) against the dataset; writes scores.json as the command does and returns the report
    (`.cells`, `.complete`, `.missing`)."""
    from ruler.eval.cli import score_to_folder

    args = _parse("score", {"predictions": str(predictions), "data": str(data), **options})
    report, _ = score_to_folder(args)
    return report
