"""The Hub's naming rules for dataset repos, tags and config names, checked locally.

`ruler release` and `ruler export lm-eval --repo` both name a Hub repo and revision; a bad
name must fail locally with one clear line, not as an HTTP error after uploads began. A
dataset config name is also a folder under `data/`: the builder names configs with it, and
every reader of a manifest checks the names it finds there (`builder.manifest_schema`).
"""

from __future__ import annotations

import re

from ruler.kernel.errors import RulerError

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


# A dataset config name: it becomes a folder under data/ and a Hub config name, so nothing
# that could step out of data/ ("..", "/") or that the Hub rejects.
_CONFIG_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9])?$")


def check_config_name(config: str, what: str = "config") -> None:
    """Refuse a config name that is not a plain folder and Hub config name."""
    if not isinstance(config, str) or not _CONFIG_NAME.match(config) or ".." in config:
        raise RulerError(f"cannot use {config!r} (from {what}) as a dataset config name: use "
                         f"letters, digits, '_', '-' or '.', starting and ending with a letter "
                         f"or digit, no '..'")
