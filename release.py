"""`ruler release OUT --repo ORG/NAME`: verify a build, then publish it as ONE tagged Hub commit.

Order matters for atomicity. Everything that can be checked locally (repo id, tag, verify
with a few rows rebuilt from the manifest's identity, official-ness, sources) is checked before
the first request. Then: create the repo if needed, read its head and tags, refuse an existing
tag, pre-upload the files (large ones go to LFS storage, which changes nothing visible), and
make a single commit whose `parent_commit` is the head we read: if anything fails up to and
including that commit, the repo is unchanged (a repo this release created is deleted again).
Only the tag follows the commit; the Hub has no way to commit and tag at once, so a failure
there is reported with the commit id and the call that finishes the job.

Large files (every Parquet file) are pre-uploaded as the installed huggingface_hub does it:
through Xet when `hf_xet` is installed (the default), else through LFS (the batch API, a PUT
to the signed URL it returns, the verify call); nothing of that is visible until the commit
names the files. A failed upload leaves the uploaded objects in the repo's storage, so running
the release again sends only what is missing.

The token comes from the standard huggingface_hub login or `HF_TOKEN`; without one the
release stops before verifying. It is never printed: every line passes `ruler.kernel.scrub`
(a server may echo the request's headers, or the token, into file names and URLs). The
endpoint is passed in (`--endpoint`, else `$HF_ENDPOINT` read at call time).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ruler.builder.release_gates import check_gates, gate_flags, release_gates
from ruler.commands.verify import parse_overrides
from ruler.kernel.errors import RulerError
from ruler.kernel.flags import (
    NEGATED,
    POSITIONAL,
    REPEATED,
    SWITCH,
    add_flags,
    check_flags,
    from_flags,
    option,
)
from ruler.kernel.hub_errors import hub_error
from ruler.kernel.hub_names import validate_repo_id, validate_tag

if TYPE_CHECKING:
    from ruler.builder.manifest import Manifest

DEFAULT_ENDPOINT = "https://huggingface.co"
REPO_TYPE = "dataset"
# Folders a release owns in the repo: files there that the new build lacks are deleted.
# lm_eval/: the lm-evaluation-harness task folder (`ruler export lm-eval`) for this release.
OWNED_PREFIXES = ("data/", "sources/", "lm_eval/")
#: Rows rebuilt per file from the manifest's identity before a release (`--regenerate`).
DEFAULT_REGENERATE = 2


@dataclass(frozen=True)
class PlannedFile:
    path_in_repo: str
    size: int
    local: Path | None = None     # uploaded from disk ...
    content: bytes | None = None  # ... or from memory (the card, rendered for this repo/tag)


@dataclass(frozen=True)
class ReleasePlan:
    out: Path
    repo_id: str
    tag: str
    endpoint: str
    private: bool
    files: tuple[PlannedFile, ...]

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


@dataclass(frozen=True)
class ReleaseResult:
    repo_id: str
    commit: str
    tag: str
    url: str
    deleted: tuple[str, ...]


# --- local checks ------------------------------------------------------------------------------

def default_tag(manifest: Manifest) -> str:
    """`v<generator version>-<12 hex>`: the hex hashes every file's content hash, so the same
    build always gets the same tag and a different build a different one."""
    h = hashlib.sha256()
    for rel, entry in sorted(manifest.files.items()):
        h.update(f"{rel} {entry.content_sha256}\n".encode())
    return f"v{(manifest.generator or {}).get('version')}-{h.hexdigest()[:12]}"


def resolve_endpoint(endpoint: str | None) -> str:
    # Read at call time, never at import: tests and mirrors set it per run.
    return (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def check_official(manifest: Manifest, allow_unofficial: bool) -> None:
    unofficial = [c for c in manifest.configs() if not manifest.builds[c].official]
    if unofficial and not allow_unofficial:
        raise RulerError(
            f"config(s) {', '.join(unofficial)} are unofficial builds (tokenizer not pinned or a "
            f"source is not the official file; see manifest.json): pass --allow-unofficial to "
            f"release them anyway (the card says so)")


def source_files(manifest: Manifest, sources_dir: str | None) -> list[PlannedFile]:
    """The pinned inputs the builds read, under `sources/<registry relpath>`, each checked to
    be the very bytes the manifest recorded."""
    from ruler.catalog.sources import SOURCES, FileSource, HubSource, resolve

    recorded: dict[str, str] = {}
    for build in manifest.builds.values():
        for sid, sha256 in build.source_hashes.items():
            if recorded.setdefault(sid, sha256) != sha256:
                raise RulerError(f"configs use different copies of source {sid!r}; release them "
                                 f"separately or without --with-sources")
    files = []
    for sid in sorted(recorded):
        if sid not in SOURCES:
            raise RulerError(f"manifest.json names unknown source {sid!r}")
        found = resolve(sid, sources_dir)
        if found.sha256 != recorded[sid]:
            raise RulerError(f"source {sid!r} at {found.path} has sha256 {found.sha256}, but the "
                             f"build used {recorded[sid]}: point --sources at the copy it used")
        spec = found.spec
        if isinstance(spec, HubSource):  # the files the build read, where a rebuild finds them
            files += _hub_source_files(found)
        elif not isinstance(spec, FileSource):  # exactly the files the registry hashes, nothing
            # else there
            for name in sorted(spec.sha256):
                p = found.path / name
                files.append(PlannedFile(f"sources/{found.spec.relpath}/{name}",
                                         p.stat().st_size, local=p))
        else:
            # Keep the file's own name: a partial copy must not pose as the official file.
            # `--sources <release>/sources` still finds it (the registry's alternatives glob).
            parent = Path(found.spec.relpath).parent.as_posix()
            files.append(PlannedFile(f"sources/{parent}/{found.path.name}",
                                     found.path.stat().st_size, local=found.path))
    return files


def _hub_source_files(found) -> list[PlannedFile]:
    """A Hub source's files under `sources/`: fetched ones in their repo layout with the fetch
    record (`<relpath>/<repo path>`, so the copy stays official), stand-ins under their folder's
    name (as `--sources` finds stand-ins)."""
    from ruler.catalog.hub_sources import RECORD

    pinned = {f.path for split in found.spec.hub.splits for f in split.files}
    fetched = set(found.hashes) <= pinned
    prefix = found.spec.relpath if fetched else found.path.name
    names = sorted(found.hashes) + ([RECORD] if fetched and (found.path / RECORD).is_file()
                                    else [])
    return [PlannedFile(f"sources/{prefix}/{name}", (found.path / name).stat().st_size,
                        local=found.path / name) for name in names]


def lm_eval_files(manifest: Manifest, repo_id: str, tag: str) -> list[PlannedFile]:
    """The lm-evaluation-harness task folder, its tasks reading this release's tag."""
    from ruler.eval.integrations.lm_eval_export import EXPORT_DIR, TaskSource, export_files

    texts = export_files(manifest, TaskSource(repo_id, tag))
    encoded = {name: text.encode("utf-8") for name, text in sorted(texts.items())}
    return [PlannedFile(f"{EXPORT_DIR}/{name}", len(data), content=data)
            for name, data in encoded.items()]


def make_plan(out: Path, manifest: Manifest, repo_id: str, tag: str, endpoint: str,
              private: bool, with_sources: bool = False,
              sources_dir: str | None = None) -> ReleasePlan:
    from ruler.builder.manifest import MANIFEST_NAME
    from ruler.cards.render import render_card

    card = render_card(manifest, repo_id=repo_id, revision=tag).encode("utf-8")
    files = [PlannedFile("README.md", len(card), content=card),
             PlannedFile(MANIFEST_NAME, (out / MANIFEST_NAME).stat().st_size,
                         local=out / MANIFEST_NAME)]
    files += [PlannedFile(rel, (out / rel).stat().st_size, local=out / rel)
              for rel in sorted(manifest.files)]
    files += lm_eval_files(manifest, repo_id, tag)
    if with_sources:
        files += source_files(manifest, sources_dir)
    return ReleasePlan(out, repo_id, tag, endpoint, private, tuple(files))


def format_size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError


def format_plan(plan: ReleasePlan) -> str:
    width = max(len(f.path_in_repo) for f in plan.files)
    lines = [f"release plan: {plan.out} -> {plan.endpoint}/datasets/{plan.repo_id} "
             f"({'private' if plan.private else 'public'}), tag {plan.tag}, one commit"]
    lines += [f"  {f.path_in_repo:<{width}}  {format_size(f.size):>10}" for f in plan.files]
    lines.append(f"  {len(plan.files)} files, {format_size(plan.total_bytes)} "
                 f"({plan.total_bytes} bytes)")
    return "\n".join(lines)


# --- the Hub side ------------------------------------------------------------------------------

# After a failure in this step the repo is unchanged and running the release again converges.
_RERUN = {"pre-upload": "; nothing was committed: run the release again (files already "
                        "uploaded are not sent again)"}


def publish(plan: ReleasePlan, api) -> ReleaseResult:
    """Create/read the repo, pre-upload, commit once on top of the head read, then tag.

    A repo this call created is deleted again if anything fails before the commit lands, so
    a failed first release leaves the Hub as it was (or says plainly that it could not)."""

    def step(name: str, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # every Hub/network failure becomes one clear message
            raise hub_error(name, e, plan.endpoint, then=_RERUN.get(name, "")) from None

    repo = plan.repo_id
    existed = step("read repo", api.repo_exists, repo, repo_type=REPO_TYPE)
    step("create repo", api.create_repo, repo, repo_type=REPO_TYPE, private=plan.private,
         exist_ok=True)
    try:
        commit, stale = _commit(plan, api, step)
    except RulerError as e:
        if existed:
            raise
        raise RulerError(f"{e}; {_undo_create(api, repo)}") from None
    try:
        api.create_tag(repo, tag=plan.tag, revision=commit.oid, repo_type=REPO_TYPE,
                       tag_message=f"ruler release {plan.tag}")
    except Exception as e:
        err = hub_error("tag", e, plan.endpoint)
        raise RulerError(f"{err} -- commit {commit.oid} is on main but untagged; tag it with "
                         f"HfApi().create_tag({repo!r}, tag={plan.tag!r}, "
                         f"revision={commit.oid!r}, repo_type='dataset')") from None
    return ReleaseResult(repo, commit.oid, plan.tag, f"{plan.endpoint}/datasets/{repo}", stale)


def _undo_create(api, repo: str) -> str:
    """Delete the repo this release created, if it is still empty (someone may have pushed to
    it meanwhile: their commit is never deleted). Says what happened."""
    try:
        info = api.repo_info(repo, repo_type=REPO_TYPE)
        files = {s.rfilename for s in (info.siblings or [])}
        if not files <= {".gitattributes"}:
            return (f"the repo {repo} this release created now holds other commits "
                    f"({len(files)} files): it was left in place")
        api.delete_repo(repo, repo_type=REPO_TYPE)
    except Exception as d:
        return (f"the repo {repo} this release created could not be deleted "
                f"({hub_error('delete repo', d)}): an empty repo remains")
    return f"the repo {repo} this release created was deleted again"


def _commit(plan: ReleasePlan, api, step):
    """Read the head and tags, pre-upload, and make the one commit on top of that head."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    repo = plan.repo_id
    refs = step("read refs", api.list_repo_refs, repo, repo_type=REPO_TYPE)
    if any(t.name == plan.tag for t in refs.tags):
        raise RulerError(f"tag {plan.tag!r} already exists in {repo}: choose another --tag "
                         f"(a tag names one release forever)")
    head = next((b.target_commit for b in refs.branches if b.name == "main"), None)
    # the file list at exactly that head: what our commit replaces or deletes
    info = step("read repo", api.repo_info, repo, repo_type=REPO_TYPE, revision=head or "main")
    ours = {f.path_in_repo for f in plan.files}
    stale = tuple(sorted(s.rfilename for s in (info.siblings or [])
                         if s.rfilename.startswith(OWNED_PREFIXES) and s.rfilename not in ours))
    additions = [CommitOperationAdd(f.path_in_repo,
                                    f.content if f.content is not None else str(f.local))
                 for f in plan.files]
    step("pre-upload", api.preupload_lfs_files, repo, additions=additions, repo_type=REPO_TYPE,
         revision="main")
    operations = additions + [CommitOperationDelete(p) for p in stale]
    commit = step("commit", api.create_commit, repo, operations=operations,
                  commit_message=f"Release {plan.tag}",
                  commit_description=f"{len(plan.files)} files, {plan.total_bytes} bytes, "
                                     f"built by ruler-bench; see manifest.json",
                  repo_type=REPO_TYPE, revision="main", parent_commit=head)
    return commit, stale


# --- orchestration -------------------------------------------------------------------------------

def release(out: str | Path, repo_id: str, *, tag: str | None = None, dry_run: bool = False,
            private: bool = False, allow_unofficial: bool = False, with_sources: bool = False,
            sources_dir: str | None = None, endpoint: str | None = None, api=None,
            verify_kwargs: Mapping[str, Any] | None = None, echo=print,
            regenerate: int = DEFAULT_REGENERATE,
            progress: bool = False,
            **acknowledged: Sequence[str] | None) -> ReleaseResult | None:
    """Verify `out` and publish it to `repo_id` as one tagged commit. `acknowledged`: what
    each benchmark's release gate flag names, by the flag's name (`acknowledge_book_status`:
    `builder.release_gates`)."""
    from ruler.builder.manifest import load_manifest
    from ruler.builder.verify.report import format_report
    from ruler.builder.verify.run import verify
    from ruler.kernel.scrub import scrub

    def say(text: str) -> None:  # every line: file names, URLs and ids come from the server
        echo(scrub(text))

    validate_repo_id(repo_id)  # before anything touches disk or network
    if tag is not None:
        validate_tag(tag)
    out = Path(out)
    manifest = load_manifest(out)
    tag = tag or default_tag(manifest)
    validate_tag(tag)
    if not manifest.files:
        raise RulerError(f"{out} holds no split files: nothing to release")
    check_official(manifest, allow_unofficial)
    unknown = sorted(set(acknowledged) - set(release_gates()))
    if unknown:
        raise TypeError(f"release() got unexpected keyword(s) {', '.join(unknown)}")
    check_gates(manifest, acknowledged)
    if not dry_run and api is None:
        check_can_publish()  # before verify spends seconds
    # Rebuild a few rows of every file from the manifest's identity (the strongest proof the
    # build is what it says), and re-tokenize every row of tokenizers outside the registry,
    # whose piece counting no test proves.
    # It takes a while (~40 s for the README's build): say what is being verified, and with
    # `progress` a bar over the files on stderr.
    say(f"verifying {out} first (as `ruler verify --regenerate {regenerate}` does):")
    with _file_bar(len(manifest.files), progress) as bar:
        def step(text: str) -> None:
            with bar.external_write_mode():  # the bar cleared, the line said, the bar again
                say(f"  {text}")

        report = verify(out, **{"regenerate": regenerate, "sources_dir": sources_dir,
                                "full_unpinned": True, "progress": lambda path: bar.update(1),
                                "step": step, **(verify_kwargs or {})})
    if not report.ok:
        say(format_report(report))
        problems = report.all_problems()
        raise RulerError(f"verify failed ({len(problems)} problem(s), first: {problems[0]}); "
                         f"nothing was released")
    endpoint = resolve_endpoint(endpoint)
    plan = make_plan(out, manifest, repo_id, tag, endpoint, private, with_sources, sources_dir)
    say(format_plan(plan))
    if dry_run:
        say("dry run: nothing uploaded")
        return None
    if api is None:
        from huggingface_hub import HfApi

        # token=None: HfApi reads the standard login / HF_TOKEN itself; we never handle it.
        api = HfApi(endpoint=endpoint)
    result = publish(plan, api)
    if result.deleted:
        say(f"removed {len(result.deleted)} file(s) of the previous release: "
            f"{', '.join(result.deleted)}")
    say(f"released {result.url} at commit {result.commit}, tag {result.tag}\n"
        f'load with: load_dataset("{repo_id}", "<config>", split="<L>", revision="{tag}")')
    return result


def _file_bar(total: int, shown: bool) -> Any:
    """A tqdm bar over the files verify checks (stderr), or one that shows nothing."""
    from tqdm import tqdm

    return tqdm(total=total, desc="ruler release: verify", unit="file", disable=not shown,
                dynamic_ncols=True, leave=False)


def check_can_publish() -> None:
    """The Hub can be written to from here: not offline, and a token is configured."""
    from huggingface_hub import constants, get_token

    if constants.is_offline_mode():
        raise RulerError("HF_HUB_OFFLINE is set: unset it to release (or use --dry-run)")
    if not get_token():
        raise RulerError("no Hugging Face token: run `hf auth login` or set HF_TOKEN")


@dataclass(frozen=True)
class ReleaseConfig:
    """What `ruler release` publishes, where, and how it verifies first."""

    out: str = option(kind=POSITIONAL, help="the build folder")
    repo: str = option("--repo", required=True, metavar="ORG/NAME", help="target dataset repo")
    tag: str | None = option("--tag", default=None,
                             help="release tag (default: v<generator version>-<content hash>)")
    dry_run: bool = option("--dry-run", kind=SWITCH, default=False,
                           help="print the plan, upload nothing")
    private: bool = option("--private", kind=SWITCH, default=False,
                           help="create the repo private")
    allow_unofficial: bool = option(
        "--allow-unofficial", kind=SWITCH, default=False,
        help="release builds with an unpinned tokenizer or non-official sources")
    with_sources: bool = option(
        "--with-sources", kind=SWITCH, default=False,
        help="also upload the pinned source files the build read, under sources/")
    sources_dir: str | None = option(
        "--sources", default=None, metavar="SOURCES_DIR",
        help="folder holding the sources (default: $RULER_SOURCES, then the cache)")
    endpoint: str | None = option(
        "--endpoint", default=None,
        help=f"Hub endpoint (default: $HF_ENDPOINT, else {DEFAULT_ENDPOINT})")
    tokenizers_dir: str | None = option(
        "--tokenizers-dir", default=None,
        help="folder of tokenizer folders for verify (default: $RULER_TOKENIZERS)")
    tokenizers: Mapping[str, str] = option(
        "--tokenizer", kind=REPEATED, default_factory=dict, parse=parse_overrides,
        metavar="CONFIG=PATH",
        help="verify: load CONFIG's tokenizer from PATH (a folder or registry name)")
    regenerate: int = option(
        "--regenerate", default=DEFAULT_REGENERATE, type=int, minimum=0, metavar="K",
        help=f"verify: rows rebuilt per file from the manifest's identity and compared byte for "
             f"byte (default {DEFAULT_REGENERATE}; needs the build's sources, see --sources)")
    progress: bool = option("--no-progress", kind=NEGATED, default=True,
                            help="no progress bar while verify checks the files")

    def __post_init__(self) -> None:
        check_flags(self)


def register_cli(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "release", help="verify a build and publish it to the Hub as one tagged commit",
        description="Run `ruler verify`, then upload the build folder to a Hub dataset repo in "
                    "one commit on top of the head it read (a failure leaves the repo "
                    "unchanged), then tag it. The token comes from `hf auth login` or HF_TOKEN.")
    add_flags(p, ReleaseConfig)
    add_flags(p, gate_flags())  # what each benchmark's release gate asks (`--acknowledge-...`)
    p.set_defaults(func=lambda args: run(from_flags(ReleaseConfig, args),
                                         vars(from_flags(gate_flags(), args))))


def run(cfg: ReleaseConfig, acknowledged: Mapping[str, Sequence[str] | None] | None = None
        ) -> int:
    release(cfg.out, cfg.repo, tag=cfg.tag, dry_run=cfg.dry_run, private=cfg.private,
            allow_unofficial=cfg.allow_unofficial, with_sources=cfg.with_sources,
            sources_dir=cfg.sources_dir, endpoint=cfg.endpoint,
            verify_kwargs={"tokenizers_dir": cfg.tokenizers_dir,
                           "tokenizers": dict(cfg.tokenizers)},
            regenerate=cfg.regenerate, progress=cfg.progress, **(acknowledged or {}))
    return 0


if __name__ == "__main__":  # `python -m ruler.release ...` behaves like `ruler release ...`
    from ruler.commands.main import main

    sys.exit(main(["release", *sys.argv[1:]]))
