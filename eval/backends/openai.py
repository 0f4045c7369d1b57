"""`--backend openai`: any OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp's
`llama-server`, llama-cpp-python's `llama_cpp.server`, Ollama, hosted APIs), over httpx.

How a row is sent — token ids or text to /completions, or chat messages — is `--api`
(`openai_api`: the three forms, and the probe that checks, before the first row, that the
server sees the prompt the build counted). Every answer's `usage.prompt_tokens` is compared
with the row's rendered count where the server reports it: a row that differs ran on another
prompt than the build's, is recorded as failed (redone on resume) and stops the run — one row
is proof enough, since the usual cause (a server chat template other than the model's) is
systematic and every further row would be compute spent on another prompt
(`--allow-prompt-mismatch`: such rows are kept, flagged).

What the server reports is used: its context (vLLM's `max_model_len`, llama.cpp's
`meta.n_ctx` in /v1/models) when `--max-model-len` is not given, and its slots (llama.cpp's
/props `total_slots`) as the concurrency: requests beyond them would only queue at the server,
where the waiting would count against each request's `--timeout`. Servers that batch
continuously (vLLM, SGLang) get 32 requests at a time, any other server that says nothing one
(`--concurrency` sets it).

At most `concurrency` requests are in flight (the server batches them continuously); the
runner's rows are pulled only as slots free up. A request that times out, cannot connect, or
gets 429 / 5xx is retried with exponential backoff and jitter (honouring `Retry-After`), up
to `retries` times; any other 4xx is the request's own fault and is not retried. A 200 that
carries no completion (garbage JSON, no choices, `text` null or absent, finish_reason "error"
or "abort") is a failure of the server's, retried the same way. A request that still fails is
recorded as an error, which a resumed run retries. The probe is not retried on 500 or 4xx: a
server that refuses the request form fails the run at once, in one line naming the API to use.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import urlsplit

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
    shared_options,
)
from ruler.eval.backends.openai_api import (
    APIS,
    DEFAULT_API,
    ENDPOINTS,
    INSTEAD,
    PREFIX_TURNS,
    Rejected,
    Wire,
    negotiate,
    prompt_tokens,
)
from ruler.eval.backends.registry import BackendSpec

MAX_BACKOFF = 60.0
#: Requests in flight on a server that batches continuously (vLLM, SGLang: /v1/models'
#: owned_by) and reports no slots: enough to keep it busy without queueing long.
DEFAULT_CONCURRENCY = 32
BATCHING_SERVERS = frozenset({"vllm", "sglang"})
#: Seconds for the start-up questions (/models, /props): a server that is up answers at once.
INFO_TIMEOUT = 30.0
#: Statuses the probe retries: the server is starting, overloaded or behind a busy gateway.
#: Any other error on a one-token request means the server cannot serve this form at all.
PROBE_RETRYABLE = frozenset({429, 502, 503, 504})
INSTALL_HINT = "--backend openai needs httpx, which is not installed: pip install httpx"


@dataclass(frozen=True)
class OpenAIOptions(BackendOptions):
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key: str | None = None  # default: $OPENAI_API_KEY (never a flag: argv is public)
    concurrency: int | None = None  # None: the server's slots where it says, else 32
    timeout: float = 600.0
    retries: int = 5
    retry_backoff: float = 1.0  # seconds before the first retry; doubles each time
    api: str = DEFAULT_API  # one of openai_api.APIS
    answer_prefix_turn: str = "auto"  # chat API: one of openai_api.PREFIX_TURNS
    allow_prompt_mismatch: bool = False  # keep rows whose server prompt differs (flagged)

    @property
    def wants_row_texts(self) -> bool:
        return self.api != "completions-ids"


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--base-url", default="http://127.0.0.1:8000/v1",
                       help="server URL (the API key, if it needs one: $OPENAI_API_KEY)")
    group.add_argument("--api", choices=APIS, default=DEFAULT_API,
                       help="how rows are sent: completions-ids = token ids to /completions, "
                            "exactly the build's (vLLM, SGLang, TGI, llama.cpp's "
                            "llama-server); completions-text = the rendered prompt as text "
                            "(llama-cpp-python's server, Ollama); chat = messages to "
                            "/chat/completions, rendered by the server's chat template "
                            "(default: %(default)s)")
    group.add_argument("--answer-prefix-turn", choices=PREFIX_TURNS, default="auto",
                       help="--api chat: the answer prefix as a pre-filled assistant turn the "
                            "server continues, or at the end of the user's message (upstream "
                            "RULER's API client); auto: the first where the server continues "
                            "it (default: %(default)s)")
    group.add_argument("--allow-prompt-mismatch", action="store_true",
                       help="keep rows whose prompt token count on the server "
                            "(usage.prompt_tokens) differs from the build's rendering, flagged "
                            "(default: the run stops at the first one)")
    group.add_argument("--concurrency", type=int, default=None,
                       help="requests in flight (default: the server's slots where it reports "
                            "them, as llama.cpp does; 32 for vLLM and SGLang, which batch; "
                            "else 1; never more than its slots)")
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
    if args.answer_prefix_turn != "auto" and args.api != "chat":
        raise RulerError(f"--answer-prefix-turn places the answer prefix among chat messages: "
                         f"it needs --api chat, not --api {args.api}")
    return OpenAIOptions(**shared_options(args), base_url=args.base_url,
                         concurrency=args.concurrency, timeout=args.timeout,
                         retries=args.retries, api=args.api,
                         answer_prefix_turn=args.answer_prefix_turn,
                         allow_prompt_mismatch=args.allow_prompt_mismatch)


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


@dataclass(frozen=True)
class ServerInfo:
    """What the server says about itself at start-up."""

    max_model_len: int | None = None
    context_source: str = ""  # which field max_model_len came from
    slots: int | None = None  # requests it runs at once (llama.cpp), where it says
    owned_by: str = ""  # /v1/models' owned_by: "vllm", "llamacpp", ...


class OpenAIBackend:
    name = "openai"

    def __init__(self, opts: BackendOptions):
        opts = options_as(opts, OpenAIOptions)
        if opts.api not in APIS:
            raise RulerError(f"--api {opts.api!r}: choose one of {', '.join(APIS)}")
        try:
            import httpx
        except ImportError as e:
            raise missing_requirement_error(INSTALL_HINT, e) from None
        self.httpx = httpx
        self.base = opts.base_url.rstrip("/")
        self.model = opts.model
        self.opts = opts
        self.wants_row_texts = opts.wants_row_texts
        api_key = opts.api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        register_secret(opts.api_key)  # a server may echo it: never shown or saved (the
        # environment's key is known to ruler.builder.scrub already)
        self.client = httpx.Client(
            base_url=self.base, headers={"Authorization": f"Bearer {api_key}"},
            timeout=httpx.Timeout(opts.timeout, connect=min(30.0, opts.timeout)),
            # the thread pool bounds the requests in flight (known once the server has said
            # how many slots it has); connections are kept for as many
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=max(
                DEFAULT_CONCURRENCY, opts.concurrency or 0)))
        self._rng = random.Random()  # backoff jitter only; never touches results
        self.wire: Wire | None = None  # settled by prepare(): how rows are sent
        self.renderer: Any = None
        self._stop = ""  # a row's prompt differed from the build's: the run stops with this
        try:
            self.server = self._server_info()
        except BaseException:
            self.client.close()
            raise
        self.max_model_len = context_limit(
            opts.max_model_len, self.server.max_model_len,
            f"the server at {self.base} does not report its context for {self.model!r} "
            f"(vLLM: max_model_len, llama.cpp: meta.n_ctx in /v1/models)",
            f"the server's context {self.server.max_model_len} for {self.model!r} "
            f"({self.server.context_source})")
        self.concurrency, self.concurrency_source = self._concurrency()

    # --- start-up: what the server reports, and the probe -----------------------------------

    def _server_info(self) -> ServerInfo:
        try:
            resp = self.client.get("/models", timeout=INFO_TIMEOUT)
            resp.raise_for_status()
            models = resp.json()
        except (self.httpx.HTTPError, ValueError) as e:
            raise RulerError(scrub(f"cannot reach the OpenAI-compatible server at "
                                   f"{self.base}: {type(e).__name__}: {e}")) from None
        data = [m for m in (models.get("data") or []) if isinstance(m, dict)]
        names = [m.get("id") for m in data]
        if names and self.model not in names:
            raise RulerError(scrub(f"the server at {self.base} does not serve {self.model!r}; "
                                   f"it serves: {', '.join(map(str, names))}"))
        served = next((m for m in data if m.get("id") == self.model), {})
        length, source = None, ""
        if _positive_int(served.get("max_model_len")):  # vLLM
            length, source = served["max_model_len"], "the server's max_model_len"
        elif _positive_int((served.get("meta") or {}).get("n_ctx")):  # llama.cpp: per slot
            length, source = served["meta"]["n_ctx"], "the server's meta.n_ctx"
        return ServerInfo(length, source, self._slots(), str(served.get("owned_by") or ""))

    def _slots(self) -> int | None:
        """llama.cpp's /props `total_slots` (at the server's root, beside /v1), else None."""
        try:
            resp = self.client.get(f"{self._root}/props", timeout=INFO_TIMEOUT)
            slots = resp.json().get("total_slots") if resp.status_code == 200 else None
        except (self.httpx.HTTPError, ValueError, AttributeError):
            return None
        return slots if _positive_int(slots) else None

    @property
    def _root(self) -> str:
        """The server's root, where llama.cpp and vLLM have their own routes beside /v1."""
        return self.base[:-3] if self.base.endswith("/v1") else self.base

    def _server_render(self, body: dict[str, Any]) -> tuple[str, Any] | None:
        """The server's own rendering of a chat request without generating, where it has a
        route for it: llama.cpp's /apply-template (the prompt text), vLLM's /tokenize (the
        token ids); else None."""
        if self.server.owned_by == "llamacpp":
            route, kind, request = "/apply-template", "text", {
                k: body[k] for k in ("messages", "chat_template_kwargs") if k in body}
        elif self.server.owned_by == "vllm":
            route, kind = "/tokenize", "ids"
            request = {"model": self.model, "messages": body["messages"],
                       "add_generation_prompt": not body.get("continue_final_message", False),
                       "continue_final_message": bool(body.get("continue_final_message")),
                       **({"chat_template_kwargs": body["chat_template_kwargs"]}
                          if "chat_template_kwargs" in body else {})}
        else:
            return None
        try:
            resp = self.client.post(f"{self._root}{route}", json=request, timeout=INFO_TIMEOUT)
            value = resp.json().get("prompt" if kind == "text" else "tokens") \
                if resp.status_code == 200 else None
        except (self.httpx.HTTPError, ValueError, AttributeError):
            return None
        ok = isinstance(value, str) if kind == "text" else isinstance(value, list)
        return (kind, value) if ok else None

    def _concurrency(self) -> tuple[int, str]:
        asked, slots = self.opts.concurrency, self.server.slots
        if slots and (asked is None or asked > slots):
            # More would only queue at the server, and the wait would count against --timeout.
            return slots, (f"the server's {slots} slot(s) (/props total_slots)"
                           + (f"; --concurrency {asked} lowered to it" if asked else ""))
        if asked is not None:
            return asked, "--concurrency"
        if self.server.owned_by in BATCHING_SERVERS:
            return DEFAULT_CONCURRENCY, f"the default for {self.server.owned_by}, which batches"
        # A server that says nothing of how many requests it runs at once (llama-cpp-python's
        # runs one): more would queue there, and the wait would count against --timeout.
        return 1, ("the server reports neither slots nor continuous batching; pass "
                   "--concurrency N if it runs N requests at once")

    def prepare(self, renderer: Any) -> dict[str, Any]:
        """Settle how rows are sent (the probe), refuse a server that does not see the
        build's prompt (unless allowed), and return the run's record of it."""
        self.renderer = renderer
        try:
            settled = negotiate(self.opts.api, self.opts.answer_prefix_turn, renderer,
                                self._send_probe, self._server_render)
        except Rejected as e:
            raise RulerError(scrub(f"the server at {self.base} refuses the first request "
                                   f"(--api {self.opts.api}: {urlsplit(self.base).path}"
                                   f"{ENDPOINTS[self.opts.api]}): {str(e)[:300]}. "
                                   f"{_sentence(INSTEAD[self.opts.api])}{self._v1_hint()}")
                              ) from None
        if settled.mismatch and not self.opts.allow_prompt_mismatch:
            raise RulerError(scrub(f"the server at {self.base} does not see the build's prompt "
                                   f"(--api {self.opts.api}): {settled.mismatch}. "
                                   + self._mismatch_advice()))
        self.wire = settled.wire
        return {"backend": self.name, "base_url": scrub(self.base),
                "endpoint": urlsplit(self.base).path + self.wire.endpoint,
                **self.wire.record(), "probe_mismatch": settled.mismatch or None,
                "probe_compared_whole": settled.exact or None,
                "probe_note": settled.note or None,
                "allow_prompt_mismatch": self.opts.allow_prompt_mismatch,
                "server": self.server.owned_by or None,
                "max_model_len": self.max_model_len,
                "max_model_len_source": "--max-model-len" if self.opts.max_model_len
                else self.server.context_source,
                "concurrency": self.concurrency, "concurrency_source": self.concurrency_source}

    def _mismatch_advice(self) -> str:
        tokenizer = getattr(getattr(self.renderer, "tok", None), "name", "the build's")
        if self.opts.api == "chat":
            how = (f"Start the server with the model's own chat template (tokenizer "
                   f"{tokenizer}'s; llama.cpp: --jinja --chat-template-file FILE), or use "
                   f"--api completions-ids")
        elif self.opts.api == "completions-text":
            how = (f"The server tokenizes text otherwise than tokenizer {tokenizer} (another "
                   f"tokenizer, or other special tokens): use --api completions-ids")
        else:
            how = (f"The server changes token-id prompts, or serves a model whose tokenizer "
                   f"is not {tokenizer}")
        return how + "; or pass --allow-prompt-mismatch to keep such rows, flagged"

    def _send_probe(self, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        full = {"model": self.model, **body, "max_tokens": 1, "temperature": 0.0,
                "stream": False}

        def accept(data: Any) -> tuple[Any, str]:
            if not isinstance(data, dict) or not data.get("choices"):
                return None, f"not a completion: {str(data)[:300]}"
            return data, ""

        data, error, status = self._post(endpoint, full, accept, PROBE_RETRYABLE.__contains__)
        if data is not None:
            return data
        if status is not None and status != 200 and status not in PROBE_RETRYABLE:
            raise Rejected(status, error.removeprefix(f"HTTP {status}: "))
        raise RulerError(scrub(f"the server at {self.base} did not answer a one-token request "
                               f"(--api {self.opts.api}) after {self.opts.retries} retries: "
                               f"{error[:300]}{self._v1_hint()}"))

    def _v1_hint(self) -> str:
        """llama.cpp and vLLM answer their own, non-OpenAI routes at the root (/completions):
        a --base-url without /v1 reaches them."""
        if urlsplit(self.base).path.rstrip("/").endswith("/v1"):
            return ""
        return (f" (OpenAI-compatible servers answer under /v1: did you mean --base-url "
                f"{self.base}/v1?)")

    # --- requests ----------------------------------------------------------------------------

    def _post(self, endpoint: str, body: dict[str, Any],
              accept: Callable[[Any], tuple[Any, str]],
              retry_status: Callable[[int], bool]) -> tuple[Any, str, int | None]:
        """POST with retries: (accepted value, "", 200), or (None, the last error, its HTTP
        status or None). `accept(json)` -> (value, error): an error retries the request."""
        httpx = self.httpx
        error, status = "", None
        for attempt in range(self.opts.retries + 1):
            retry_after = None
            try:
                resp = self.client.post(endpoint, json=body)
            except httpx.TransportError as e:  # connect / read timeouts, refused, reset
                error, status = f"{type(e).__name__}: {e}", None
            else:
                status = resp.status_code
                if status == 200:
                    try:
                        value, error = accept(resp.json())
                    except ValueError as e:
                        error = f"malformed response ({type(e).__name__}: {e}): " \
                                f"{resp.text[:300]}"
                    else:
                        if not error:
                            return value, "", 200
                else:
                    error = f"HTTP {status}: {resp.text[:500]}"
                    if not retry_status(status):
                        break  # the request itself is wrong: retrying will not help
                    retry_after = resp.headers.get("retry-after")
            if attempt < self.opts.retries:
                time.sleep(backoff_seconds(attempt, self.opts.retry_backoff, retry_after,
                                           self._rng))
        return None, error, status

    def _one(self, r: GenRequest) -> GenResult:
        wire = self.wire or Wire(self.opts.api)
        body = {"model": self.model, **wire.body(r, self.renderer), "max_tokens": r.max_tokens,
                "temperature": 0.0, "top_p": 1.0, "n": 1, "stream": False}
        if not r.skip_special_tokens:
            body["skip_special_tokens"] = False  # vLLM's extension; others ignore it
        start = time.perf_counter()

        def accept(data: Any) -> tuple[Any, str]:
            try:
                text, finish = wire.answer(data, body)
                tokens = int((data.get("usage") or {}).get("completion_tokens") or 0)
            except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
                return None, f"malformed response ({type(e).__name__}: {e}): {str(data)[:300]}"
            result = finished_result(r.key, text, tokens, finish, time.perf_counter() - start)
            if result.error:
                # A 200 without an answer (`text` null or absent, finish_reason "error"): a
                # server-side failure, retried like a 5xx.
                return None, f"HTTP 200 without a completion: {result.error}: {str(data)[:300]}"
            result.server_prompt_tokens = prompt_tokens(data)
            return result, ""

        result, error, _ = self._post(wire.endpoint, body, accept, retryable)
        if result is None:
            # the reason is saved in predictions.jsonl and printed: server text, scrubbed
            return GenResult(r.key, None, error=scrub(error), seconds=time.perf_counter() - start)
        return self._checked(r, result, wire)

    def _checked(self, r: GenRequest, result: GenResult, wire: Wire) -> GenResult:
        """The result, its prompt count compared with the row's rendering where the server
        reports one: a row that differs fails and stops the run, unless allowed (flagged)."""
        got = result.server_prompt_tokens
        if got is None or self.renderer is None:
            return result
        want = wire.expected_tokens(r, self.renderer)
        if got == want:
            return result
        result.prompt_mismatch = (f"the server counted {got} prompt tokens, the build's "
                                  f"rendering {want} (--api {wire.api})")
        if self.opts.allow_prompt_mismatch:
            return result
        self._stop = (f"row {r.key}: {result.prompt_mismatch}: the model saw another prompt "
                      f"than the build's. {self._mismatch_advice()}")
        return GenResult(r.key, None, error=f"prompt mismatch: {result.prompt_mismatch}",
                         seconds=result.seconds, server_prompt_tokens=got,
                         prompt_mismatch=result.prompt_mismatch)

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
                while not exhausted and not self._stop and len(running) < self.concurrency \
                        and (len(running) < (self.concurrency + 1) // 2 or ready()):
                    r = next(it, None)
                    if r is None:
                        exhausted = True
                    else:
                        running.add(pool.submit(self._one, r))
                if not running:
                    break
                # With a free slot and rows still rendering, come back for them soon.
                full = exhausted or len(running) >= self.concurrency
                done, running = wait(running, return_when=FIRST_COMPLETED,
                                     timeout=None if full else 0.05)
                for f in done:
                    yield f.result()
                if self._stop:
                    break
        finally:
            # Stopped early (an error, Ctrl-C): do not wait for requests nobody will read.
            pool.shutdown(wait=not running, cancel_futures=True)
        if self._stop:  # the failed row is written; the rest would run on a wrong prompt too
            raise RulerError(scrub(self._stop))

    def close(self) -> None:
        self.client.close()


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


SPEC = BackendSpec(
    name="openai", factory=OpenAIBackend, requirement="httpx", install_hint=INSTALL_HINT,
    summary="an OpenAI-compatible server at --base-url (token ids, text or chat: --api)",
    add_arguments=add_arguments, options=options)
