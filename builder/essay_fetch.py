"""`ruler sources fetch essays`: RULER's essay corpus made as upstream's scraper makes it.

Upstream publishes no corpus file, only `download_paulgraham_essay.py` and its URL list. This
follows that script step by step: a .txt URL's bytes decoded as UTF-8; a page's bytes decoded
with the `unicode_escape` codec (as upstream does), its first `<font>` element found by
BeautifulSoup's `html.parser` and converted by html2text with upstream's settings; each text as
it reads back from the file upstream writes (universal newlines); the texts joined in upstream's
order (`essay_list.corpus_order`) with no separator; `{"text": ...}` written by `json.dump`. A
failed download is skipped, as upstream skips it. The result is official when its sha256 is the
pinned corpus's; otherwise it is still written, and the record beside it names the essays that
differ or are missing (`essay_record`).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import platform
import urllib.request
import warnings
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Callable, Sequence

from ruler.builder.atomic import write_bytes_atomic, write_text_atomic
from ruler.builder.errors import RulerError
from ruler.builder.essay_list import Essay, corpus_order, pinned_essays
from ruler.builder.essay_record import (
    DIFFERS,
    MISSING,
    SAME,
    EssayFetchRecord,
    FetchedEssay,
    record_path,
)
from ruler.builder.mirror import mirrored

CONVERTER_PACKAGES = ("html2text", "beautifulsoup4")  # they shape the pages' text
INSTALL_HINT = "pip install 'ruler-bench[essays]'"
PARALLEL_DOWNLOADS = 8


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


def file_text(body: bytes) -> str:
    return body.decode("utf-8")


def as_read_back(text: str) -> str:
    """The text as upstream reads back the file it wrote: open(..., 'r') turns \\r\\n and \\r
    into \\n."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _download(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


def _fetch_one(essay: Essay, mirror: str | None, timeout: float) -> tuple[str | None, str | None]:
    """(text, None) or (None, why it failed); any failure is a skipped essay, as upstream's."""
    url = mirrored(essay.url, mirror)
    try:
        body = _download(url, timeout)
        text = page_text(body) if essay.is_page else file_text(body)
    except (OSError, http.client.HTTPException, ValueError, LookupError) as e:
        # OSError: URLError, HTTPError, timeouts; ValueError: a decode error or a bad URL;
        # LookupError: the unknown error handler upstream's decode call names
        return None, f"{url}: {e}"
    return as_read_back(text), None


def assemble(texts: Sequence[str | None], essays: Sequence[Essay], versions: dict[str, str],
             official_sha256: str, mirror: str | None, errors: Sequence[str | None]
             ) -> tuple[bytes, EssayFetchRecord]:
    """The corpus file's bytes and its record, from each essay's text (None: failed)."""
    fetched, parts = [], []
    for essay, text, error in zip(essays, texts, errors):
        if text is None:
            fetched.append(FetchedEssay(essay.name, essay.url, MISSING, error=error))
            continue
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        same = len(text) == essay.chars and digest == essay.sha256
        fetched.append(FetchedEssay(essay.name, essay.url, SAME if same else DIFFERS,
                                    len(text), digest))
        parts.append(text)
    data = json.dumps({"text": "".join(parts)}).encode("utf-8")  # as upstream's json.dump
    corpus_sha256 = hashlib.sha256(data).hexdigest()
    record = EssayFetchRecord(corpus_sha256, corpus_sha256 == official_sha256, tuple(fetched),
                              {**versions, "python": platform.python_version()}, mirror)
    return data, record


def fetch_essays(target: Path, official_sha256: str, *, essays: Sequence[Essay] | None = None,
                 mirror: str | None = None, timeout: float = 60.0,
                 on_essay: Callable[[str, str], None] | None = None) -> EssayFetchRecord:
    """Download and convert every essay, write the corpus to `target` and its record beside it.

    `essays` defaults to upstream's list; `mirror` serves the same URLs as host/path.
    Nothing is written when no essay could be downloaded; each file is replaced atomically.
    """
    versions = converter_versions()
    essays = corpus_order(list(essays if essays is not None else pinned_essays()))
    with ThreadPoolExecutor(PARALLEL_DOWNLOADS) as pool:
        results = list(pool.map(lambda e: _fetch_one(e, mirror, timeout), essays))
    if on_essay:
        for essay, (_, error) in zip(essays, results):
            on_essay(essay.name, error or "ok")
    if all(text is None for text, _ in results):
        raise RulerError(f"could not fetch source 'essays': none of the {len(essays)} essays "
                         f"could be downloaded (first: {results[0][1]})")
    data, record = assemble([t for t, _ in results], essays, versions, official_sha256, mirror,
                            [e for _, e in results])
    # the corpus first: a reader that finds it beside an older record sees the record's hash
    # differ and ignores it (essay_record.read_record)
    write_bytes_atomic(target, data)
    write_text_atomic(record_path(target), record.to_json())
    return record
