"""The packages whose versions shape what a build writes, and their installed versions.

The one list of them (`CONTENT_PACKAGES`, `FILE_PACKAGES`) sits here, below everything that
reads it: a build's identity records the content packages of its tokenizer
(`ruler.builder.identity`, which names them `identity.CONTENT_PACKAGES`), the manifest records
the writer's whole environment (`manifest.TRACKED_PACKAGES`), and a Ray worker refuses to build
under other versions than its driver's (`pipeline/ray_executor.environment`).
"""

from __future__ import annotations

import importlib.metadata
from typing import Iterable, Mapping

#: Packages whose versions can change generated rows, by what they shape: the task generators
#: (numpy Generator streams, scipy's zeta, the word lists, punkt sentence splitting), then
#: each tokenizer backend (token counts, offsets, chat template rendering by jinja2), then
#: what a benchmark's generators may add (a sentence splitter), which that benchmark declares
#: (`Benchmark.packages`) and only its builds record.
CONTENT_PACKAGES: Mapping[str, tuple[str, ...]] = {
    "common": ("numpy", "scipy", "wonderwords", "english-words", "nltk"),
    "benchmarks": ("sentencex",),
    "hf": ("tokenizers", "transformers", "jinja2"),
    "tiktoken": ("tiktoken",),
    "sentencepiece": ("sentencepiece", "protobuf"),
    "tekken": ("mistral-common", "tiktoken"),
}
#: Packages that shape a split file's bytes, not its rows (`content_sha256` is independent of
#: them): a file rebuilt elsewhere has the same bytes only with the same versions.
FILE_PACKAGES = ("pyarrow",)
NOT_INSTALLED = "not installed"


def content_packages(*tokenizer_kinds: str) -> dict[str, str]:
    """Installed versions of the packages that shape a build's rows with a tokenizer of these
    kinds (`TokenizerIdentity.content_kinds`: a registry name that more than one backend
    loads records the packages of each)."""
    return installed_versions((*CONTENT_PACKAGES["common"],
                               *(p for kind in tokenizer_kinds
                                 for p in CONTENT_PACKAGES.get(kind, ()))))


def installed_versions(dists: Iterable[str]) -> dict[str, str]:
    """dist -> its installed version (NOT_INSTALLED where absent), by name."""
    versions = {}
    for dist in sorted(set(dists)):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = NOT_INSTALLED
    return versions


def version_text(version: str) -> str:
    """`ruler --version`: the package's version (every manifest records it as the generator's)
    and the installed versions of the packages that shape rows and files, which every build
    records too: two installs print the same lines only if they build the same rows."""
    content = installed_versions(p for kind in CONTENT_PACKAGES.values() for p in kind)
    files = installed_versions(FILE_PACKAGES)
    shown = ", ".join(f"{dist} {v}" for dist, v in content.items())
    return (f"ruler {version}\n"
            f"rows shaped by: {shown}\n"
            f"files written by: {', '.join(f'{d} {v}' for d, v in files.items())}")
