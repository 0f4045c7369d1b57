"""Everything a generator may read: the tokenizer, the build's variant, resolved sources, and
loaded resources.

Resources (essay corpus, word lists, QA files) load lazily once per process and are shared
by all generators. A forked worker inherits the loaded resources; a spawned one is sent the
context without them (pickling drops them) and loads each again on first use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

from ruler.builder.sources import ResolvedSource, resolve
from ruler.builder.tasks.oneruler_languages import OnerulerLanguage
from ruler.builder.tokenizer import Tokenizer
from ruler.builder.variants import NO_VARIANT, Variant


@dataclass
class BuildContext:
    tokenizer: Tokenizer
    tokenizer_name: str  # the tokenizer's default config name; part of every sample's seed
    seed: int = 42
    sources_dir: str | os.PathLike | None = None
    # The build's variant (builder.variants): generators ask it where a sample's gold items
    # go and how many tokens a row reserves for the answer (TaskGenerator.depth_bin,
    # .tokens_to_generate). NO_VARIANT: upstream's rules.
    variant: Variant = NO_VARIANT
    # The language(s) of a per-language benchmark's config (ONERULER); None for the others.
    language: OnerulerLanguage | None = None
    _sources: dict[str, ResolvedSource] = field(default_factory=dict)
    _resources: dict[str, Any] = field(default_factory=dict)

    def source(self, source_id: str) -> ResolvedSource:
        if source_id not in self._sources:
            self._sources[source_id] = resolve(source_id, self.sources_dir)
        return self._sources[source_id]

    def resource(self, key: str, load: Callable[[], Any]) -> Any:
        """A loaded resource, built by `load()` the first time it is asked for."""
        if key not in self._resources:
            self._resources[key] = load()
        return self._resources[key]

    def used_sources(self) -> dict[str, ResolvedSource]:
        return dict(self._sources)

    def __getstate__(self) -> dict[str, Any]:
        # Resources are rebuilt from the (hash-checked) sources; some are hundreds of MB.
        return {**self.__dict__, "_resources": {}}
