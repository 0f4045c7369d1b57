"""`--backend openai`: any OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp's
`llama-server`, llama-cpp-python's `llama_cpp.server`, Ollama, hosted APIs), over httpx.
docs/evaluating.md ("Servers") says what a user sees; here, why.

How a row is sent is `--api` (`openai_api`: the three forms, and the probe). A row whose
`usage.prompt_tokens` differs from its rendered count stops the run (`--allow-prompt-mismatch`:
kept, flagged): the usual cause (a server chat template other than the model's) is systematic,
so one row is proof enough and every further row would be compute spent on another prompt. The
`model` a reply names is recorded, not refused: hosted APIs answer as a dated snapshot of an
alias, and proxies as the model they routed to, both legitimately.

A timeout, a refused connection, 429 / 5xx, or a 200 that carries no completion (garbage JSON,
no choices, `text` null or absent, finish_reason "error" or "abort", more text than
`max_tokens` tokens can make) is the server's failure, retried with backoff and jitter
(honouring `Retry-After`); any other 4xx is the request's own fault and is not retried. The
probe is not retried on 500 or 4xx: a server that refuses the request form fails the run at
once. Server text reaches messages and files only scrubbed of the API key
(`ruler.kernel.scrub`).
"""

from __future__ import annotations

import functools
import os
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import urlsplit

from ruler.eval.backends.base import (
    BackendOptions,
    GenRequest,
    GenResult,
    context_limit,
    feed_ready,
    finished_result,
    missing_requirement_error,
    options_as,
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
)
from ruler.eval.backends.openai_http import (
    Reply,
    completion_max_bytes,
    completion_max_chars,
    fetch,
)
from ruler.eval.backends.openai_replies import (
    Damaged,
    answered_model,
    field_text,
    first_choice,
    output_count,
    token_ids,
    usage_count,
)
from ruler.eval.backends.openai_startup import STARTUP_TIMEOUT, Startup
from ruler.eval.backends.registry import BackendSpec
from ruler.kernel.errors import RulerError
from ruler.kernel.flags import SWITCH, option
from ruler.kernel.scrub import register_secret, scrub

MAX_BACKOFF = 60.0
#: Requests in flight on a server that batches continuously (vLLM, SGLang: /v1/models'
#: owned_by) and reports no slots: enough to keep it busy without queueing long.
DEFAULT_CONCURRENCY = 32
#: Requests in flight at most, whatever a server reports (a /props total_slots of 100000 is
#: not a reason for 100000 threads and connections) or --concurrency asks.
MAX_CONCURRENCY = 256
BATCHING_SERVERS = frozenset({"vllm", "sglang"})
INSTALL_HINT = "--backend openai needs httpx, which is not installed: pip install httpx"


@dataclass(frozen=True)
class OpenAIOptions(BackendOptions):
    base_url: str = option("--base-url", default="http://127.0.0.1:8000/v1",
                           help="server URL (the API key, if it needs one: $OPENAI_API_KEY)")
    api_key: str | None = None  # default: $OPENAI_API_KEY (never a flag: argv is public)
    api: str = option(  # one of openai_api.APIS
        "--api", default=DEFAULT_API, choices=APIS,
        help="how rows are sent: completions-ids = token ids to /completions, exactly the "
             "build's (vLLM, SGLang, TGI, llama.cpp's llama-server); completions-text = the "
             "rendered prompt as text (llama-cpp-python's server, Ollama); chat = messages to "
             "/chat/completions, rendered by the server's chat template (default: %(default)s)")
    answer_prefix_turn: str = option(  # chat API: one of openai_api.PREFIX_TURNS
        "--answer-prefix-turn", default="auto", choices=PREFIX_TURNS,
        help="--api chat: the answer prefix as a pre-filled assistant turn the server "
             "continues, or at the end of the user's message (upstream RULER's API client); "
             "auto: the first where the server continues it (default: %(default)s)")
    allow_prompt_mismatch: bool = option(  # keep rows whose server prompt differs (flagged)
        "--allow-prompt-mismatch", kind=SWITCH, default=False,
        help="keep rows whose prompt token count on the server (usage.prompt_tokens) differs "
             "from the build's rendering, flagged (default: the run stops at the first one)")
    concurrency: int | None = option(  # None: the server's slots where it says, else 32
        "--concurrency", default=None, type=int, minimum=1, maximum=MAX_CONCURRENCY,
        help=f"requests in flight (default: the server's slots where it reports them, as "
             f"llama.cpp does; 32 for vLLM and SGLang, which batch; else 1; never more than its "
             f"slots, nor than {MAX_CONCURRENCY})")
    timeout: float = option("--timeout", default=600.0, type=float, above=0,
                            help="seconds per request before it is retried")
    retries: int = option(
        "--retries", default=5, type=int, minimum=0,
        help="retries of a request that times out or gets 429/5xx, with exponential backoff "
             "(then recorded as failed; re-running retries it)")
    retry_backoff: float = 1.0  # seconds before the first retry; doubles each time
    startup_timeout: float = option(  # per start-up phase (openai_startup)
        "--startup-timeout", default=STARTUP_TIMEOUT, type=float, above=0, metavar="SECONDS",
        help="seconds the server has to answer at start-up, for its model list and slots, then "
             "again for the one-token probe; a server that is still loading its model (HTTP "
             "503, as llama-server answers meanwhile) or does not answer is waited for that "
             "long, saying so (default: %(default)g; raise it for a model that loads slowly)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.answer_prefix_turn != "auto" and self.api != "chat":
            raise RulerError(f"--answer-prefix-turn places the answer prefix among chat "
                             f"messages: it needs --api chat, not --api {self.api}")

    @property
    def wants_row_texts(self) -> bool:
        return self.api != "completions-ids"


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


@functools.cache
def tls_context(httpx: Any) -> Any:
    """httpx's default verifying context (its CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR),
    made once per process: a client makes its own otherwise, loading the bundle each time
    (~25 ms), and a context is shared safely between clients and threads."""
    return httpx.create_ssl_context()


class OpenAIBackend:
    name = "openai"

    def __init__(self, opts: BackendOptions):
        opts = options_as(opts, OpenAIOptions)  # checked by its own __post_init__
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
        # environment's key is known to ruler.kernel.scrub already)
        self.client = httpx.Client(
            base_url=self.base, headers={"Authorization": f"Bearer {api_key}"},
            verify=tls_context(httpx),
            timeout=httpx.Timeout(opts.timeout, connect=min(30.0, opts.timeout)),
            # the thread pool bounds the requests in flight (known once the server has said
            # how many slots it has); connections are kept for as many
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=max(
                DEFAULT_CONCURRENCY, opts.concurrency or 0)))
        self._rng = random.Random()  # backoff jitter only; never touches results
        self.wire: Wire | None = None  # settled by prepare(): how rows are sent
        self.renderer: Any = None
        self._stop = ""  # a row's prompt differed from the build's: the run stops with this
        self._probe_model: str | None = None  # the model the probe's reply named
        self.startup = Startup(httpx, self.client, self.base, opts.startup_timeout)
        try:
            self.server = self.startup.server_info(self.model)
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

    def _server_render(self, body: dict[str, Any]) -> tuple[str, Any] | None:
        """The server's own rendering of a chat request without generating, where it has a
        route for it: llama.cpp's /apply-template (the prompt text), vLLM's /tokenize (the
        token ids); else None."""
        request: dict[str, Any]
        if self.server.owned_by == "llamacpp":
            route, read, request = "/apply-template", _prompt_text, {
                k: body[k] for k in ("messages", "chat_template_kwargs") if k in body}
        elif self.server.owned_by == "vllm":
            route, read = "/tokenize", _prompt_ids
            request = {"model": self.model, "messages": body["messages"],
                       "add_generation_prompt": not body.get("continue_final_message", False),
                       "continue_final_message": bool(body.get("continue_final_message")),
                       **({"chat_template_kwargs": body["chat_template_kwargs"]}
                          if "chat_template_kwargs" in body else {})}
        else:
            return None
        reply = self.startup.request("POST", f"{self.startup.root}{route}",
                                     f"the probe's rendering (POST {route})", request)
        return self.startup.document(reply, read)

    def _concurrency(self) -> tuple[int, str]:
        asked, slots = self.opts.concurrency, self.server.slots
        if slots and slots > MAX_CONCURRENCY and (asked is None or asked > MAX_CONCURRENCY):
            return MAX_CONCURRENCY, (f"the server's {slots} slot(s) (/props total_slots), "
                                     f"capped at {MAX_CONCURRENCY} requests in flight")
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
        self.startup.begin()
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
        return _scrubbed({
            "backend": self.name, "base_url": self.base,
            "endpoint": urlsplit(self.base).path + self.wire.endpoint,
            **self.wire.record(), "probe_mismatch": settled.mismatch or None,
            "probe_compared_whole": settled.exact or None,
            "probe_note": settled.note or None,
            "allow_prompt_mismatch": self.opts.allow_prompt_mismatch,
            "server": self.server.owned_by or None,
            "max_model_len": self.max_model_len,
            "max_model_len_source": "--max-model-len" if self.opts.max_model_len
            else self.server.context_source,
            "concurrency": self.concurrency, "concurrency_source": self.concurrency_source,
            # the model asked for, and the one the probe's reply named (hosted APIs: a dated
            # snapshot of an alias; see the module's docstring)
            "model": self.model, "server_model": self._probe_model})

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
        """The probe's reply, a completion; waited for while the server is starting
        (`openai_startup`), retried `retries` times when it is no completion, `Rejected`
        for any other status."""
        full = {"model": self.model, **body, "max_tokens": 1, "temperature": 0.0,
                "stream": False}
        error = ""
        for attempt in range(self.opts.retries + 1):
            if attempt:
                time.sleep(backoff_seconds(attempt - 1, self.opts.retry_backoff, None,
                                           self._rng))
            reply = self.startup.request("POST", endpoint, "a one-token request (the "
                                         "start-up probe)", full, completion_max_bytes(1))
            if reply.status != 200:
                raise Rejected(reply.status, reply.excerpt(500))
            try:
                if reply.over:
                    raise Damaged(_too_big(reply, 1))
                data = reply.json()
                first_choice(data)
            except Damaged as e:
                error = f"not a completion: {e}: {reply.excerpt(300)}"
                continue
            self._probe_model = answered_model(data)
            return data
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

    def _post(self, endpoint: str, body: dict[str, Any], max_bytes: int,
              accept: Callable[[Reply], tuple[Any, str]]) -> tuple[Any, str]:
        """POST with retries: (accepted value, ""), or (None, the last error, scrubbed).
        `accept(the reply of a 200)` -> (value, error): an error retries the request."""
        httpx = self.httpx
        error = ""
        for attempt in range(self.opts.retries + 1):
            retry_after = None
            try:
                reply = fetch(httpx, self.client, "POST", endpoint, timeout=self.opts.timeout,
                              max_bytes=max_bytes, body=body)
            except httpx.TransportError as e:  # connect / read timeouts, refused, reset
                error = scrub(f"{type(e).__name__}: {e}")
            else:
                if reply.status == 200:
                    value, error = accept(reply)
                    if not error:
                        return value, ""
                else:
                    error = f"HTTP {reply.status}: {reply.excerpt(500)}"
                    if not retryable(reply.status):
                        break  # the request itself is wrong: retrying will not help
                    retry_after = reply.headers.get("retry-after")
            if attempt < self.opts.retries:
                time.sleep(backoff_seconds(attempt, self.opts.retry_backoff, retry_after,
                                           self._rng))
        return None, error

    def _one(self, r: GenRequest) -> GenResult:
        wire = self.wire or Wire(self.opts.api)
        body = {"model": self.model, **wire.body(r, self.renderer), "max_tokens": r.max_tokens,
                "temperature": 0.0, "top_p": 1.0, "n": 1, "stream": False}
        if not r.skip_special_tokens:
            body["skip_special_tokens"] = False  # vLLM's extension; others ignore it
        start = time.perf_counter()

        def accept(reply: Reply) -> tuple[Any, str]:
            if reply.over:
                return None, _too_big(reply, r.max_tokens)
            try:
                data = reply.json()
                text, finish = wire.answer(data, body)
            except Damaged as e:
                return None, f"malformed response ({e}): {reply.excerpt(300)}"
            if isinstance(text, str) and len(text) > completion_max_chars(r.max_tokens):
                return None, (f"the server's completion has {len(text)} characters, more than "
                              f"{r.max_tokens} token(s) (max_tokens) can make (at most "
                              f"{completion_max_chars(r.max_tokens)}): refused")
            tokens, tokens_note = output_count(data)
            result = finished_result(r.key, text, tokens, finish, time.perf_counter() - start)
            if result.error:
                # A 200 without an answer (`text` null or absent, finish_reason "error"): a
                # server-side failure, retried like a 5xx.
                return None, (f"HTTP 200 without a completion: {result.error}: "
                              f"{reply.excerpt(300)}")
            return self._reported(result, data, tokens_note), ""

        result, error = self._post(wire.endpoint, body, completion_max_bytes(r.max_tokens),
                                   accept)
        if result is None:
            # the reason is saved in predictions.jsonl and printed: server text, scrubbed
            return GenResult(r.key, None, error=error, seconds=time.perf_counter() - start)
        return self._checked(r, result, wire)

    def _reported(self, result: GenResult, data: Any, tokens_note: str) -> GenResult:
        """The result with what the server reported beside the answer: its prompt count
        (or why there is none to check), the model it answered as where that is not the one
        asked for, and notes on counts given in another form than a JSON integer."""
        count = usage_count(data, "prompt_tokens")
        result.server_prompt_tokens = count.value
        notes = [tokens_note]
        if count.value is None:
            result.prompt_unchecked = count.note
        else:
            notes.append(count.note)
        model = answered_model(data)
        if model is not None and model != self.model:
            result.server_model = model
        result.server_notes = "; ".join(n for n in notes if n)
        return result

    def _checked(self, r: GenRequest, result: GenResult, wire: Wire) -> GenResult:
        """The result, its prompt count compared with the row's rendering where the server
        reports one: a row that differs fails and stops the run, unless allowed (flagged)."""
        got = result.server_prompt_tokens
        if got is None or self.renderer is None:
            return result  # unchecked, and the result says why (`prompt_unchecked`)
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


def _too_big(reply: Reply, max_tokens: int) -> str:
    announced = f" ({reply.declared} by its Content-Length)" if reply.declared else ""
    return (f"the server's reply is more than {reply.limit} bytes{announced} for a "
            f"completion of at most {max_tokens} token(s) (max_tokens): refused, read no "
            f"further")


def _prompt_text(doc: Any) -> tuple[str, Any] | None:
    """llama.cpp's /apply-template answer: ("text", the prompt) where it is a string."""
    text = field_text(doc, "prompt")
    return None if text is None else ("text", text)


def _prompt_ids(doc: Any) -> tuple[str, Any] | None:
    """vLLM's /tokenize answer: ("ids", the token ids) where they are a list of integers."""
    ids = token_ids(doc)
    return None if ids is None else ("ids", ids)


def _scrubbed(record: dict[str, Any]) -> dict[str, Any]:
    """The record with every string scrubbed of credentials: it holds server text (error
    excerpts, the server's rendering, the model it named), and is written to run.json."""
    return {k: scrub(v) if isinstance(v, str) else v for k, v in record.items()}


SPEC = BackendSpec(
    name="openai", factory=OpenAIBackend, requirement="httpx", install_hint=INSTALL_HINT,
    summary="an OpenAI-compatible server at --base-url (token ids, text or chat: --api)",
    options_type=OpenAIOptions, serves_model_by_name=True)
