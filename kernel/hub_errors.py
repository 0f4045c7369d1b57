"""One clear line from a failed Hub call: the step, the HTTP status, the server's own message.

huggingface_hub raises its HTTP errors with the response attached, and wraps a failed
large-file upload in a plain `RuntimeError` naming the file, the HTTP error or the network
error as its cause; that chain becomes one line naming the file and the reason. Large files
go to a storage service the Hub hands out signed URLs for (S3 behind LFS), which answers in
XML and whose 403 means an expired or refused URL, not a token that cannot write: the hints
that speak of the token are given only for the Hub's own answers. The line is scrubbed of
credentials (a server may echo the request's Authorization header).
"""

from __future__ import annotations

import re

from ruler.kernel.errors import RulerError
from ruler.kernel.scrub import scrub

# huggingface_hub's wrapper around a failed large-file upload (_commit_api._upload_lfs_files)
_UPLOAD_FAILED = re.compile(r"Error while uploading '(.+)' to the Hub")
# S3-style storage answers errors as <Error><Code>..</Code><Message>..</Message></Error>
_XML_MESSAGE = re.compile(r"<Message>(.*?)</Message>", re.S)
_HUB_HINTS = {401: " (check your token: `hf auth login` or HF_TOKEN)",
              403: " (the token cannot write to this repo)",
              409: " (conflict on the Hub)",
              412: " (the repo changed while releasing; run the release again)"}


def hub_error(step: str, e: Exception, endpoint: str | None = None,
              then: str = "") -> RulerError:
    """`{step} failed: ...{then}` for `e`, raised by a call to the Hub at `endpoint` (or to
    the storage it sent the client to)."""
    return RulerError(scrub(hub_message(step, e, endpoint) + then))


def hub_message(step: str, e: BaseException, endpoint: str | None = None) -> str:
    from huggingface_hub.errors import HfHubHTTPError

    what = ""
    if not isinstance(e, HfHubHTTPError) and e.__cause__ is not None:
        if (m := _UPLOAD_FAILED.search(str(e))) is not None:
            what, e = f"uploading {m.group(1)!r} failed: ", e.__cause__
        elif isinstance(e.__cause__, HfHubHTTPError):
            e = e.__cause__  # e.g. the client's "Invalid metadata in README.md" wraps the 400
    head = f"{step} failed: {what}"
    if isinstance(e, HfHubHTTPError) and e.response is not None:
        status = e.response.status_code
        detail = (e.server_message or "").strip() or str(e).splitlines()[0]
        if (xml := _XML_MESSAGE.search(detail)) is not None:
            detail = xml.group(1).strip()
        if _answered_by_hub(e.response, endpoint):
            hint = _HUB_HINTS.get(status, "")
        else:
            hint = " (from the storage service the Hub sent the file to)"
        return f"{head}HTTP {status}: {detail}{hint}"
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{head}{type(e).__name__}: {first}"


def _answered_by_hub(response, endpoint: str | None) -> bool:
    try:
        url = str(response.request.url)
    except Exception:  # a response built without its request
        return True
    return endpoint is None or url.startswith(endpoint.rstrip("/") + "/")
