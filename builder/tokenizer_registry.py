"""Resolve `--tokenizer` (registry name, local folder, or Hub `org/name@revision`) to files.

Resolution of a registry name, first hit wins:
1. `$RULER_TOKENIZERS/<dir>` (offline machines and CI point this at pinned copies),
2. the user cache `<cache>/tokenizers/<name>/` (filled by earlier downloads; `cache_dir()`),
3. an installed package that ships the tokenizer (e.g. mistral-common's Tekken file),
4. the Hugging Face Hub at the registry's pinned revision (or the tiktoken URL).
Every file is checked against the registry's sha256 (and the chat template the files render
against its pinned hash); a mismatch is an error, never a silent change of the tokenizer a
build claims to use. However it was resolved, a registry name records one identity, the
registry's pins: a package that ships the tokenizer in another format gives the same ids
(tested for every task's prompt), so a build made one way verifies where the other is used.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.resources
import json
import os
import re
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import ClassVar, Iterator, Mapping

from ruler.catalog.chat_template import ChatTemplate, renders_here, special_tokens
from ruler.catalog.tokenizer import (
    GENERIC_FAST_CLASSES,
    HFTokenizer,
    SentencePieceTokenizer,
    TiktokenTokenizer,
    Tokenizer,
    TokenizerIdentity,
    load_hf,
)
from ruler.kernel.atomic import replace_folder, write_bytes_atomic
from ruler.kernel.errors import RulerError
from ruler.kernel.hashing import file_sha256, sha256_text
from ruler.kernel.hub_names import check_config_name
from ruler.kernel.json_record import Decode, FrozenRecord
from ruler.kernel.user_cache import user_cache_root

TOKENIZERS_ENV = "RULER_TOKENIZERS"
CACHE_ENV = "RULER_TOKENIZER_CACHE"
_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


@dataclass(frozen=True)
class PackagedFile(FrozenRecord):
    """An installed package that ships a registry tokenizer in a format of its own."""

    distribution: str
    kind: str  # how the file is loaded: tekken
    file: str  # its path inside the distribution
    sha256: str


@dataclass(frozen=True)
class RegistryEntry(FrozenRecord):
    """One tokenizer of the registry: its format, its folder below `$RULER_TOKENIZERS` (and
    name in the cache), its pinned files (name -> sha256) and chat template, where the Hub
    has them, and other ways to get it (a package; tiktoken's own download)."""

    kind: str  # hf | sentencepiece | tiktoken
    dir: str
    files: dict[str, str]
    repo: str | None = None
    revision: str | None = None  # None: the Hub commit is not recorded (the hashes identify)
    chat_template_sha256: str | None = None
    package: PackagedFile | None = None
    encoding: str = ""  # tiktoken: the encoding's name
    url: str = ""  # tiktoken: where tiktoken downloads its file
    note: str = ""

    DECODE: ClassVar[Mapping[str, Decode]] = {"package": PackagedFile.from_json}


@lru_cache(maxsize=1)
def registry() -> Mapping[str, RegistryEntry]:
    """The committed registry (`ruler.tokenizers_cache/registry.json`, package data)."""
    text = importlib.resources.files("ruler.tokenizers_cache").joinpath("registry.json") \
        .read_text(encoding="utf-8")
    return {k: RegistryEntry.from_json(v) for k, v in json.loads(text).items()
            if not k.startswith("_")}


def cache_dir() -> Path:
    """Downloaded tokenizer files: `$RULER_TOKENIZER_CACHE`, else the user cache's
    `tokenizers/` (the installed package may be read-only)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return user_cache_root() / "tokenizers"


def config_name(name: str) -> str:
    """A dataset config name for a tokenizer (Hub forbids `/` and friends in config names)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "--", name).strip("-.")
    check_config_name(cleaned, f"tokenizer {name!r}")
    return cleaned


def load_tokenizer(spec: str, tokenizers_dir: str | os.PathLike | None = None) -> Tokenizer:
    """Load a tokenizer from a registry name, a local folder or `org/name@revision`.

    The tokenizer remembers how it was loaded: sent to a spawned process, it is loaded there
    again from the same spec and checked to be the same (its identity fingerprint).
    """
    tok = _load(spec, tokenizers_dir)
    tok.reload = (reload_tokenizer, (spec, None if tokenizers_dir is None else str(tokenizers_dir),
                                     tok.identity.fingerprint()))
    return tok


def reload_tokenizer(spec: str, tokenizers_dir: str | None, fingerprint: str) -> Tokenizer:
    """`load_tokenizer` in another process, refusing a tokenizer that is not the same one."""
    tok = load_tokenizer(spec, tokenizers_dir)
    if tok.identity.fingerprint() != fingerprint:
        raise RulerError(f"tokenizer {spec!r} resolved to other files in a worker process "
                         f"(fingerprint {tok.identity.fingerprint()}, expected {fingerprint})")
    return tok


def _load(spec: str, tokenizers_dir: str | os.PathLike | None) -> Tokenizer:
    if spec in registry():
        return _load_registered(spec, registry()[spec], tokenizers_dir)
    path = Path(spec).expanduser()
    if path.exists():
        return _load_folder(path)
    if _HUB_ID.match(spec.split("@")[0]) and "@" in spec:
        return _load_hub(*spec.split("@", 1))
    if _HUB_ID.match(spec) and not spec.startswith((".", "~")):
        raise RulerError(f"{spec!r} is no registry name and no folder here; as a Hub tokenizer "
                         f"it needs a pinned revision: {spec}@<commit sha>")
    if _looks_like_path(spec):
        raise RulerError(f"tokenizer folder {spec} does not exist")
    raise RulerError(f"unknown tokenizer {spec!r}: use a registry name "
                     f"({', '.join(registry())}), a local folder, or a Hub id org/name@revision")


def _looks_like_path(spec: str) -> bool:
    return spec.startswith((".", "~")) or "/" in spec or os.sep in spec


# --- registry names -----------------------------------------------------------------------

def _search_roots(tokenizers_dir) -> list[tuple[str, Path]]:
    roots = []
    if tokenizers_dir:
        roots.append(("tokenizers-dir", Path(tokenizers_dir)))
    if os.environ.get(TOKENIZERS_ENV):
        roots.append(("tokenizers-dir", Path(os.environ[TOKENIZERS_ENV])))
    return roots


def _load_registered(name: str, entry: RegistryEntry, tokenizers_dir) -> Tokenizer:
    files = entry.files
    candidates = [(origin, root / entry.dir) for origin, root in _search_roots(tokenizers_dir)]
    candidates.append(("cache", cache_dir() / name))
    for origin, folder in candidates:
        if all((folder / f).is_file() for f in files):
            _check_hashes(name, folder, files)
            return _build(name, entry, folder, origin)
    if entry.package is not None:
        found = _from_package(name, entry, entry.package)
        if found is not None:
            return found
    if entry.kind == "tiktoken":
        # tiktoken keeps (or downloads) the file itself, checked against its own pinned hash.
        return _build(name, entry, None, "tiktoken")
    return _build(name, entry, _download_registered(name, entry), "hub")


def _check_hashes(name: str, folder: Path, files: Mapping[str, str]) -> dict[str, str]:
    actual = {f: file_sha256(folder / f) for f in files}
    bad = [f"{f} (sha256 {actual[f]}, pinned {files[f]})" for f in files if actual[f] != files[f]]
    if bad:
        raise RulerError(f"tokenizer {name!r} in {folder} does not match the registry pin: "
                         f"{'; '.join(bad)}. Pass the folder path as --tokenizer to use it as an "
                         f"unregistered tokenizer.")
    return actual


def registered_identity(name: str, entry: RegistryEntry, origin: str) -> TokenizerIdentity:
    """The identity a registry name's tokenizer records, whichever way it was obtained (its
    pinned files, its pinned chat template, and every backend that loads it); `origin` says
    where it came from and is not part of the identity."""
    package = entry.package
    return TokenizerIdentity(
        name=name, kind=entry.kind, origin=origin, repo=entry.repo,
        revision=entry.revision, files=dict(entry.files),
        chat_template_sha256=entry.chat_template_sha256, pinned=True,
        other_backends=(package.kind,) if package else ())


def _build(name: str, entry: RegistryEntry, folder: Path | None, origin: str) -> Tokenizer:
    """The registry's tokenizer from its checked files in `folder` (None: tiktoken finds its
    file itself)."""
    identity = registered_identity(name, entry, origin)
    kind = entry.kind
    if kind == "tiktoken":
        return TiktokenTokenizer(_tiktoken_encoding(entry, folder), identity)
    assert folder is not None, "only tiktoken finds its file itself"
    if kind == "hf":
        pins = tuple(sorted(entry.files.items()))
        if direct_files(folder, entry):
            tok = HFTokenizer(folder, identity, direct=_pinned_direct(str(folder), pins),
                              hf_loader=functools.partial(_pinned_hf, str(folder), pins))
        else:
            tok = HFTokenizer(folder, identity, hf=_pinned_hf(str(folder), pins))
        _check_template(name, folder, tok.chat_template, identity.chat_template_sha256)
        return tok
    if kind == "sentencepiece":
        return SentencePieceTokenizer(folder / "tokenizer.model", identity)
    raise RulerError(f"registry entry {name!r} has unknown kind {kind!r}")


def _check_template(name: str, folder: Path, template: str | None, pinned: str | None) -> None:
    """The pinned files fix the chat template, unless a file beside them replaces it
    (transformers reads chat_template.jinja over tokenizer_config.json's template)."""
    actual = sha256_text(template) if template is not None else None
    if actual != pinned:
        raise RulerError(f"tokenizer {name!r} in {folder} renders another chat template than "
                         f"the registry pin (sha256 {actual}, pinned {pinned}): remove the file "
                         f"that replaces it (e.g. chat_template.jinja) or pass the folder path "
                         f"as --tokenizer to use it as an unregistered tokenizer.")


@lru_cache(maxsize=8)
def _pinned_hf(folder: str, pins: tuple[tuple[str, str], ...]):
    """A registry tokenizer's transformers object, loaded once per process per folder and
    pinned content (the hashes were checked just before): loading takes 0.5-3 s, and verify,
    eval and a session of builds load the same tokenizer many times."""
    return load_hf(Path(folder))


#: Files a tokenizer folder may hold besides the pinned ones that transformers never reads.
_NOT_TOKENIZER_FILES = re.compile(r"(LICEN[CS]E|NOTICE|README|USE_POLICY)[\w.-]*|.*\.md|\..*",
                                  re.IGNORECASE)


def direct_files(folder: Path, entry: RegistryEntry) -> bool:
    """Whether a registry tokenizer's folder (its pinned files checked) is loaded without
    transformers (`HFTokenizer`'s `direct`): where transformers' tokenizer of it is the
    tokenizer.json as it is and its template is the config's, rendered as
    `chat_template` renders it. That is: the config names the generic fast class (no
    class of its own that rebuilds the backend), does not split special tokens, has one
    template without assistant-mask blocks, and the folder holds no other file transformers
    reads (chat_template.jinja, special_tokens_map.json, added_tokens.json, ...).
    tests/builder/test_chat_template.py checks every registry tokenizer this accepts against
    transformers: the same backend, special tokens and rendered prompts."""
    pinned = set(entry.files)
    if pinned != {"tokenizer.json", "tokenizer_config.json"}:
        return False
    if any(p.name not in pinned and not _NOT_TOKENIZER_FILES.fullmatch(p.name)
           for p in folder.iterdir()):
        return False
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    return (config.get("tokenizer_class") in GENERIC_FAST_CLASSES
            and not config.get("split_special_tokens", False)
            and renders_here(config.get("chat_template")))


@lru_cache(maxsize=8)
def _pinned_direct(folder: str, pins: tuple[tuple[str, str], ...]):
    """A `direct_files` tokenizer's backend and template, loaded once per process per folder
    and pinned content (as `_pinned_hf`)."""
    import tokenizers

    config = json.loads((Path(folder) / "tokenizer_config.json").read_text(encoding="utf-8"))
    backend = tokenizers.Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
    template = config.get("chat_template")
    return backend, (ChatTemplate(template, special_tokens(config))
                     if template is not None else None)


@lru_cache(maxsize=2)
def _pinned_tekken(path: str, sha256: str):
    """A package's Tekken file, loaded once per process per pinned content (as `_pinned_hf`)."""
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    return Tekkenizer.from_file(path)


def _with_template_hash(tok: HFTokenizer) -> HFTokenizer:
    if tok.chat_template is not None:
        object.__setattr__(tok.identity, "chat_template_sha256", sha256_text(tok.chat_template))
    return tok


@contextmanager
def _env(key: str, value: str) -> Iterator[None]:
    old = os.environ.get(key)
    os.environ[key] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = old


def _tiktoken_encoding(entry: RegistryEntry, folder: Path | None):
    """Build the tiktoken encoding offline by seeding tiktoken's own cache with the file."""
    import tiktoken

    (file_name,) = entry.files
    cache = cache_dir() / "tiktoken-cache"
    cache.mkdir(parents=True, exist_ok=True)
    cached = cache / hashlib.sha1(entry.url.encode()).hexdigest()
    if folder is not None and not cached.exists():
        write_bytes_atomic(cached, (folder / file_name).read_bytes())
    with _env("TIKTOKEN_CACHE_DIR", str(cache)):
        # tiktoken checks the file against its own expected hash, and downloads it if absent.
        try:
            return tiktoken.get_encoding(entry.encoding)
        except Exception as e:  # network (requests), a bad cached file: one clear message
            raise RulerError(
                f"could not load the {entry.encoding} encoding (downloaded from "
                f"{entry.url}): {type(e).__name__}: {_first_line(e)}. Offline, set "
                f"${TOKENIZERS_ENV} to a folder holding {entry.dir}/{file_name}") from None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else ""


def _from_package(name: str, entry: RegistryEntry, pkg: PackagedFile) -> Tokenizer | None:
    """The registry's tokenizer from an installed package that ships it (its file pinned
    too). Tests prove it gives the pinned folder's ids, so it records the same identity."""
    try:
        dist = importlib.metadata.distribution(pkg.distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file(pkg.file)))
    if not path.is_file():
        return None
    where = f"{pkg.distribution}=={dist.version}"
    actual = file_sha256(path)
    if actual != pkg.sha256:
        raise RulerError(f"tokenizer {name!r}: the installed {where} ships {path.name} with "
                         f"sha256 {actual}, which does not match the registry pin "
                         f"{pkg.sha256}: install the version in constraints.txt, or set "
                         f"${TOKENIZERS_ENV} to a folder holding {entry.dir}/ with the "
                         f"pinned files.")
    if pkg.kind == "tekken":
        from ruler.builder.tokenizer_tekken import TekkenTokenizer

        return TekkenTokenizer(path, registered_identity(name, entry,
                                                         f"package:{where} ({path.name})"),
                               tekken=_pinned_tekken(str(path), actual))
    raise RulerError(f"registry entry {name!r}: unknown package kind {pkg.kind!r}")


def _download_registered(name: str, entry: RegistryEntry) -> Path:
    target = cache_dir() / name
    if entry.repo is None:
        raise RulerError(f"tokenizer {name!r} is not in ${TOKENIZERS_ENV} or the cache, and the "
                         f"registry names no Hub repo to download it from")
    _hub_download(entry.repo, entry.revision or "main", list(entry.files), target)
    try:
        _check_hashes(name, target, entry.files)
    except RulerError:
        shutil.rmtree(target, ignore_errors=True)  # never keep unpinned files in the cache
        raise
    return target


#: The most bytes one tokenizer file may have (its size is pinned nowhere; the largest
#: tokenizer.json of the registry is some 30 MB): a server sending more is refused there.
TOKENIZER_FILE_CEILING = 200_000_000


def _hub_download(repo: str, revision: str, files: list[str], target: Path,
                  optional: tuple[str, ...] = ()) -> None:
    """Download `files` of a Hub model repo into `target`, atomically (all or nothing), each
    bounded in size and time (`ruler.kernel.download.hub_file`)."""
    import tempfile

    from huggingface_hub.errors import EntryNotFoundError

    from ruler.kernel.download import Limits, hub_file
    from ruler.kernel.scrub import scrub

    # Read at call time, never at import, so a mirror or a test server can be chosen per run.
    endpoint = os.environ.get("HF_ENDPOINT") or None
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}.") as tmp:
        staging = Path(tmp) / "files"
        staging.mkdir()
        try:
            for f in [*files, *optional]:
                try:  # its metadata first, one request without retries: a Hub that cannot
                    # be reached fails at once
                    hub_file(repo, f, revision, staging / f, endpoint=endpoint,
                             max_bytes=TOKENIZER_FILE_CEILING, limits=Limits())
                except EntryNotFoundError:
                    if f in optional:
                        continue
                    raise
        except Exception as e:  # network, auth, offline mode: one clear message
            raise RulerError(scrub(
                f"could not download tokenizer files {files} of {repo}@{revision} from the "
                f"Hub: {type(e).__name__}: {_first_line(e)}. Offline, set ${TOKENIZERS_ENV} "
                f"to a folder holding the pinned files.")) from None
        replace_folder(staging, target)


# --- folders and Hub ids ------------------------------------------------------------------

def _load_folder(path: Path, name: str | None = None, origin: str = "folder",
                 repo: str | None = None, revision: str | None = None) -> Tokenizer:
    # The resolved path names the config: `some/dir/..` is `some`, never `..`.
    resolved = path.resolve()
    name = name or config_name(resolved.name if path.is_dir() else resolved.stem)
    if path.is_dir() and (path / "tokenizer.json").is_file():
        files = {f.name: file_sha256(f) for f in sorted(path.iterdir())
                 if f.name in ("tokenizer.json", "tokenizer_config.json",
                               "special_tokens_map.json")}
        with _loading(path):
            return _with_template_hash(HFTokenizer(path, TokenizerIdentity(
                name=name, kind="hf", origin=origin, repo=repo, revision=revision,
                files=files)))
    model = path / "tokenizer.model" if path.is_dir() else path
    if model.is_file() and model.suffix in (".model", ""):
        with _loading(path):
            return SentencePieceTokenizer(model, TokenizerIdentity(
                name=name, kind="sentencepiece", origin=origin,
                files={model.name: file_sha256(model)}))
    raise RulerError(f"{path} is not a tokenizer folder: expected tokenizer.json (Hugging Face) "
                     f"or tokenizer.model (SentencePiece)")


@contextmanager
def _loading(path: Path) -> Iterator[None]:
    """A folder whose files do not load (truncated, not JSON, wrong format) is one clear error."""
    try:
        yield
    except RulerError:
        raise
    except Exception as e:  # tokenizers, transformers, sentencepiece raise many types
        raise RulerError(f"cannot load the tokenizer in {path}: {type(e).__name__}: "
                         f"{_first_line(e)} (a truncated or damaged file?)") from None


def _load_hub(repo: str, revision: str) -> Tokenizer:
    target = cache_dir() / "hub" / config_name(f"{repo}@{revision}")
    if not (target / "tokenizer.json").is_file():
        _hub_download(repo, revision, ["tokenizer.json"], target,
                      optional=("tokenizer_config.json", "special_tokens_map.json"))
    return _load_folder(target, name=config_name(repo), origin="hub", repo=repo, revision=revision)
