"""`ruler sources fetch essays`: RULER's essay corpus made as upstream's scraper makes it.

Upstream publishes no corpus file, only `download_paulgraham_essay.py` and its URL list. This
follows that script step by step: a .txt URL's bytes decoded as UTF-8; a page's bytes decoded
with the `unicode_escape` codec (as upstream does), its first `<font>` element found by
BeautifulSoup's `html.parser` and converted by html2text with upstream's settings; each text as
it reads back from the file upstream writes (universal newlines); the texts joined in upstream's
order (`essay_list.corpus_order`) with no separator; `{"text": ...}` written by `json.dump`. A
failed download is skipped, as upstream skips it. The result is official when its sha256 is the
pinned corpus's; otherwise it is still written, and the record beside it names the essays that
differ or are missing (`essay_record`), and the URL each page finally came from (a redirect to
another host is said).

What a download gets that is less than the whole list never replaces a better copy: an official
corpus, one a fetch made whole, one made by hand (not known to be partial), or a partial one
missing fewer essays. It is written only where nothing better was, and the fetch then says what
failed and raises `IncompleteFetch` (`ruler sources fetch` exits 1). Each page is streamed with
a size cap (`PAGE_CEILING`) and a time bound (`ruler.kernel.download`), 8 at a time; an
interrupted fetch (Ctrl-C, SIGTERM) stops the downloads in flight at once.
"""

from __future__ import annotations

import hashlib
import json
import platform
import urllib.parse
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from importlib import metadata
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

from ruler.catalog.essay_list import Essay, corpus_order, pinned_essays
from ruler.catalog.essay_record import (
    DIFFERS,
    MISSING,
    SAME,
    EssayFetchRecord,
    FetchedEssay,
    read_record,
    record_path,
)
from ruler.kernel.atomic import replacing
from ruler.kernel.download import (
    DEFAULT_STALL,
    Limits,
    NotFound,
    Stop,
    download,
    progress_bar,
)
from ruler.kernel.errors import IncompleteFetch, RulerError
from ruler.kernel.fetch_staging import remove_stale_staging
from ruler.kernel.fetch_staging import tag as fetch_tag
from ruler.kernel.hashing import file_sha256
from ruler.kernel.mirror import layout_hint, mirrored

CONVERTER_PACKAGES = ("html2text", "beautifulsoup4")  # they shape the pages' text
INSTALL_HINT = "pip install 'ruler-bench[essays]'"
PARALLEL_DOWNLOADS = 8
#: The most bytes one essay's page may have: its size is pinned nowhere (the longest essay's
#: text is 75 k characters); a server sending more is refused there.
PAGE_CEILING = 2_000_000


def converter_versions() -> dict[str, str]:
    """Versions of the packages that turn pages into text, or a RulerError naming the install."""
    try:
        return {p: metadata.version(p) for p in CONVERTER_PACKAGES}
    except metadata.PackageNotFoundError as e:
        raise RulerError(f"fetching the essays needs {e.name} (html2text and beautifulsoup4 "
                         f"convert the pages as upstream's script does): {INSTALL_HINT}") from None


def page_text(page: bytes) -> str:
    """A paulgraham.com page's essay text, converted as upstream converts it."""
    import html2text
    from bs4 import BeautifulSoup

    # Upstream calls .decode("unicode_escape", "utf-8"): the second argument is the error
    # handler's name, consulted only on an error, which then fails; so does this. Backslashes
    # in a page are read as escapes (a DeprecationWarning each for unknown ones): kept, as there.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        content = page.decode("unicode_escape")
    converter = html2text.HTML2Text()
    converter.ignore_images = True
    converter.ignore_tables = True
    converter.escape_all = True  # upstream sets it; html2text has no such option (no effect)
    converter.reference_links = False
    converter.mark_code = False
    # str(None) when a page has no <font>: upstream then saves "None\n\n"; so does this
    return converter.handle(str(BeautifulSoup(content, "html.parser").find("font")))


def as_read_back(text: str) -> str:
    """The text as upstream reads back the file it wrote: open(..., 'r') turns \\r\\n and \\r
    into \\n."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


class Fetched(NamedTuple):
    """One essay's download: its text (None: failed), why it failed, the URL it came from."""

    text: str | None
    error: str | None
    final_url: str | None = None
    not_found: bool = False  # the server (or mirror) has no such file


def _fetch_one(essay: Essay, mirror: str | None, limits: Limits, page_bytes: int,
               stop: Stop) -> Fetched:
    """The essay's text, or why it failed; any failure is a skipped essay, as upstream's."""
    url = mirrored(essay.url, mirror)
    body = bytearray()  # at most page_bytes: the download stops there
    try:
        got = download(url, body.extend, max_bytes=page_bytes, limits=limits, stop=stop)
    except RulerError as e:
        return Fetched(None, str(e), not_found=isinstance(e, NotFound))
    try:
        text = page_text(bytes(body)) if essay.is_page else bytes(body).decode("utf-8")
    except (ValueError, LookupError) as e:
        # ValueError: a decode error; LookupError: the unknown error handler upstream's decode
        # call names
        return Fetched(None, f"{url}: {e}", got.final_url)
    return Fetched(as_read_back(text), None, got.final_url)


def assemble(texts: Sequence[str | None], essays: Sequence[Essay], versions: dict[str, str],
             official_sha256: str, mirror: str | None, errors: Sequence[str | None],
             final_urls: Sequence[str | None] | None = None
             ) -> tuple[bytes, EssayFetchRecord]:
    """The corpus file's bytes and its record, from each essay's text (None: failed) and the
    URL it finally came from."""
    fetched, parts = [], []
    finals = final_urls if final_urls is not None else [None] * len(essays)
    for essay, text, error, final in zip(essays, texts, errors, finals):
        if text is None:
            fetched.append(FetchedEssay(essay.name, essay.url, MISSING, error=error,
                                        final_url=final))
            continue
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        same = len(text) == essay.chars and digest == essay.sha256
        fetched.append(FetchedEssay(essay.name, essay.url, SAME if same else DIFFERS,
                                    len(text), digest, final_url=final))
        parts.append(text)
    data = json.dumps({"text": "".join(parts)}).encode("utf-8")  # as upstream's json.dump
    corpus_sha256 = hashlib.sha256(data).hexdigest()
    record = EssayFetchRecord(corpus_sha256, corpus_sha256 == official_sha256, tuple(fetched),
                              {**versions, "python": platform.python_version()}, mirror)
    return data, record


def fetch_essays(target: Path, official_sha256: str, *, essays: Sequence[Essay] | None = None,
                 mirror: str | None = None, timeout: float = DEFAULT_STALL,
                 limits: Limits | None = None, page_bytes: int = PAGE_CEILING,
                 say: Callable[[str], object] | None = None) -> EssayFetchRecord:
    """Download and convert every essay, write the corpus to `target` and its record beside it.

    `essays` defaults to upstream's list; `mirror` serves the same URLs as host/path; `limits`
    bounds each page's time (default: `timeout` per read, `download.DEFAULT_TOTAL` in all) and
    `page_bytes` its size; `say` is told what is waited for, and what was kept. Nothing is
    written when no essay could be downloaded; each file is replaced atomically, and only by a
    corpus at least as good (module docstring). A download missing essays raises
    `IncompleteFetch` once it has written or kept its corpus.
    """
    versions = converter_versions()
    limits = limits or Limits(stall=timeout)
    tell: Callable[[str], object] = say or (lambda text: None)
    essays = corpus_order(list(essays if essays is not None else pinned_essays()))
    hosts = sorted({urllib.parse.urlsplit(mirrored(e.url, mirror)).netloc or "local files"
                    for e in essays})
    tell(f"essays: downloading {len(essays)} essays from {', '.join(hosts)} "
         f"({PARALLEL_DOWNLOADS} at a time; each page at most {page_bytes:,} bytes, within "
         f"{limits.total:g} s)")
    results = _download_all(essays, mirror, limits, page_bytes)
    failed = [r.error for r in results if r.text is None]
    if len(failed) == len(essays):
        hint = f" ({layout_hint(mirror)})" if mirror and all(r.not_found for r in results) \
            else ""
        raise RulerError(f"could not fetch source 'essays': none of the {len(essays)} essays "
                         f"could be downloaded (first: {failed[0]}){hint}")
    data, record = assemble([r.text for r in results], essays, versions, official_sha256,
                            mirror, [r.error for r in results], [r.final_url for r in results])
    redirected = record.redirected()
    if redirected:
        tell(f"essays: {len(redirected)} of {len(essays)} pages came from another host than "
             f"asked (redirected; each page's final URL is in {record_path(target).name}): "
             f"{', '.join(f'{e.name} -> {e.final_url}' for e in redirected[:3])}"
             f"{' and more' if len(redirected) > 3 else ''}")
    kept = _better_copy(target, record, official_sha256)
    if kept is None:
        # the corpus first: a reader that finds it beside an older record sees the record's
        # hash differ and ignores it (essay_record.read_record)
        for path, content in ((target, data), (record_path(target),
                                               record.to_json().encode("utf-8"))):
            remove_stale_staging(path)  # what a fetch killed while writing left
            with replacing(path, fetch_tag()) as tmp:
                tmp.write_bytes(content)
    if failed:
        done = (f"kept {kept}" if kept is not None else
                f"wrote the {len(essays) - len(failed)} essays downloaded to {target} "
                f"(unofficial: builds from it are marked so; {record_path(target).name} names "
                f"the missing essays)")
        raise IncompleteFetch(f"could not fetch source 'essays' whole: {len(failed)} of "
                              f"{len(essays)} essays could not be downloaded (first: "
                              f"{failed[0]}); {done}")
    if kept is not None:
        tell(f"essays: this download differs from the pinned corpus ({record.summary()}); "
             f"kept {kept}")
    return record


def _download_all(essays: Sequence[Essay], mirror: str | None, limits: Limits,
                  page_bytes: int) -> list[Fetched]:
    """Each essay's download, `PARALLEL_DOWNLOADS` at a time, with a progress bar on a
    terminal. Interrupted (Ctrl-C, SIGTERM), the downloads in flight are stopped at once and
    those not started are cancelled."""
    stop = Stop()
    pool = ThreadPoolExecutor(PARALLEL_DOWNLOADS)
    try:
        futures = [pool.submit(_fetch_one, e, mirror, limits, page_bytes, stop) for e in essays]
        with progress_bar("essays", len(essays), unit="essay") as bar:
            for _ in as_completed(futures):
                bar.update(1)
        return [f.result() for f in futures]
    except BaseException:
        stop.stop("the fetch was interrupted")
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _better_copy(target: Path, record: EssayFetchRecord, official_sha256: str) -> str | None:
    """What is at `target` if it is better than the download `record` describes (kept, then),
    else None. Better: the official corpus (unless the download is it too); a corpus not made
    by a fetch (not known to be partial) or one missing fewer essays, than a download missing
    some."""
    if record.official or not target.is_file():
        return None
    digest = file_sha256(target)
    if digest == official_sha256:
        return f"the official corpus at {target}"
    missing = len(record.named(MISSING))
    if not missing:
        return None
    old = read_record(target, digest)
    if old is None:
        return f"the corpus already there ({target}: not made by a fetch, so not known to be " \
               f"partial)"
    old_missing = len(old.named(MISSING))
    if old_missing < missing:
        return f"the corpus already there ({old_missing} of {len(old.essays)} essays missing)"
    return None
