"""`--backend fake`: answers without a model, deterministically and at once.

For checking a set-up end to end (data, rendering, counts, predictions, score, report) where
no model runs, for the tests and for timing the evaluator alone. Every request is answered by
a policy (`--fake-answers`):

- `gold`: what a right model writes, from the row's references (its `outputs`) as its metric
  reads them (`MetricSpec.gold`): joined by spaces, or the letter in `\boxed{}` for RULERv2's
  multiple-choice rows; every task scores 100. Read from the dataset (`--data`), a split
  file's the first time one of its rows is asked for;
- `empty`: an empty answer with a normal finish, a real answer that scores 0;
- `none`: no text, which the evaluator records as a failed request (kept out of the score,
  listed, retried on resume): what a broken engine does.

It has no context limit of its own: `--max-model-len` sets one, and rows above it are skipped
as with a real engine. It has no tokenizer either: prompts are rendered and counted with the
dataset config's own (`--model-tokenizer` overrides it), so `--model` is only a name. It
counts no tokens (`output_tokens` is 0), except that a gold answer longer than the request's
`max_tokens` in words is cut there, a word standing for a token, and ends with `finish_reason`
"length", as an engine's answer cut at its budget does (what `ruler eval --max-tokens` does to
a real model's answers). Tests that need another behaviour subclass
`FakeBackend` and override `answer`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from ruler.builder.errors import RulerError
from ruler.builder.flags import option
from ruler.eval.backends.base import (
    BackendOptions,
    GenRequest,
    GenResult,
    finished_result,
    options_as,
)
from ruler.eval.backends.registry import BackendSpec
from ruler.eval.metrics import METRIC_SPECS

ANSWERS = ("gold", "empty", "none")
#: The context limit when none is asked for: larger than any row.
NO_LIMIT = 1 << 40


@dataclass(frozen=True)
class FakeOptions(BackendOptions):
    answers: str = option(
        "--fake-answers", default="gold", choices=ANSWERS,
        help="what the fake backend answers (no model runs): gold = the row's references "
             "(scores 100), empty = an empty answer (scores 0), none = no answer (rows failed); "
             "default: %(default)s")
    # The run's dataset (`EvalConfig` fills them in): where `gold` answers come from.
    data: str | None = None
    revision: str | None = None  # its Hub revision


class FakeBackend:
    name = "fake"

    def __init__(self, opts: BackendOptions):
        self.opts = options_as(opts, FakeOptions)  # checked by its own __post_init__
        if self.opts.answers == "gold" and not self.opts.data:
            raise RulerError("the fake backend's gold answers come from the dataset: pass "
                             "FakeOptions(model, data=...) (the CLI passes --data)")
        self.max_model_len = int(self.opts.max_model_len or NO_LIMIT)
        # per split file: index -> (metric, references)
        self._references: dict[tuple, dict[int, tuple[str, list[str]]]] = {}
        # A Hub dataset's revision: the commit the first file came from, for all the others.
        self._revision = self.opts.revision

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
        gold = self.gold(request.key)
        words = gold.split(" ")
        if len(words) > request.max_tokens:
            return finished_result(request.key, " ".join(words[:request.max_tokens]),
                                   request.max_tokens, "length")
        return finished_result(request.key, gold, 0, "stop")

    def gold(self, key: Any) -> str:
        """A right answer to the row `key`, as its metric reads one."""
        metric, refs = self._rows(key)
        return METRIC_SPECS[metric].gold(refs)

    def _rows(self, key: Any) -> tuple[str, list[str]]:
        """The metric and references of the row `key`, read with the rest of its split file
        the first time one of them is asked for."""
        config, task, length, index = key
        where = (config, task, int(length))
        if where not in self._references:
            from ruler.eval.data import open_dataset

            # One file at a time: a Hub dataset fetches only the files the run asks for.
            ds = open_dataset(self.opts.data, self._revision, config, (task,), (length,))
            self._revision = ds.revision or self._revision
            (f,) = ds.files(config, (task,), (int(length),))
            self._references[where] = {int(r["index"]): (r["metric"], list(r["outputs"]))
                                       for r in ds.rows(f, ("index", "metric", "outputs"))}
        return self._references[where][int(index)]

    def close(self) -> None:
        self._references.clear()


SPEC = BackendSpec(
    name="fake", factory=FakeBackend,
    summary="no model: answers from the rows' references (--fake-answers), for checks; "
            "prompts rendered with the dataset config's tokenizer",
    options_type=FakeOptions, runs_a_model=False)
