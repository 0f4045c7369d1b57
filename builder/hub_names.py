"""The Hub's naming rules for dataset repos and tags, checked before any request is made.

`ruler release` and `ruler export lm-eval --repo` both name a Hub repo and revision; a bad
name must fail locally with one clear line, not as an HTTP error after uploads began.
"""

from __future__ import annotations

import re

from ruler.builder.errors import RulerError

# Hub rules: letters, digits, '-', '_', '.'; no '--' or '..'; not starting/ending with - or .
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_REPO_ID = re.compile(rf"^{_NAME}/{_NAME}$")
_TAG = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$")


def validate_repo_id(repo_id: str) -> None:
    if not _REPO_ID.match(repo_id or "") or "--" in repo_id or ".." in repo_id \
            or repo_id.endswith(".git"):
        raise RulerError(
            f"invalid repo id {repo_id!r}: use ORG/NAME with letters, digits, '-', '_' or '.' "
            f"(no '--' or '..', not starting or ending with '-' or '.', at most 96 each)")


def validate_tag(tag: str) -> None:
    if not _TAG.match(tag or "") or ".." in tag:
        raise RulerError(f"invalid tag {tag!r}: use letters, digits, '-', '_' or '.', "
                         f"starting and ending with a letter or digit")
