"""Everything a generator may read: the tokenizer, the build's variant, resolved sources, and
loaded resources.

Resources (essay corpus, word lists, QA files) load lazily once per context and are shared
by all its generators; those read from a hash-checked source alone are shared by every context
of the process (keyed by the source's sha256). A forked worker inherits the loaded resources;
a spawned one is sent the context without them (pickling drops them) and loads each again on
first use.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ruler.catalog.length_rules import PROMPT_AND_OUTPUT
from ruler.catalog.sources import ResolvedSource, resolve
from ruler.catalog.tokenizer import Tokenizer
from ruler.catalog.variants import NO_VARIANT, Variant


@dataclass
class BuildContext:
    tokenizer: Tokenizer
    tokenizer_name: str  # the tokenizer's default config name; part of every sample's seed
    seed: int = 42
    sources_dir: str | os.PathLike | None = None
    # The build's variant (catalog.variants): generators ask it where a sample's gold items
    # go and how many tokens a row reserves for the answer (TaskGenerator.depth_bin,
    # .tokens_to_generate). NO_VARIANT: upstream's rules.
    variant: Variant = NO_VARIANT
    # How a row's `length` counts its `tokens_to_generate` (catalog.length_rules): the build's
    # benchmark's rule, which each file's manifest entry records.
    length_rule: str = PROMPT_AND_OUTPUT
    # The values of the build's benchmark's axes, by axis name (catalog.benchmarks.
    # BuildAxis: a language); {} for a benchmark without axes.
    axes: Mapping[str, Any] = field(default_factory=dict)
    _sources: dict[str, ResolvedSource] = field(default_factory=dict)
    _resources: dict[str, Any] = field(default_factory=dict)

    def source(self, source_id: str) -> ResolvedSource:
        if source_id not in self._sources:
            self._sources[source_id] = resolve(source_id, self.sources_dir)
        return self._sources[source_id]

    def resource(self, key: str, load: Callable[[], Any], content: str | None = None) -> Any:
        """A loaded resource, built by `load()` the first time it is asked for.

        `content`: the sha256 of the (hash-checked) source `load` reads, and nothing else;
        the resource is then loaded once per process for every context that asks for it (a
        notebook or a test session builds many; SQuAD takes a second), so its users must not
        change it.
        """
        if key not in self._resources:
            self._resources[key] = load() if content is None else _by_content(key, content, load)
        return self._resources[key]

    def used_sources(self) -> dict[str, ResolvedSource]:
        return dict(self._sources)

    def __getstate__(self) -> dict[str, Any]:
        # Resources are rebuilt from the (hash-checked) sources; some are hundreds of MB.
        return {**self.__dict__, "_resources": {}}


#: Resources read from a source alone, by (key, the source's sha256): the last few asked for.
_BY_CONTENT: OrderedDict[tuple[str, str], Any] = OrderedDict()
_BY_CONTENT_KEPT = 4
_BY_CONTENT_LOCK = threading.Lock()


def _by_content(key: str, content: str, load: Callable[[], Any]) -> Any:
    with _BY_CONTENT_LOCK:
        if (key, content) in _BY_CONTENT:
            _BY_CONTENT.move_to_end((key, content))
            return _BY_CONTENT[key, content]
    value = load()  # outside the lock: two threads asking at once may both load, harmlessly
    with _BY_CONTENT_LOCK:
        _BY_CONTENT[key, content] = value
        while len(_BY_CONTENT) > _BY_CONTENT_KEPT:
            _BY_CONTENT.popitem(last=False)
    return value
