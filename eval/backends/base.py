"""What every generation backend shares: the request and result types, the Backend protocol,
the options every backend reads, and the one-line error for a missing inference stack.

The backends (`vllm`, `openai`, `hf`, `fake`: one module each) import this module and nothing
of each other; `registry` knows them by name. See `ruler.eval.backends` for how they work.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from typing import Any, Iterable, Iterator, Protocol, Sequence, TypeVar

from ruler.builder.errors import RulerError


@dataclass(frozen=True)
class GenRequest:
    key: Any  # opaque to the backend (the runner's prediction key)
    prompt_ids: Sequence[int]  # a 4-byte array (ruler.eval.render) or a list
    max_tokens: int
    # False keeps special tokens in the text (a reasoning end marker that is one)
    skip_special_tokens: bool = True


@dataclass
class GenResult:
    key: Any
    text: str | None
    output_tokens: int = 0
    finish_reason: str = ""
    error: str = ""  # non-empty: the request failed (recorded, retried on resume)
    seconds: float = 0.0


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
    engine's own). A backend with options of its own subclasses this (`VLLMOptions`,
    `OpenAIOptions`, ...) and reads them from its own flags (`BackendSpec.options`)."""

    model: str
    max_model_len: int | None = None


Options = TypeVar("Options", bound=BackendOptions)


def options_as(opts: BackendOptions, kind: type[Options]) -> Options:
    """`opts` as a backend's own options type. Plain `BackendOptions` (what `run_eval` makes
    from the model name when it is given none) take that type's defaults for the rest."""
    if isinstance(opts, kind):
        return opts
    return kind(**{f.name: getattr(opts, f.name) for f in fields(BackendOptions)})


def shared_options(args: argparse.Namespace) -> dict[str, Any]:
    """The `BackendOptions` fields from the flags every backend shares (`--model`,
    `--max-model-len`): a backend's `options(args)` adds its own to these."""
    return {"model": args.model, "max_model_len": args.max_model_len}


def at_least(args: argparse.Namespace, minimum: int, *names: str) -> None:
    """Refuse, naming the flag, a value of these options below `minimum` (None: not given)."""
    for name in names:
        value = getattr(args, name)
        if value is not None and value < minimum:
            raise RulerError(f"--{name.replace('_', '-')} must be >= {minimum}, got {value}")


def add_shared_argument(group: argparse._ActionsContainer, *flags: str, **kwargs: Any) -> None:
    """Add a flag that several backends read (e.g. `--dtype`, vllm and hf): the first backend
    that asks adds it, the others find it there."""
    try:
        group.add_argument(*flags, **kwargs)
    except argparse.ArgumentError:  # "conflicting option string": added by another backend
        pass


def add_dtype_argument(group: argparse._ActionsContainer) -> None:
    """`--dtype`, for the backends that load weights themselves (vllm, hf)."""
    add_shared_argument(group, "--dtype", default="auto",
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
