"""`--backend openai`: any OpenAI-compatible completions server, over httpx.

POST /v1/completions with `prompt` = the token id list. The OpenAI completions API defines
`prompt` as a string *or an array of token ids*; vLLM, SGLang and TGI accept ids. Sending ids
means the server neither re-tokenizes nor adds a second BOS, so the model sees exactly the ids
the builder counted, the same as the vllm and hf backends. (Sending the rendered string would
depend on each server's tokenizer and its default special tokens.)

At most `concurrency` requests are in flight (the server batches them continuously); the
runner's rows are pulled only as slots free up. A request that times out, cannot connect, or
gets 429 / 5xx is retried with exponential backoff and jitter (honouring `Retry-After`), up
to `retries` times; any other 4xx is the request's own fault and is not retried. A 200 that
carries no completion (garbage JSON, no choices, `text` null or absent, finish_reason "error"
or "abort") is a failure of the server's, retried the same way. A request that still fails is
recorded as an error, which a resumed run retries.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from ruler.builder.errors import RulerError
from ruler.builder.scrub import register_secret, scrub
from ruler.eval.backends.base import (
    BackendOptions,
    GenRequest,
    GenResult,
    at_least,
    context_limit,
    feed_ready,
    finished_result,
    missing_requirement_error,
    options_as,
    prompt_list,
    shared_options,
)
from ruler.eval.backends.registry import BackendSpec

MAX_BACKOFF = 60.0
INSTALL_HINT = "--backend openai needs httpx, which is not installed: pip install httpx"


@dataclass(frozen=True)
class OpenAIOptions(BackendOptions):
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key: str | None = None  # default: $OPENAI_API_KEY (never a flag: argv is public)
    concurrency: int = 32
    timeout: float = 600.0
    retries: int = 5
    retry_backoff: float = 1.0  # seconds before the first retry; doubles each time


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--base-url", default="http://127.0.0.1:8000/v1",
                       help="server URL (the API key, if it needs one: $OPENAI_API_KEY)")
    group.add_argument("--concurrency", type=int, default=32, help="requests in flight")
    group.add_argument("--timeout", type=float, default=600.0,
                       help="seconds per request before it is retried")
    group.add_argument("--retries", type=int, default=5,
                       help="retries of a request that times out or gets 429/5xx, with "
                            "exponential backoff (then recorded as failed; re-running retries "
                            "it)")


def options(args: argparse.Namespace) -> OpenAIOptions:
    if not args.model_tokenizer and not Path(args.model).exists():
        raise RulerError("--backend openai renders prompts locally: pass --model-tokenizer "
                         "(the served model's tokenizer folder or registry name)")
    at_least(args, 1, "concurrency")
    if args.retries < 0 or args.timeout <= 0:
        raise RulerError("--retries must be >= 0 and --timeout > 0")
    return OpenAIOptions(**shared_options(args), base_url=args.base_url,
                         concurrency=args.concurrency, timeout=args.timeout,
                         retries=args.retries)


def retryable(status: int) -> bool:
    return status == 429 or status >= 500


def backoff_seconds(attempt: int, base: float, retry_after: str | None,
                    rng: random.Random) -> float:
    """Wait before retry `attempt` (0-based): the server's Retry-After when it gives seconds,
    else base * 2^attempt with +-50% jitter (so parallel clients do not retry in lockstep)."""
    if retry_after:
        try:
            return min(MAX_BACKOFF, max(0.0, float(retry_after)))
        except ValueError:
            pass  # an HTTP date: fall back to our own schedule
    return min(MAX_BACKOFF, base * 2 ** attempt) * rng.uniform(0.5, 1.5)


class OpenAIBackend:
    name = "openai"

    def __init__(self, opts: BackendOptions):
        opts = options_as(opts, OpenAIOptions)
        try:
            import httpx
        except ImportError as e:
            raise missing_requirement_error(INSTALL_HINT, e) from None
        self.httpx = httpx
        self.base = opts.base_url.rstrip("/")
        self.model = opts.model
        self.opts = opts
        self.concurrency = max(1, opts.concurrency)
        api_key = opts.api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        register_secret(opts.api_key)  # a server may echo it: never shown or saved (the
        # environment's key is known to ruler.builder.scrub already)
        self.client = httpx.Client(
            base_url=self.base, headers={"Authorization": f"Bearer {api_key}"},
            timeout=httpx.Timeout(opts.timeout, connect=min(30.0, opts.timeout)),
            limits=httpx.Limits(max_connections=self.concurrency,
                                max_keepalive_connections=self.concurrency))
        self._rng = random.Random()  # backoff jitter only; never touches results
        try:
            served = self._served_max_len()
        except BaseException:
            self.client.close()
            raise
        self.max_model_len = context_limit(
            opts.max_model_len, served,
            f"the server at {self.base} does not report max_model_len for {self.model!r}",
            f"the server's max_model_len {served} for {self.model!r}")

    def _served_max_len(self) -> int | None:
        try:
            resp = self.client.get("/models", timeout=30.0)
            resp.raise_for_status()
            models = resp.json()
        except (self.httpx.HTTPError, ValueError) as e:
            raise RulerError(scrub(f"cannot reach the OpenAI-compatible server at "
                                   f"{self.base}: {type(e).__name__}: {e}")) from None
        names = [m.get("id") for m in models.get("data", [])]
        if names and self.model not in names:
            raise RulerError(scrub(f"the server at {self.base} does not serve {self.model!r}; "
                                   f"it serves: {', '.join(map(str, names))}"))
        for m in models.get("data", []):
            if m.get("id") == self.model and m.get("max_model_len"):
                return int(m["max_model_len"])  # vLLM reports it; others may not
        return None

    def _one(self, r: GenRequest) -> GenResult:
        body = {"model": self.model, "prompt": prompt_list(r.prompt_ids),
                "max_tokens": r.max_tokens, "temperature": 0.0, "top_p": 1.0, "n": 1,
                "stream": False}
        if not r.skip_special_tokens:
            body["skip_special_tokens"] = False  # vLLM's extension; others ignore it
        httpx = self.httpx
        start = time.perf_counter()
        error = ""
        for attempt in range(self.opts.retries + 1):
            retry_after = None
            try:
                resp = self.client.post("/completions", json=body)
            except httpx.TransportError as e:  # connect / read timeouts, refused, reset
                error = f"{type(e).__name__}: {e}"
            else:
                if resp.status_code == 200:
                    try:
                        data = resp.json()
                        choice = data["choices"][0]
                        tokens = int((data.get("usage") or {}).get("completion_tokens") or 0)
                        result = finished_result(r.key, choice.get("text"), tokens,
                                                 choice.get("finish_reason"),
                                                 time.perf_counter() - start)
                    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
                        error = f"malformed response ({type(e).__name__}: {e}): {resp.text[:300]}"
                    else:
                        if not result.error:
                            return result
                        # A 200 without an answer (`text` null or absent, finish_reason
                        # "error"): a server-side failure, retried like a 5xx.
                        error = f"HTTP 200 without a completion: {result.error}: " \
                                f"{resp.text[:300]}"
                else:
                    error = f"HTTP {resp.status_code}: {resp.text[:500]}"
                    if not retryable(resp.status_code):
                        break  # the request itself is wrong: retrying will not help
                    retry_after = resp.headers.get("retry-after")
            if attempt < self.opts.retries:
                time.sleep(backoff_seconds(attempt, self.opts.retry_backoff, retry_after,
                                           self._rng))
        # the reason is saved in predictions.jsonl and printed: server text, scrubbed
        return GenResult(r.key, None, error=scrub(error), seconds=time.perf_counter() - start)

    def generate(self, requests: Iterable[GenRequest]) -> Iterator[GenResult]:
        it, ready = iter(requests), feed_ready(requests)
        from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

        running: set = set()
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="ruler-openai")
        try:
            exhausted = False
            while True:
                # Rows are pulled (and rendered) only as slots free up; with half the slots
                # busy, only rows that are ready (the server has work meanwhile).
                while not exhausted and len(running) < self.concurrency \
                        and (len(running) < (self.concurrency + 1) // 2 or ready()):
                    r = next(it, None)
                    if r is None:
                        exhausted = True
                    else:
                        running.add(pool.submit(self._one, r))
                if not running:
                    return
                # With a free slot and rows still rendering, come back for them soon.
                full = exhausted or len(running) >= self.concurrency
                done, running = wait(running, return_when=FIRST_COMPLETED,
                                     timeout=None if full else 0.05)
                for f in done:
                    yield f.result()
        finally:
            # Stopped early (an error, Ctrl-C): do not wait for requests nobody will read.
            pool.shutdown(wait=not running, cancel_futures=True)

    def close(self) -> None:
        self.client.close()


SPEC = BackendSpec(
    name="openai", factory=OpenAIBackend, requirement="httpx", install_hint=INSTALL_HINT,
    summary="an OpenAI-compatible completions server at --base-url",
    add_arguments=add_arguments, options=options)
