"""`--backend fake`: answers without a model, deterministically and at once.

For checking a set-up end to end (data, rendering, counts, predictions, score, report) where
no model runs, for the tests and for timing the evaluator alone. Every request is answered by
a policy (`--fake-answers`; `--help` and docs/evaluating.md list them): `gold` answers what a
right model writes, from the row's references as its metric reads them (`MetricSpec.gold`),
read from the dataset (`--data`) a split file at a time; a benchmark's failure modes
(`Benchmark.fake_answers`, a `FakeAnswers`) fail on purpose where the row allows it, else
answer gold: to check the failure-mode labels.

It has no context limit of its own (`--max-model-len` sets one, and rows above it are skipped
as with a real engine) and no tokenizer: prompts are rendered and counted with the dataset
config's own (`--model-tokenizer` overrides it), so `--model` is only a name. It counts no
tokens (`output_tokens` is 0), except that a gold answer longer than the request's
`max_tokens` in words is cut there, a word standing for a token, and ends with
`finish_reason` "length", as an engine's answer cut at its budget does. Tests that need
another behaviour subclass `FakeBackend` and override `answer`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ruler.eval.backends.base import (
    BackendOptions,
    GenRequest,
    GenResult,
    finished_result,
    options_as,
)
from ruler.eval.backends.registry import BackendSpec
from ruler.eval.metrics.specs import METRIC_SPECS
from ruler.kernel.errors import RulerError
from ruler.kernel.flags import option


@dataclass(frozen=True)
class FakeAnswers:
    """A benchmark's purposeful failures (`Benchmark.fake_answers`): the modes it offers, the
    columns its answers read of a row, and `answer(mode, row)`: the mode's answer to a row
    (None where the mode does not apply to it: the gold answer)."""

    modes: tuple[str, ...]
    columns: tuple[str, ...]
    answer: Callable[[str, Mapping[str, Any]], str | None]


def fake_answers() -> dict[str, FakeAnswers]:
    """Each failure mode the registered benchmarks offer, with its benchmark's answers."""
    from ruler.catalog.benchmarks import BENCHMARK_SPECS

    hooks = [h for b in BENCHMARK_SPECS.values() if (h := b.hook("fake_answers")) is not None]
    return {mode: h for h in hooks for mode in h.modes}


def answer_modes() -> tuple[str, ...]:
    return ("gold", "empty", "none", *fake_answers())

#: The context limit when none is asked for: larger than any row.
NO_LIMIT = 1 << 40


@dataclass(frozen=True)
class FakeOptions(BackendOptions):
    answers: str = option(
        "--fake-answers", default="gold", choices=answer_modes,
        help=lambda: "what the fake backend answers (no model runs): gold = the row's "
                     "references (scores 100), empty = an empty answer (scores 0), none = no "
                     "answer (rows failed); or a benchmark's failure mode, answered on purpose "
                     "where a row allows it and gold elsewhere: " + ", ".join(fake_answers())
                     + " (docs/failure-modes.md); default: %(default)s")
    # The run's dataset (`EvalConfig` fills them in): where `gold` answers come from.
    data: str | None = None
    revision: str | None = None  # its Hub revision


class FakeBackend:
    name = "fake"

    def __init__(self, opts: BackendOptions):
        self.opts = options_as(opts, FakeOptions)  # checked by its own __post_init__
        if self.opts.answers not in ("empty", "none") and not self.opts.data:
            raise RulerError(f"the fake backend's {self.opts.answers} answers come from the "
                             f"dataset: pass FakeOptions(model, data=...) (the CLI passes "
                             f"--data)")
        self.max_model_len = int(self.opts.max_model_len or NO_LIMIT)
        # (split file, columns) -> index -> the row's columns: one file's at a time
        self._rows: dict[tuple, dict[int, dict[str, Any]]] = {}
        # A Hub dataset's revision: the commit the first file came from, for all the others.
        self._revision = self.opts.revision
        self._local: Any = None  # a build folder's Dataset, opened once
        self._hooks = fake_answers().get(self.opts.answers)  # a failure mode's

    def generate(self, requests: Iterable[GenRequest]) -> Iterator[GenResult]:
        for r in requests:
            yield self.answer(r)

    def answer(self, request: GenRequest) -> GenResult:
        """This request's result under the options' policy."""
        if self.opts.answers == "none":
            return GenResult(request.key, None, error="no answer (the fake backend, "
                                                      "--fake-answers none)")
        if self.opts.answers == "empty":
            return finished_result(request.key, "", 0, "stop")
        gold = self.gold(request.key) if self.opts.answers == "gold" else \
            self.purposeful(request.key)
        words = gold.split(" ")
        if len(words) > request.max_tokens:
            return finished_result(request.key, " ".join(words[:request.max_tokens]),
                                   request.max_tokens, "length")
        return finished_result(request.key, gold, 0, "stop")

    def gold(self, key: Any) -> str:
        """A right answer to the row `key`, as its metric reads one."""
        row = self._row(key, ("metric", "outputs"))
        return METRIC_SPECS[row["metric"]].gold(list(row["outputs"]))

    def purposeful(self, key: Any) -> str:
        """The failure mode's answer to the row `key` (its benchmark's `FakeAnswers`), or its
        gold answer where the mode does not apply to it."""
        hooks = self._hooks
        assert hooks is not None, f"--fake-answers {self.opts.answers} is no failure mode"
        row = self._row(key, hooks.columns)
        made = hooks.answer(self.opts.answers, row)
        return METRIC_SPECS[row["metric"]].gold(list(row["outputs"])) if made is None else made

    def _row(self, key: Any, read: Sequence[str]) -> dict[str, Any]:
        """The columns `read` of the row `key`, read with its split file's the first time one
        of its rows is asked for (rows come file by file)."""
        config, task, length, index = key
        where = (config, task, int(length), tuple(read))
        if where not in self._rows:
            ds, f = self._file(config, task, int(length))
            # one file's rows at a time: a 128K file's inputs are ~300 MB
            self._rows = {where: {int(r["index"]): r for r in ds.rows(f, ("index", *read))}}
        return self._rows[where][int(index)]

    def _file(self, config: str, task: str, length: int) -> tuple[Any, Any]:
        from pathlib import Path

        from ruler.eval.records.dataset import open_dataset

        # One file at a time: a Hub dataset fetches only the files the run asks for. A build
        # folder is opened once (its manifest read and checked once, not per file).
        data = self.opts.data
        assert data is not None, "answers read from rows need data (refused on creation)"
        local = Path(data).expanduser().is_dir()
        ds = self._local if local and self._local is not None else open_dataset(
            data, self._revision, config, (task,), (length,))
        if local:
            self._local = ds
        self._revision = ds.revision or self._revision
        (f,) = ds.files(config, (task,), (length,))
        return ds, f

    def close(self) -> None:
        self._rows.clear()


SPEC = BackendSpec(
    name="fake", factory=FakeBackend,
    summary="no model: answers from the rows' references (--fake-answers), for checks; "
            "prompts rendered with the dataset config's tokenizer",
    options_type=FakeOptions, runs_a_model=False)
