"""The build's tokenizer, loaded here and checked to be the one the manifest records."""

from __future__ import annotations

from typing import Any, Mapping

from ruler.builder.findings import Problem
from ruler.builder.manifest import BuildEntry
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.kernel.errors import RulerError


def tokenizer_for(config: str, build: BuildEntry, overrides: Mapping[str, str],
                   tokenizers_dir: str | None) -> tuple[Any, list[Problem]]:
    """The build's tokenizer, checked to be the one the manifest records."""
    recorded = build.tokenizer
    name = overrides.get(config) or recorded.name
    where = f"config {config!r}"
    if not name:
        return None, [Problem(where, "manifest.json records no tokenizer name")]
    try:
        tok = load_tokenizer(name, tokenizers_dir)
    except RulerError as e:
        return None, [Problem(where, f"cannot load tokenizer {name!r} to re-count lengths: {e} "
                                     f"(use --tokenizer {config}=PATH)")]
    ident = tok.identity
    if dict(ident.files) != dict(recorded.files) \
            or ident.chat_template_sha256 != recorded.chat_template_sha256:
        return None, [Problem(where, f"tokenizer {name!r} loaded here has other files or chat "
                                     f"template than the build recorded in manifest.json")]
    if recorded.pinned and ident.pinned \
            and (ident.repo, ident.revision) != (recorded.repo, recorded.revision):
        return None, [Problem(where, f"manifest.json records tokenizer {name!r} from "
                                     f"{recorded.repo}@{recorded.revision}, the "
                                     f"registry pins {ident.repo}@{ident.revision}")]
    return tok, []
