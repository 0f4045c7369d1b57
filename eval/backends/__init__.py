"""Generation backends behind one small interface: token ids in, greedy text out, streamed.

Every backend receives the exact prompt token ids `Tokenizer.prompt_ids` rendered (the ids the
builder counted) as a lazy iterable, pulls from it only as far as its own bounded window
allows, generates greedily up to each request's own `max_tokens`, and yields results as they
complete so the runner can write them at once. Heavy imports (vllm, torch, httpx) happen inside
the backends, never at module import: `ruler --help` and `ruler score` stay fast and work
without an inference stack.

`base` holds what they share, `registry` the table `ruler eval --backend` reads (the backends:
docs/architecture.md, "Layout"). Each backend module defines a `SPEC` (`registry.BackendSpec`:
its factory and its options type, whose fields declare its flags), listed in the table by
address and imported on first use: a new backend is one module and one line there (or, outside
the package, an entry point in group `ruler.backends`, or one `register_backend(spec)` call).
"""

from __future__ import annotations

from ruler.eval.backends.base import (
    Backend,
    BackendOptions,
    GenRequest,
    GenResult,
    context_limit,
    dtype_option,
    feed_ready,
    finished_result,
    missing_requirement_error,
    prompt_list,
)
from ruler.eval.backends.registry import (
    BACKENDS,
    DEFAULT_BACKEND,
    BackendSpec,
    add_backend_flags,
    backend_help,
    backend_names,
    get_backend,
    make_backend,
    register_backend,
    require_backend,
    unregister_backend,
)

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "Backend", "BackendOptions", "BackendSpec", "GenRequest",
           "GenResult", "add_backend_flags", "backend_help", "backend_names", "context_limit",
           "dtype_option", "feed_ready", "finished_result", "get_backend", "make_backend",
           "missing_requirement_error", "prompt_list", "register_backend", "require_backend",
           "unregister_backend"]
