"""One download, bounded: every file `ruler sources fetch` gets comes through here.

A download is streamed to a writer (a file, or for an essay page a buffer the cap keeps small),
hashed on the way, and bounded three ways, whatever the server does:

- its size: at most `max_bytes` (the pinned size, or a stated ceiling where none is pinned). A
  Content-Length above it is refused before any byte is read, a body that runs past it the
  moment it does (an endless body fills no disk);
- its total time: `Limits.total` seconds from the request to the last byte. A watchdog shuts
  the connection when the time is up, so a server trickling a byte at a time (each read well
  inside the per-read timeout) is stopped too, headers included;
- each wait: `Limits.stall` seconds for a connection or a read.

`Stop` shuts every connection it tracks at once: a fetch running downloads in threads stops
them with it when it is interrupted (Ctrl-C, SIGTERM). Redirects are followed as urllib
follows them (at most 10; http and https only), an Authorization or Cookie header is not
carried to another host, and the URL the bytes finally came from is returned, so that a fetch
can record what it really read. A server that asks to be asked later (408, 429, 503: a CDN
throttling) is asked again a few times, within the download's time. Any base urllib opens
works: https://, http://, file://.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ruler.kernel.errors import RulerError

#: One download's total time, by default (30 minutes: the largest pinned file, 166 MB, at
#: 100 kB/s); `ruler sources fetch --timeout` sets it.
DEFAULT_TOTAL = 1800.0
#: The longest wait for a connection or for one read.
DEFAULT_STALL = 60.0
#: Bytes asked of the connection per read.
CHUNK = 1 << 16
#: Statuses of a server (or a CDN) that asks to be asked again later, as huggingface_hub's
#: downloads retry them; each download asks again at most RETRIES times, within its time.
RETRY_STATUS = (408, 429, 503)
RETRIES = 3
#: The longest wait a Retry-After gets.
RETRY_WAIT_CEILING = 10.0


@dataclass(frozen=True)
class Limits:
    """How long one download may take: `total` seconds from the request to its last byte, and
    `stall` seconds for any one connection or read."""

    total: float = DEFAULT_TOTAL
    stall: float = DEFAULT_STALL

    def __post_init__(self) -> None:
        if not (self.total > 0 and self.stall > 0):
            raise RulerError(f"a download's time limits must be positive (total {self.total}, "
                             f"per read {self.stall})")


@dataclass(frozen=True)
class Downloaded:
    """What one download read: the URL asked, the URL the bytes came from (after redirects),
    their size and sha256."""

    url: str
    final_url: str
    size: int
    sha256: str


class NotFound(RulerError):
    """The server, or a file:// folder, has no file at that URL."""


class Stop:
    """Connections to shut together: when a download's time is up, or when the fetch running
    it is stopped. Shutting a socket (from any thread) ends a read blocked on it at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.reason: str | None = None

    @property
    def stopped(self) -> bool:
        return self.reason is not None

    def stop(self, reason: str) -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)

    def track(self, sock: socket.socket) -> None:
        """Shut `sock` on the stop (at once, if it came after it). The socket is held from
        its connection on: urllib lets go of the connection's own once the headers are read."""
        with self._lock:
            self._sockets = [s for s in self._sockets if s.fileno() >= 0]  # closed ones go
            self._sockets.append(sock)
            stopped = self.reason is not None
        if stopped:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    """End the socket's reads without closing it under its reader's feet: a shutdown acts on
    the connection, so a duplicate descriptor does (TLS sockets included, whose own shutdown
    would drop their state)."""
    with contextlib.suppress(OSError):  # closed meanwhile
        fd = sock.fileno()
        if fd < 0:  # closed meanwhile
            return
        with socket.socket(fileno=os.dup(fd)) as dup:
            dup.shutdown(socket.SHUT_RDWR)


def _tracked(base: type[http.client.HTTPConnection], stops: tuple[Stop, ...]):
    """`base` whose sockets `stops` can shut once connected."""

    class Connection(base):  # type: ignore[valid-type, misc]
        def connect(self) -> None:
            super().connect()
            for stop in stops:
                stop.track(self.sock)

    return Connection


class _HTTP(urllib.request.HTTPHandler):
    def __init__(self, stops: tuple[Stop, ...]) -> None:
        super().__init__()
        self._connection = _tracked(http.client.HTTPConnection, stops)

    def http_open(self, req):
        return self.do_open(self._connection, req)


class _HTTPS(urllib.request.HTTPSHandler):
    def __init__(self, stops: tuple[Stop, ...]) -> None:
        super().__init__()
        self._connection = _tracked(http.client.HTTPSConnection, stops)

    def https_open(self, req):
        # urllib's own TLS context (private, so typeshed does not declare it)
        return self.do_open(self._connection, req,
                            context=self._context)  # type: ignore[attr-defined]


class _Redirects(urllib.request.HTTPRedirectHandler):
    """urllib's redirects, without credentials for another host."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and (urllib.parse.urlsplit(newurl).netloc
                                != urllib.parse.urlsplit(req.full_url).netloc):
            for name in ("Authorization", "Cookie"):
                new.remove_header(name)
        return new


def download(url: str, write: Callable[[bytes], object], *, max_bytes: int, limits: Limits,
             headers: dict[str, str] | None = None, stop: Stop | None = None,
             progress: Callable[[int], object] | None = None) -> Downloaded:
    """Stream `url` into `write`, bounded (module docstring); `progress(n)` after each chunk.

    A failure of the network or the server (unreachable, an HTTP error, a dropped connection,
    too many bytes, no end in time, `stop` stopped) is a RulerError naming the URL; an error
    of `write` (a full disk) is raised as it is.
    """
    timer = Stop()
    stops = (timer,) if stop is None else (timer, stop)
    opener = urllib.request.build_opener(_HTTP(stops), _HTTPS(stops), _Redirects())
    watchdog = threading.Timer(limits.total, timer.stop, args=(f"{limits.total:g} s",))
    watchdog.daemon = True
    got, digest = 0, hashlib.sha256()
    watchdog.start()
    started = time.monotonic()
    try:
        for attempt in range(RETRIES + 1):
            try:
                response = opener.open(urllib.request.Request(url, headers=headers or {}),
                                       timeout=min(limits.stall, limits.total))
                break
            except urllib.error.HTTPError as e:
                wait = _retry_after(e, attempt, limits.total - (time.monotonic() - started))
                e.close()
                if wait is None:
                    raise _failure(url, e, got, stops, limits) from None
                # said, so that a wait is never silent (the URL without its query: a signed
                # storage URL's query is a credential for a while)
                print(f"ruler: {e.geturl().split('?', 1)[0]}: HTTP {e.code} {e.reason}: asking "
                      f"again in {wait:g} s ({attempt + 1} of {RETRIES})", file=sys.stderr,
                      flush=True)
                if not _pause(wait, stops):
                    raise _failure(url, e, got, stops, limits) from None
            except (OSError, http.client.HTTPException, ValueError) as e:
                raise _failure(url, e, got, stops, limits) from None
        with response:
            declared = _content_length(response)
            if declared is not None and declared > max_bytes:
                raise RulerError(f"{url}: the server announces {declared:,} bytes, more than "
                                 f"the {max_bytes:,} this file may have: not downloaded")
            read = getattr(response, "read1", response.read)
            while True:
                try:
                    chunk = read(CHUNK)
                except (OSError, http.client.HTTPException, ValueError) as e:
                    raise _failure(url, e, got, stops, limits) from None
                if not chunk:
                    break
                got += len(chunk)
                if got > max_bytes:
                    raise RulerError(f"{url}: the server sent more than the {max_bytes:,} "
                                     f"bytes this file may have: stopped there")
                digest.update(chunk)
                write(chunk)
                if progress is not None:
                    progress(len(chunk))
            final_url = response.geturl()
        ended = next((s.reason for s in stops if s.stopped), None)
        if ended is not None:  # a shut connection reads as the body's end
            raise _failure(url, EOFError(), got, stops, limits)
        if declared is not None and got != declared:
            raise RulerError(f"{url}: the connection ended after {got:,} of the {declared:,} "
                             f"bytes announced")
    finally:
        watchdog.cancel()
    return Downloaded(url, final_url, got, digest.hexdigest())


def _retry_after(error: urllib.error.HTTPError, attempt: int, left: float) -> float | None:
    """How long to wait before asking again, for a server that said "not now" (408, 429,
    503) and time left; None: no retry (another status, the retries spent, no time)."""
    if error.code not in RETRY_STATUS or attempt >= RETRIES:
        return None
    try:
        wait = float(error.headers.get("Retry-After", ""))
    except (TypeError, ValueError):  # absent, or an HTTP date: a short wait
        wait = 1.0
    wait = min(max(wait, 0.0), RETRY_WAIT_CEILING)
    return wait if wait < left else None


def _pause(seconds: float, stops: tuple[Stop, ...]) -> bool:
    """Sleep `seconds`, or until a stop; whether no stop came."""
    deadline = time.monotonic() + seconds
    while not any(s.stopped for s in stops):
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        time.sleep(min(left, 0.05))
    return False


def _content_length(response) -> int | None:
    try:
        value = int(response.headers.get("Content-Length", ""))
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


def _failure(url: str, error: BaseException, got: int, stops: tuple[Stop, ...],
             limits: Limits) -> RulerError:
    timer = stops[0]
    if timer.stopped:
        return RulerError(f"{url}: no complete answer within {timer.reason} ({got:,} bytes "
                          f"received; `ruler sources fetch --timeout SECONDS` allows longer)")
    if len(stops) > 1 and stops[1].stopped:
        return RulerError(f"{url}: stopped ({stops[1].reason}) after {got:,} bytes")
    if isinstance(error, urllib.error.HTTPError):
        kind = NotFound if error.code in (404, 410) else RulerError
        return kind(f"{url}: HTTP {error.code} {error.reason}")
    if isinstance(error, urllib.error.URLError) and isinstance(error.reason, BaseException):
        error = error.reason
    if isinstance(error, FileNotFoundError):  # file://
        return NotFound(f"{url}: no such file")
    if isinstance(error, TimeoutError):
        return RulerError(f"{url}: nothing received for {limits.stall:g} s ({got:,} bytes "
                          f"received): timed out")
    return RulerError(f"{url}: {error}" if str(error) else f"{url}: {error!r}")


def size_text(n: int) -> str:
    """`n` bytes for a person: 4.4 MB, 812 kB, 96 bytes."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}" if n < 100 * size else f"{n / size:.0f} {unit}"
    return f"{n} bytes"


def progress_bar(desc: str, total: int | None, unit: str = "B"):
    """A tqdm bar for a fetch on a terminal (none when stderr is no terminal: each download
    has said what it waits for), shown once the fetch has taken 2 s."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, unit_scale=unit == "B", delay=2.0,
                dynamic_ncols=True, disable=None, leave=False)


def hub_file(repo: str, path: str, revision: str, dest: Path, *, max_bytes: int,
             limits: Limits, repo_type: str | None = None, endpoint: str | None = None,
             progress: Callable[[int], object] | None = None):
    """One file of a Hugging Face repo at `revision`, into `dest`, bounded as `download` is:
    the Hub's metadata first (huggingface_hub: its commit, ETag and size, one request without
    retries; its errors are raised as they are), then the bytes, refused at once when the
    Hub announces more than `max_bytes`. Returns the metadata and what was downloaded."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.utils import build_hf_headers

    url = hf_hub_url(repo, path, repo_type=repo_type, revision=revision, endpoint=endpoint)
    meta = get_hf_file_metadata(url, timeout=limits.stall, endpoint=endpoint)
    if meta.size is not None and meta.size > max_bytes:
        raise RulerError(f"{url}: the Hub says {meta.size:,} bytes, more than the "
                         f"{max_bytes:,} this file may have: not downloaded")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as out:
        got = download(url, out.write, max_bytes=max_bytes, limits=limits,
                       headers=build_hf_headers(), progress=progress)
    return meta, got
