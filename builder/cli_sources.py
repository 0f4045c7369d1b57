"""`ruler sources list | fetch`."""

from __future__ import annotations

import argparse

from ruler.builder import sources
from ruler.builder.errors import RulerError


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sources", help="list or download the pinned source inputs",
                       description="The inputs tasks read (essays, SQuAD, HotpotQA, punkt_tab; "
                                   "RULERv2: MMLU and HotpotQA from the Hub at pinned "
                                   "revisions). "
                                   f"Searched in --sources DIR, ${sources.SOURCES_ENV}, then "
                                   f"{sources.default_cache_dir()}.")
    s = p.add_subparsers(dest="sources_command", metavar="ACTION")
    s.required = True
    ls = s.add_parser("list", help="show each source, where it was found, and if it is official")
    ls.add_argument("--sources", dest="sources_dir", default=None)
    ls.set_defaults(func=run_list)
    f = s.add_parser("fetch", help="download official files and check their sha256")
    downloadable = ", ".join(k for k, v in sources.SOURCES.items() if v.downloadable)
    f.add_argument("ids", nargs="*",
                   help=f"sources to fetch (default: all downloadable: {downloadable})")
    f.add_argument("--dest", default=None,
                   help=f"target folder (default: {sources.default_cache_dir()})")
    f.set_defaults(func=run_fetch)


def run_list(args: argparse.Namespace) -> int:
    missing = 0
    for spec, found, message in sources.status(args.sources_dir):
        if found is None:
            missing += 1
            print(f"{spec.id:12} MISSING   {message}")
        else:
            tag = ("official" if found.official
                   else "UNOFFICIAL (hash differs: builds are marked unofficial)")
            print(f"{spec.id:12} {tag:9} {found.path}  sha256 {found.sha256[:16]}…")
    return 1 if missing else 0


def run_fetch(args: argparse.Namespace) -> int:
    ids = args.ids or [k for k, v in sources.SOURCES.items() if v.downloadable]
    unknown = [i for i in ids if i not in sources.SOURCES]
    if unknown:
        raise RulerError(f"unknown source(s) {', '.join(unknown)}; "
                         f"known: {', '.join(sources.SOURCES)}")
    for source_id in ids:
        got = sources.fetch(source_id, args.dest)
        at = f" at {got.revision}" if got.revision else ""
        print(f"{source_id}: {got.path}{at} (sha256 {got.sha256[:16]}…, official)")
    return 0
