"""The Python face of `ruler`: what a notebook user calls, one function per command (an
example: docs/getting-started.md, "Python API").

Each function takes the command's options as keyword arguments, spelled as the flags are
(`max_model_len=8192` is `--max-model-len 8192`; a config's field name is taken too:
`progress=False` is `--no-progress`), and makes the command's own config from them
(`BuildConfig`, `EvalConfig` with its backend's options, `ScoreConfig`): each value is read
as its flag reads it and the config checks itself, so defaults, choices, bounds and messages
have one source of truth, the config dataclass. Errors are `RulerError` (the one line the
command would print); so is a keyword a function does not take (`OptionError`, a `TypeError`
too, as Python's own would be), naming it and the ones it takes. Nothing is printed that the
command prints, except progress bars when asked.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from ruler.kernel.errors import RulerError
from ruler.kernel.flags import (
    FlagValueError,
    flagged_fields,
    keyword_names,
    keyword_value,
    read_keywords,
)

_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")

if TYPE_CHECKING:  # the heavy imports happen inside the functions
    import datasets

    from ruler.builder.findings import VerifyReport
    from ruler.builder.pipeline.config import BuildConfig, BuildReport
    from ruler.eval.config import EvalConfig, ScoreConfig
    from ruler.eval.records.scores_record import ScoresRecord
    from ruler.eval.runner import EvalOutcome


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


def _read(function: str, command: str, keywords: Mapping[str, Any],
          accepted: Iterable[str], make: Callable[[], Any]) -> Any:
    """`make()`, which reads `keywords` into the command's config, once every keyword is one the
    function takes; a value a flag cannot read is refused in the flag's own words, naming the
    function and the command's help."""
    _check_keywords(function, keywords, accepted)
    try:
        return make()
    except FlagValueError as e:
        raise RulerError(f"ruler.{function}(): {e} (see `ruler {command} --help`)") from None


def build(tokenizer: str, *, tasks: str | Iterable[str] | None = None,
          lengths: int | str | Iterable[int | str] | None = None, samples: int = 500,
          out: str | Path | None = None, progress: bool = False, benchmark: str = "v1",
          **options: Any) -> "BuildReport":
    """`ruler build`: generate the tasks for `tokenizer` into `out` (default ./ruler-data).

    `benchmark`: "v1" (the default), or another benchmark's id or alias, as `ruler build
    --benchmark` takes them; a benchmark built along axes takes each axis's value by the
    axis's name (`language="ko"`, or "en-ko": `Benchmark.axes`); `tasks`: names or a
    comma-separated string (default: all of the benchmark's, or those a value of its axis
    builds); `lengths`: ints or the command's spellings ("4k,128k", "paper", a set the
    benchmark names; default: 4096, or the benchmark's own); `options`: any other field of
    `ruler.builder.pipeline.BuildConfig` (seed, workers, overwrite, ...) or its flag's
    spelling (`no_progress`, `sources`), a variant's flag (`depths=10`, `base=True`) or the
    variant itself (`variant=DepthSweep(10)`). Returns the build's report (`.out`,
    `.config`, `.files`)."""
    from ruler.builder.pipeline import run_build

    return run_build(_build_config(tokenizer, tasks=tasks, lengths=lengths, samples=samples,
                                   out=out, progress=progress, benchmark=benchmark, **options))


def _build_config(tokenizer: str, *, progress: bool, **options: Any) -> "BuildConfig":
    """The `BuildConfig` `build`'s arguments ask for."""
    from ruler.builder.pipeline import BuildConfig
    from ruler.catalog.benchmarks import benchmark_axes
    from ruler.catalog.variants import leave_out_clashing, variant_from_flags, variant_kinds

    leave_out_clashing({name for _, flag in flagged_fields(BuildConfig) for name in flag.names},
                       "ruler.build()")
    variant_flags = {flag.dest(""): flag for kind in variant_kinds()
                     if (flag := kind.flag()) is not None}
    given = {"tokenizer": tokenizer, **options}
    if "no_progress" not in options:
        given["progress"] = progress

    def make() -> BuildConfig:
        flagged = variant_from_flags({name: keyword_value(flag, name, given[name])
                                      for name, flag in variant_flags.items()
                                      if given.get(name) is not None})
        variant = given.get("variant")
        if variant is not None and flagged.field:
            raise RulerError(f"ruler.build(): one variant per build: got variant={variant!r} "
                             f"and {flagged.field} = {flagged.value!r}")
        return BuildConfig(**read_keywords(BuildConfig, given),
                           variant=flagged if variant is None else variant,
                           axes={name: given[name] for name in axes
                                 if given.get(name) is not None})

    # a benchmark's axis by its name (`language="ko"`: `Benchmark.axes`)
    axes = benchmark_axes()
    return _read("build", "build", given,
                 [*keyword_names(BuildConfig), *variant_flags, "variant", *axes], make)


def load(data: str | Path, config: str | None = None, length: int | str = 4096, *,
         task: str | None = None, revision: str | None = None) -> "datasets.Dataset":
    """The rows of one split: `data` is a build folder or a Hub dataset `ORG/NAME`; `config`
    the tokenizer config (default: the folder's only one); `task` narrows to the config
    `<config>--<task>` that holds one task. Uses `datasets.load_dataset`, so what you get is
    what the Hub's users get."""
    from datasets import load_dataset

    if not Path(data).exists() and not _HUB_ID.match(str(data)):
        raise RulerError(f"{data}: no such build folder (a Hub dataset is named ORG/NAME)")
    if Path(data).is_dir():
        from ruler.builder.manifest import Manifest

        manifest = Manifest.load(Path(data))
        configs = manifest.configs()
        if config is None and len(configs) != 1:
            raise RulerError(f"{data} holds {len(configs)} configs ({', '.join(configs)}): "
                             f"name one")
        config = configs[0] if config is None else config
        _check_split(manifest, str(data), config, task, length)
    name = f"{config}--{task}" if task and config else config
    try:
        return load_dataset(str(data), name, split=str(length), revision=revision)
    except ValueError as e:  # a Hub dataset without that config or split: `datasets` says so
        raise RulerError(_missing_split(str(data), name, length, e)) from None


def _check_split(manifest: Any, data: str, config: str, task: str | None,
                 length: int | str) -> None:
    """Refuse, in one line naming what there is, a config, task or length (split) a build
    folder does not have."""
    configs = manifest.configs()
    if config not in configs:
        raise RulerError(f"{data} has no config {config!r}; its configs: {', '.join(configs)}")
    if task is not None and task not in manifest.tasks(config):
        raise RulerError(f"{data}: config {config!r} has no task {task!r}; its tasks: "
                         f"{', '.join(manifest.tasks(config))}")
    lengths = sorted({f.max_seq_length for f in
                      manifest.files_of(config, None if task is None else [task])})
    if str(length) not in map(str, lengths):
        raise RulerError(f"{data}: config {config!r}{f' task {task!r}' if task else ''} has no "
                         f"split {str(length)!r} (a split is a length); its splits: "
                         f"{', '.join(map(str, lengths))}")


def _missing_split(data: str, name: str | None, length: int | str, error: ValueError) -> str:
    """`load_dataset`'s ValueError on one line, saying what was asked for: its own text
    lists the configs or splits the dataset has (asking the Hub again for them would answer
    wrongly offline, from the cache)."""
    said = " ".join(str(error).split())
    return (f"{data}: cannot load config {name!r}, split {str(length)!r} (a split is a "
            f"length): {said}")


def verify(out: str | Path, **options: Any) -> "VerifyReport":
    """`ruler verify`: check a build folder (`.ok`, `.all_problems()`); `options` as
    `ruler.builder.verify.run.verify` takes them (full, regenerate, workers, load, ...)."""
    import inspect

    from ruler.builder.verify.run import verify as verify_folder

    _check_keywords("verify", options, [
        name for name, p in inspect.signature(verify_folder).parameters.items()
        if p.kind is p.KEYWORD_ONLY])
    return verify_folder(out, **options)


def evaluate(model: str, data: str | Path, **options: Any) -> "EvalOutcome":
    """`ruler eval`: run `model` on a build folder or Hub dataset; `options` are the command's
    flags (backend="openai", base_url=..., tokenizer_config=..., lengths=[4096], limit=20,
    ...), progress bars off unless `progress=True`. Returns the run's outcome (`.out` holds
    predictions.jsonl, scores.json and, unless `no_report=True`, the report, with its
    figures unless `no_plots=True`)."""
    from ruler.eval.runner import run_eval

    cfg = _eval_config(model, data, **options)
    outcome = run_eval(cfg)
    if cfg.report:
        from ruler.eval.report.run import write_report

        write_report(outcome.out, plots=cfg.plots)
    return outcome


def _eval_config(model: str, data: str | Path, **options: Any) -> "EvalConfig":
    """The `EvalConfig` (with its backend's options) `evaluate`'s arguments ask for."""
    from ruler.eval.backends import BACKENDS, DEFAULT_BACKEND, get_backend
    from ruler.eval.config import EvalConfig

    given = {"model": model, "data": data, **options}
    if "no_progress" not in options:
        given.setdefault("progress", False)
    # Every backend's flags are taken, as the command takes them all; the chosen one's are read.
    accepted = list(keyword_names(EvalConfig))
    for spec in BACKENDS.values():
        accepted += keyword_names(spec.options_type, field_names=False)

    def make() -> EvalConfig:
        run = read_keywords(EvalConfig, given)
        kind = get_backend(run.get("backend", DEFAULT_BACKEND)).options_type
        own = read_keywords(kind, given, field_names=False)
        return EvalConfig(**run, backend_options=kind(model=run["model"], **own))

    return _read("evaluate", "eval", given, accepted, make)


def score(predictions: str | Path, data: str | Path, **options: Any) -> "ScoresRecord":
    """`ruler score`: score a predictions file or folder (ruler eval, lm-eval samples, Inspect
    logs) against the dataset; writes scores.json as the command does and returns the report
    (`.cells`, `.complete`, `.missing`)."""
    from ruler.commands.eval import score_to_folder

    report, _ = score_to_folder(_score_config(predictions, data, **options))
    return report


def _score_config(predictions: str | Path, data: str | Path, **options: Any) -> "ScoreConfig":
    """The `ScoreConfig` `score`'s arguments ask for."""
    from ruler.eval.config import ScoreConfig

    given = {"predictions": predictions, "data": data, **options}
    # `score` writes no report: the report's figures are not its to skip
    accepted = [k for k in keyword_names(ScoreConfig) if k not in ("plots", "no_plots")]
    return _read("score", "score", given, accepted,
                 lambda: ScoreConfig(**read_keywords(ScoreConfig, given)))
