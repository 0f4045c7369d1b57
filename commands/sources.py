"""`ruler sources list | fetch`: their flags are `ListSources`' and `FetchSources`' fields."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from ruler.catalog import sources
from ruler.catalog.essay_fetch import converter_versions
from ruler.kernel.download import DEFAULT_TOTAL
from ruler.kernel.errors import IncompleteFetch, RulerError
from ruler.kernel.flags import POSITIONAL, add_command, check_flags, option


@dataclass(frozen=True)
class ListSources:
    """What `ruler sources list` shows: each source, where it was found, whether official."""

    sources_dir: str | None = option("--sources", default=None, metavar="SOURCES_DIR")

    def __post_init__(self) -> None:
        check_flags(self)


def _ids_help() -> str:
    by_name = [k for k in sources.SOURCES if k not in _default_fetch()]
    return (f"sources to fetch (default: those with official download URLs: "
            f"{', '.join(_default_fetch())}; by name: {', '.join(by_name)} (Hub datasets, some "
            f"400 MB, and data folders at a pinned commit))")


@dataclass(frozen=True)
class FetchSources:
    """What `ruler sources fetch` downloads, and where to."""

    ids: tuple[str, ...] = option(kind=POSITIONAL, nargs="*", default=(), help=_ids_help)
    dest: str | None = option(
        "--dest", default=None,
        help=f"target folder (default: {sources.default_cache_dir()})")
    mirror: str | None = option(
        "--mirror", default=None, metavar="BASE",
        help="fetch the same URLs from a mirror laid out as host/path, as `wget -x` makes it "
             "(http://www.paulgraham.com/avg.html is BASE/www.paulgraham.com/avg.html); "
             f"http(s):// or file:// (default: ${sources.MIRROR_ENV}, else the original hosts)")
    timeout: float = option(
        "--timeout", type=float, default=DEFAULT_TOTAL, above=0, metavar="SECONDS",
        help="the longest one download may take, start to end, whatever the server sends "
             "(default: %(default)g); each is also capped at its pinned size, or its source's "
             "stated ceiling")

    def __post_init__(self) -> None:
        check_flags(self)
        unknown = [i for i in self.ids if i not in sources.SOURCES]
        if unknown:
            raise RulerError(f"unknown source(s) {', '.join(unknown)}; "
                             f"known: {', '.join(sources.SOURCES)}")


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sources", help="list or download the pinned source inputs",
                       description="The inputs tasks read, each benchmark's own (files at "
                                   "official URLs, Hub datasets at pinned revisions, data "
                                   "folders at a pinned commit: `ruler sources list`). "
                                   f"Searched in --sources DIR, ${sources.SOURCES_ENV}, then "
                                   f"{sources.default_cache_dir()}.")
    s = p.add_subparsers(dest="sources_command", metavar="ACTION")
    s.required = True
    add_command(s, "list", ListSources, run_list,
                help="show each source, where it was found, and if it is official")
    f = add_command(
        s, "fetch", FetchSources, run_fetch,
        help="download official files and check their sha256; make the essays as upstream's "
             "scraper does",
        description="Download SQuAD, HotpotQA and punkt_tab from their official URLs (sha256 "
                    "checked: a file with other bytes is refused). The essay corpus has no "
                    "official file: upstream publishes a scraper and its URL list, so `fetch "
                    "essays` downloads those 218 essays and converts them as that script does "
                    "(needs `pip install 'ruler-bench[essays]'`: html2text and beautifulsoup4 "
                    "at the pinned versions). The result is official when its sha256 "
                    "equals the pinned corpus's; otherwise it is written all the same, builds "
                    "from it are marked unofficial, and essays/PaulGrahamEssays.fetch.json "
                    "beside it names the essays that differ or are missing (`ruler sources "
                    "list` shows them). A download that misses essays never replaces a better "
                    "copy, and exits 1. Hub datasets come from the Hub at pinned revisions, "
                    "fetched by name; a data folder published file by file (fetched by name) "
                    "from its GitHub repository's raw files at the pinned commit, each "
                    "sha256-checked. A "
                    "source folder is replaced only while it holds nothing but the source's "
                    "own files. Every download is capped at its pinned size (or its source's "
                    "stated ceiling) and bounded in time (--timeout).")
    # SIGTERM (`timeout`, Slurm) stops a fetch as Ctrl-C does: its staging removed
    f.set_defaults(interrupt_on_sigterm=True)


def _default_fetch() -> list[str]:
    """What `ruler sources fetch` gets unasked: the files with official URLs (or upstream's
    procedure), not the Hub datasets and data folders fetched by name."""
    return [k for k, v in sources.SOURCES.items()
            if isinstance(v, (sources.FileSource, sources.ArchiveSource)) and v.urls
            or _scraped(k)]


def _scraped(source_id: str) -> bool:
    """Whether `ruler sources fetch` makes the source with upstream's procedure (the essays)."""
    spec = sources.SOURCES[source_id]
    return isinstance(spec, sources.FileSource) and bool(spec.scraper)


def run_list(cfg: ListSources) -> int:
    missing = 0
    for spec, found, message in sources.status(cfg.sources_dir):
        if found is None:
            missing += 1
            print(f"{spec.id:12} MISSING   {message}")
        else:
            tag = ("official" if found.official
                   else "UNOFFICIAL (hash differs: builds are marked unofficial)")
            print(f"{spec.id:12} {tag:9} {found.path}  sha256 {found.sha256[:16]}…")
            if found.note:
                print(f"{'':12} {found.note}")
    return 1 if missing else 0


def run_fetch(cfg: FetchSources) -> int:
    """Fetch each source; 1 when one got less than it was asked for (it said what failed and
    what it kept), 0 when every one is in place."""
    ids = cfg.ids or _default_fetch()
    if any(_scraped(i) for i in ids):
        converter_versions()  # before any download: the missing package is one clear line
    code = 0
    for source_id in ids:
        try:
            got = sources.fetch(source_id, cfg.dest, mirror=cfg.mirror, total=cfg.timeout,
                                say=_say)
        except IncompleteFetch as e:
            if isinstance(e.source, sources.ResolvedSource):
                _show(source_id, e.source)
            print(f"ruler: {e}", file=sys.stderr, flush=True)
            code = 1
            continue
        _show(source_id, got)
    return code


def _say(text: str) -> None:
    """What a fetch waits for, said before the wait (flushed: a log shows it at once)."""
    print(text, flush=True)


def _show(source_id: str, got: sources.ResolvedSource) -> None:
    at = f" at {got.revision}" if got.revision else ""
    tag = "official" if got.official else "UNOFFICIAL: builds from it are marked unofficial"
    print(f"{source_id}: {got.path}{at} (sha256 {got.sha256[:16]}…, {tag})")
    if got.note:
        print(f"  {got.note}")
