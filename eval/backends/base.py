"""What every generation backend shares: the request and result types, the Backend protocol,
the options every backend reads (and how a backend's own declare their flags), and the one-line
error for a missing inference stack.

The backends (`vllm`, `openai`, `hf`, `fake`: one module each) import this module and nothing
of each other; `registry` knows them by name. See `ruler.eval.backends` for how they work.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Iterable, Iterator, Protocol, Sequence, TypeVar

from ruler.kernel.errors import RulerError
from ruler.kernel.flags import check_flags, option


@dataclass(frozen=True)
class GenRequest:
    key: Any  # opaque to the backend (the runner's prediction key)
    prompt_ids: Sequence[int]  # a 4-byte array (ruler.eval.render) or a list
    max_tokens: int
    # False keeps special tokens in the text (a reasoning end marker that is one)
    skip_special_tokens: bool = True
    # The row's own texts, for a backend that sends text rather than ids (openai's text and
    # chat APIs: `wants_row_texts`); None for the others, whose rows never carry them.
    input_text: str | None = None
    answer_prefix: str | None = None


@dataclass
class GenResult:
    key: Any
    text: str | None
    output_tokens: int = 0
    finish_reason: str = ""
    error: str = ""  # non-empty: the request failed (recorded, retried on resume)
    seconds: float = 0.0
    # The engine's own count of the prompt it ran (a server's usage.prompt_tokens), where it
    # reports one, and why it differs from the prompt the row was rendered to (empty: it does
    # not, or it was not reported): such a row ran on another prompt than the build's.
    server_prompt_tokens: int | float | None = None
    prompt_mismatch: str = ""
    # A server's: why the prompt count could not be checked (none reported, not a number),
    # the model it says answered where that is not the one asked for, and what else it
    # reported in an unexpected form (a count as a string, a negative completion count).
    prompt_unchecked: str = ""
    server_model: str = ""
    server_notes: str = ""


#: Finish reasons that mean the engine gave up on the request (vLLM: a request aborted, or an
#: engine error; servers pass them on): whatever text came with them is not the model's answer.
FAILED_FINISH_REASONS = frozenset({"abort", "error"})


def finished_result(key: Any, text: Any, output_tokens: int = 0, finish_reason: Any = "",
                    seconds: float = 0.0) -> GenResult:
    """The result of a generation the engine reports as finished: the answer, or an error
    when there is none. An empty text with a normal finish ("stop", "length") is a real
    answer (scored, usually wrong); no text at all, or a finish reason that says the request
    failed, is a failed request: kept out of the score, listed, retried on resume."""
    finish = str(finish_reason or "")
    if finish in FAILED_FINISH_REASONS:
        return GenResult(key, None, error=f"the engine ended the request with finish_reason "
                                          f"{finish!r} (no answer)", seconds=seconds)
    if not isinstance(text, str):
        return GenResult(key, None, error=f"the engine returned no text ({text!r}, "
                                          f"finish_reason {finish!r})", seconds=seconds)
    return GenResult(key, text, int(output_tokens or 0), finish, seconds=seconds)


class Backend(Protocol):
    """What the runner needs of an engine. Two optional members, for engines that do not take
    token ids (openai's text and chat APIs): `wants_row_texts` (True: requests carry the row's
    `input_text` and `answer_prefix`), and `prepare(renderer)`, called once before the first
    request with the renderer that made the rows' ids (so the engine can render what it sends
    and check it against the server), returning what to record in run.json about how prompts
    reached the model (`serving`), or None."""

    name: str
    max_model_len: int  # prompt + generated tokens the engine accepts

    def generate(self, requests: Iterable[GenRequest]) -> Iterator[GenResult]: ...

    def close(self) -> None: ...


def feed_ready(requests: Iterable[GenRequest]):
    """`requests.ready()` when the iterable has it (the runner's feed: True when the next
    request is rendered already), else a function that is always True. A backend with work in
    flight takes more requests only while they are ready, and otherwise gets on with it."""
    ready = getattr(requests, "ready", None)
    return ready if callable(ready) else (lambda: True)


@dataclass(frozen=True)
class BackendOptions:
    """What every backend is given: the model and the context limit asked for (None: the
    engine's own). A backend with options of its own subclasses this as a frozen dataclass
    (`VLLMOptions`, `OpenAIOptions`, ...) whose fields declare their `ruler eval` flags
    (`ruler.kernel.flags.option`): the command shows them in the backend's own group,
    `ruler.evaluate` takes them as keywords, and `__post_init__` checks them (the flags'
    choices and bounds; a subclass adds its own checks after calling this one's).

    A field named as one of the run's (`EvalConfig`: `model`; the fake backend's `data` and
    `revision`) and declared without a flag takes the run's value: `EvalConfig` fills it."""

    model: str
    max_model_len: int | None = option(
        "--max-model-len", default=None, type=int,
        help="context limit (prompt + generation); default: the model's / server's")

    def __post_init__(self) -> None:
        check_flags(self)

    @property
    def wants_row_texts(self) -> bool:
        """Whether the backend these options make sends text (its requests then carry the
        row's input and answer prefix): the runner keeps them while rendering ahead."""
        return False


Options = TypeVar("Options", bound=BackendOptions)


def options_as(opts: BackendOptions, kind: type[Options]) -> Options:
    """`opts` as a backend's own options type. Plain `BackendOptions` (what `EvalConfig`
    settles for a backend given none of its own) take that type's defaults for the rest."""
    if isinstance(opts, kind):
        return opts
    return kind(**{f.name: getattr(opts, f.name) for f in fields(BackendOptions)})


def dtype_option() -> Any:
    """The `--dtype` field of the backends that load weights themselves (vllm, hf): declared
    alike in both, it is one flag of `ruler eval`."""
    return option("--dtype", default="auto",
                  help="weights dtype (vllm, hf): auto, float32, bfloat16, float16")


def prompt_list(ids: Sequence[int]) -> list[int]:
    """The ids as a list, for APIs that take one (only ever for requests in flight)."""
    tolist = getattr(ids, "tolist", None)
    return tolist() if tolist is not None else list(ids)


def context_limit(requested: int | None, limit: int | None, unknown: str, limit_desc: str) -> int:
    """The max_model_len to use: the requested one (never above the engine's limit) or the limit."""
    value = int(requested or limit or 0)
    if not value:
        raise RulerError(f"{unknown}: pass --max-model-len")
    if limit and value > limit:
        raise RulerError(f"--max-model-len {value} exceeds {limit_desc}")
    return value


def missing_requirement_error(install_hint: str, e: ImportError) -> RulerError:
    """The one-line error for a backend whose import failed after all (a broken install)."""
    return RulerError(f"{install_hint} ({type(e).__name__}: {e})")
