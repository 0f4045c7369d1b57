"""scores.json's `health`: what the predictions show of how a run was set up, counted by
`eval.metrics.health.health_facts` and turned into the report's flags there. A typed record
(`kernel.json_record`): fields a later version adds are kept, an older file's missing ones are
"not recorded"; `HealthFacts.shape_ok` is the check `eval.records.results_schema` runs on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ruler.kernel.json_record import Record


@dataclass
class HealthFacts(Record):
    """Counts per task of what the predictions show, and the run's settings where recorded:
    scores.json's `health` (fields a later version adds are kept in `extra`)."""

    framework: str = "ruler eval"  # who made the predictions: ruler eval, lm-eval, inspect, ...
    answered: dict[str, int] = field(default_factory=dict)
    finish_known: int = 0  # answered rows whose finish reason is recorded
    cut_at_budget: dict[str, int] = field(default_factory=dict)  # finish_reason "length"
    empty: dict[str, int] = field(default_factory=dict)  # answered with nothing (not reasoning)
    budget_exhausted: dict[str, int] = field(default_factory=dict)  # reasoning ran out
    unterminated: dict[str, int] = field(default_factory=dict)  # stopped inside reasoning
    refusals: dict[str, int] = field(default_factory=dict)
    prompt_mismatch: dict[str, int] = field(default_factory=dict)
    prompt_unchecked: dict[str, int] = field(default_factory=dict)
    skipped_context: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    # Answered rows checked against their own row (`eval.metrics.answer_checks`: `ruler score` marks
    # them while it reads the rows); None: not recorded (older scores), nothing checked.
    answers_checked: int | None = None
    copies_prompt: dict[str, int] = field(default_factory=dict)  # long stretches of the prompt
    past_budget: dict[str, int] = field(default_factory=dict)  # far past the row's budget
    # per task, the largest output budget its answered rows carry (tokens_to_generate, or the
    # smaller budget a row ran with), and the answered rows whose own budget is above the
    # output cap the run recorded (`max_tokens`, `max_tokens_by_task`)
    row_budget: dict[str, int] = field(default_factory=dict)
    capped: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)  # kind -> row keys
    # The run's settings as recorded (None: not recorded): prompt mode; decoding; a cap on
    # the output tokens (`--max-tokens`, lm-eval's max_gen_toks, Inspect's max_tokens) and
    # temperature; the output budget the rows reserve where it is not RULER's (a build with
    # --output-budget); the chat template that rendered the prompts and the build's.
    mode: str | None = None
    decoding: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_tokens_by_task: dict[str, int] = field(default_factory=dict)  # a framework's per task
    reserved_budget: int | None = None
    template_sha256: str | None = None
    build_template_sha256: str | None = None
    no_context: bool = False  # the run is on a --no-context config (the baseline itself)

    @classmethod
    def shape_ok(cls, saved: Any) -> bool:
        """Whether scores.json's `health` has this record's shape (fields a later version adds
        are kept unchecked): a damaged file is refused where it is read
        (`ruler.eval.records.results_schema`), never a traceback where the report uses it."""
        return saved is None or isinstance(saved, dict) and all(
            _FIELD_CHECKS[name](value) for name, value in saved.items() if name in _FIELD_CHECKS)

    @property
    def rows(self) -> int:
        return sum(self.answered.values())


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _counts(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and _count(n) for k, n in v.items())


def _opt(check: Any) -> Any:
    return lambda v: v is None or check(v)


_FIELD_CHECKS: dict[str, Any] = {
    **{name: _counts for name in (
        "answered", "cut_at_budget", "empty", "budget_exhausted", "unterminated", "refusals",
        "prompt_mismatch", "prompt_unchecked", "skipped_context", "failed",
        "max_tokens_by_task", "copies_prompt", "past_budget", "row_budget", "capped")},
    "answers_checked": _opt(_count),
    "framework": lambda v: isinstance(v, str), "finish_known": _count,
    "examples": lambda v: isinstance(v, dict) and all(
        isinstance(k, str) and isinstance(x, list) and all(isinstance(i, str) for i in x)
        for k, x in v.items()),
    **{name: _opt(lambda v: isinstance(v, str)) for name in (
        "mode", "decoding", "template_sha256", "build_template_sha256")},
    "temperature": _opt(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    "max_tokens": _opt(_count), "reserved_budget": _opt(_count),
    "no_context": lambda v: isinstance(v, bool),
}
