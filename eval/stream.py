"""The rows of an evaluation, rendered a bounded window ahead of the engine.

The paper's setup is 39,000 rows and ~1.68 G prompt tokens per tokenizer: rendered all at once
as Python lists it would take ~58 GB and minutes before the first request. Here rows flow
file by file (shortest lengths first): the split files are read in batches of the needed
columns only, chunks of rows (about `CHUNK_TOKENS` tokens each) are rendered by a pool of
processes, and at most `ahead_tokens` of rendered-but-unconsumed prompt tokens exist at any
time. Token ids are 4-byte arrays. Rows are yielded in file order, so a run's schedule is
reproducible; rendering overlaps generation, since the pool works while the consumer waits
on the engine.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Container, Iterator, Sequence

from ruler.eval.records.dataset import Dataset, SplitFile
from ruler.eval.records.predictions import Key, format_key
from ruler.eval.render import Renderer, token_array
from ruler.kernel.errors import RulerError

#: The columns rendering needs (the long `outputs`, gold positions etc. are never read here).
RENDER_COLUMNS = ("index", "input", "answer_prefix", "tokens_to_generate", "length")
#: Prompt tokens per pool task: 64 rows at 4K, 2 at 128K (a task is ~0.5 s of tokenization).
CHUNK_TOKENS = 1 << 18
#: Rendered prompt tokens held ahead of the consumer, at least (16 MB of ids).
MIN_AHEAD_TOKENS = 1 << 22


def default_render_workers() -> int:
    """Half the cores, at most 4. Four render ~1.5 M tokens/s (HF tokenizers, ~0.4 M per
    core), more than the prefill of an 8-GPU node on an 8B model, and each adds ~170 MB
    (measured PSS: a forked worker's tokenizer work unshares its pages): more is a choice
    (`--render-workers`), not a default."""
    return max(1, min(4, (os.cpu_count() or 2) // 2))


@dataclass
class RenderedRow:
    key: Key
    prompt_ids: Sequence[int]  # a 4-byte array
    tokens_to_generate: int
    length: int  # the dataset's count: prompt tokens (+ tokens_to_generate: `length_rule`)
    data_sha256: str
    length_rule: str  # its file's, as the manifest records it (catalog.length_rules)
    # The row's texts, kept only for a backend that sends text (`keep_texts`)
    input_text: str | None = None
    answer_prefix: str | None = None


@dataclass
class _Chunk:
    file: SplitFile
    meta: list[tuple[int, int, int]]  # (index, tokens_to_generate, length) per row
    work: Future | list[tuple[str, str]]  # pool task, or the texts when rendering here
    texts: list[tuple[str, str]] | None = None  # (input, answer_prefix) per row, if kept

    @property
    def tokens(self) -> int:
        return self.file.max_seq_length * len(self.meta)


class PromptStream:
    """Iterate the pending rows of `files` as `RenderedRow`s, rendered ahead in a pool.

    `workers` = 0 renders in this process when a row is asked for. `start()` begins rendering
    before the first row is consumed (e.g. while the model loads); `close()` stops the pool.
    `keep_texts`: each row also carries its input and answer prefix (for a backend that sends
    text; they take about as much memory as the ids, within the same window).
    """

    def __init__(self, ds: Dataset, files: Sequence[SplitFile], renderer: Renderer,
                 done: Container[Key] = (), limit: int | None = None,
                 workers: int | None = None, start_method: str | None = None,
                 ahead_tokens: int | None = None, keep_texts: bool = False):
        self.ds, self.files, self.renderer = ds, list(files), renderer
        self.keep_texts = keep_texts
        self.done, self.limit = done, limit
        self.workers = default_render_workers() if workers is None else max(0, workers)
        self.start_method = start_method
        self.ahead_tokens = ahead_tokens or max(MIN_AHEAD_TOKENS,
                                                2 * self.workers * CHUNK_TOKENS)
        self._pool: ProcessPoolExecutor | None = None
        self._started = False
        self._chunks: Iterator[_Chunk] | None = None
        self._pending: deque[_Chunk] = deque()
        self._rows: deque[RenderedRow] = deque()  # rendered, not yet taken
        self._ahead = 0

    def pending_rows(self) -> int:
        """Rows this stream will yield (rows of the selection not yet done)."""
        return count_pending(self.files, self.done, self.limit)

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        if self.workers > 0:
            from ruler.builder.pipeline.config import default_start_method

            method = self.start_method or default_start_method()
            context = multiprocessing.get_context(method)
            # fork and spawn make the workers children of this process; a fork server is
            # their parent otherwise (and exits with this process in turn).
            driver = os.getpid() if method in ("fork", "spawn") else None
            self._pool = ProcessPoolExecutor(self.workers, mp_context=context,
                                             initializer=_init_worker,
                                             initargs=(self.renderer, driver))
        self._chunks = self._read_chunks()
        self._fill()

    def __iter__(self) -> "PromptStream":
        self.start()
        return self

    def __next__(self) -> RenderedRow:
        self.start()
        while not self._rows:
            if not self._pending:
                raise StopIteration
            chunk = self._pending.popleft()
            self._ahead -= chunk.tokens
            ids = self._result(chunk)
            self._fill()  # the pool keeps working while the consumer takes these rows
            f = chunk.file
            texts: Sequence[tuple[str | None, str | None]] = \
                chunk.texts or [(None, None)] * len(ids)
            self._rows.extend(
                RenderedRow((f.config, f.task, f.max_seq_length, index), prompt, ttg, length,
                            f.content_sha256, f.length_rule, *text)
                for (index, ttg, length), prompt, text in zip(chunk.meta, ids, texts))
        return self._rows.popleft()

    def ready(self) -> bool:
        """Whether the next row can be had without waiting for the pool (a backend with work
        in flight lets the engine step rather than wait)."""
        if self._rows or not self._pending:
            return True
        work = self._pending[0].work
        return not isinstance(work, Future) or work.done()

    def close(self) -> None:
        for chunk in self._pending:
            if isinstance(chunk.work, Future):
                chunk.work.cancel()
        self._pending.clear()
        self._rows.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> "PromptStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- internals ---------------------------------------------------------------------------

    def _read_chunks(self) -> Iterator[_Chunk]:
        for f in self.files:
            per_chunk = max(1, CHUNK_TOKENS // f.max_seq_length)
            wanted = min(f.rows, self.limit or f.rows)
            seen = 0
            for batch in self.ds.iter_rows(f, RENDER_COLUMNS, per_chunk):
                batch = batch[: wanted - seen]
                seen += len(batch)
                todo = [r for r in batch
                        if (f.config, f.task, f.max_seq_length, int(r["index"])) not in self.done]
                if todo:
                    meta = [(int(r["index"]), int(r["tokens_to_generate"]), int(r["length"]))
                            for r in todo]
                    texts = [(r["input"], r["answer_prefix"]) for r in todo]
                    work = self._pool.submit(_render_chunk, texts) if self._pool else texts
                    yield _Chunk(f, meta, work, texts if self.keep_texts else None)
                if seen >= wanted:
                    break

    def _fill(self) -> None:
        while self._chunks is not None and (not self._pending
                                            or self._ahead < self.ahead_tokens):
            chunk = next(self._chunks, None)
            if chunk is None:
                self._chunks = None
                return
            self._pending.append(chunk)
            self._ahead += chunk.tokens

    def _result(self, chunk: _Chunk) -> list:
        try:
            if isinstance(chunk.work, Future):
                return [token_array_from(b) for b in chunk.work.result()]
            return [self.renderer.ids(i, p) for i, p in chunk.work]
        except RulerError:
            raise
        except Exception as e:  # a template that fails on these rows, a dead render process
            first = (chunk.file.config, chunk.file.task, chunk.file.max_seq_length,
                     chunk.meta[0][0])
            raise RulerError(f"rendering the prompts of {format_key(first)} (and the rows after "
                             f"it in that batch) failed: {type(e).__name__}: {e}") from None


def count_pending(files: Sequence[SplitFile], done: Container[Key], limit: int | None) -> int:
    """Rows of `files` (the first `limit` of each) whose key is not in `done`."""
    return sum((f.config, f.task, f.max_seq_length, i) not in done
               for f in files for i in range(min(f.rows, limit or f.rows)))


def token_array_from(data: bytes):
    ids = token_array()
    ids.frombytes(data)
    return ids


# --- inside a render process ------------------------------------------------------------------

_renderer: Renderer | None = None


#: How often a render process checks that its driver is still there (seconds).
PARENT_POLL_SECONDS = 0.25


def _init_worker(renderer: Renderer, driver_pid: int | None) -> None:
    global _renderer
    _renderer = renderer
    # Ctrl-C goes to the whole process group: the parent stops the pool, the workers stay quiet.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent(driver_pid)


def _exit_with_parent(driver_pid: int | None) -> None:
    """End this process when its parent is gone. A driver killed by SIGTERM or kill -9 never
    shuts its pool down, and a worker waiting on the pool's queue would wait forever under
    PID 1 (~300 MB each: the tokenizer and a window of prompts): the queue's pipe never
    reaches EOF, since the workers hold copies of it too. So each worker watches its parent
    pid, which changes when the parent dies (the orphan is re-parented). Polling works the
    same under fork and spawn, on every POSIX system, and whichever thread started the pool
    (unlike Linux's PR_SET_PDEATHSIG, which fires when the forking *thread* ends)."""
    parent = os.getppid()
    if driver_pid is not None and parent != driver_pid:
        os._exit(0)  # the driver died before this worker got here

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="ruler-render-parent-watch", daemon=True).start()


def _render_chunk(texts: list[tuple[str, str]]) -> list[bytes]:
    renderer = _renderer
    assert renderer is not None, "set by the render process's initializer"
    return [renderer.ids(i, p).tobytes() for i, p in texts]
