"""A loopback, Hub-compatible HTTP server for release tests (huggingface_hub 2.4 client).

It implements only what `HfApi` calls during `ruler release`, with the response shapes the
client parses (shared notes §5.5, huggingface_hub's `_commit_api.py` and `lfs.py`):
  POST /api/repos/create                          -> {"url": ...}; 409 + url when it exists
  GET  /api/datasets/{ns}/{name}/refs             -> branches / tags / converts
  GET  /api/datasets/{ns}/{name}[/revision/{rev}] -> {"id", "sha", "siblings"}
  POST /api/validate-yaml                         -> parses the README front matter for real
  POST /api/datasets/{ns}/{name}/preupload/{rev}  -> "lfs" or "regular" per file, as the Hub
                                                     decides (below), + the oid of the file
                                                     already at that path
  POST /datasets/{ns}/{name}.git/info/lfs/objects/batch  -> LFS batch API: per object an
                                                     upload action (a signed URL on the storage
                                                     server) and a verify action, or no action
                                                     when the repo's LFS storage holds it
  POST /datasets/{ns}/{name}.git/info/lfs/objects/verify -> 200 once the object is stored
  POST /api/complete_multipart?...                -> joins the parts of a multipart upload
  POST /api/datasets/{ns}/{name}/commit/{rev}     -> NDJSON; honours parentCommit (412);
                                                     "lfsFile" lines need a stored object,
                                                     binary "file" lines are refused
  POST /api/datasets/{ns}/{name}/tag/{rev}        -> 409 when the tag exists
and what downloads call (`hf_hub_download`, `snapshot_download`, `hf download`, and
`datasets.load_dataset` of the repo at a revision, through HfFileSystem):
  HEAD/GET /datasets/{ns}/{name}/resolve/{rev}/{path}     -> the bytes, X-Repo-Commit, ETag;
                                                     an LFS file: 302 to the storage server with
                                                     X-Linked-Etag (sha256) and X-Linked-Size
  GET  /api/datasets/{ns}/{name}/tree/{rev}[/{path}]      -> files and folders (?recursive),
                                                     with "lfs" {oid, size, pointerSize}
  POST /api/datasets/{ns}/{name}/paths-info/{rev}         -> the listed paths that exist
  DELETE /api/repos/delete                                -> removes the repo (and its LFS
                                                     objects)

Large files. The Hub answers preupload with "lfs" for a file a `filter=lfs` pattern of the
repo's .gitattributes matches (`*.parquet` is in the default one), for a binary file (a NUL
byte in the 512-byte sample) and for any file of 10 MiB or more; the client then asks the
LFS batch endpoint, PUTs the bytes to the signed `href` it got (S3 on the real Hub, here a
second loopback server, `storage_endpoint`, that takes no Hub token and records whether one
was sent), calls the verify action, and commits an `lfsFile` line (path, sha256, size) that
the Hub accepts only when that object is stored. Objects live per repo, keyed by sha256, and
are served back from the storage server, so a download after a release returns exactly the
bytes uploaded. `lfs_multipart_chunk = N` makes objects larger than N bytes use the multipart
transfer (a `chunk_size` header, one signed URL per part, a completion POST). Xet is not
served: huggingface_hub 2.4 uploads LFS-mode files through Xet whenever `hf_xet` is installed
(it never asks the server), so clients of this fake run with `HF_HUB_DISABLE_XET` (see
`hub_for_this_process`); a client that tries Xet gets a 501 from the write-token route.

A revision is `main`, a tag or a commit sha. Every Hub request needs `Authorization: Bearer
<token>` (401 otherwise); storage URLs are signed instead. `fail(step, status, message)`
makes one endpoint answer an error, so tests can prove nothing is committed or tagged;
`fail_uploads(times, status)` makes the next `times` PUTs to storage fail (status None: the
connection drops in the middle of the body). `reflect_headers = True` makes every error
echo the request's headers, as some misconfigured servers and proxies do; `echo_token = True`
puts the request's token into the upload URLs the batch endpoint hands out (the token must
still never be printed). A repo's files at its head are mirrored under `root/<ns>/<name>/` so
tests can `load_dataset` them.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import hmac
import json
import os
import shutil
import socket
import struct
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlparse

import yaml

STEPS = ("create", "refs", "info", "validate", "preupload", "lfs-batch", "lfs-verify", "commit",
         "tag", "delete")
#: Files this large go to LFS whatever they hold (the Hub's limit for regular git blobs).
LFS_SIZE = 10 * 1024 * 1024
DEFAULT_GITATTRIBUTES = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"


@dataclass
class Commit:
    sha: str
    parent: str | None
    files: dict[str, bytes]
    message: str
    lfs: frozenset[str] = frozenset()  # paths stored as LFS pointers (their bytes in storage)


@dataclass
class Repo:
    repo_id: str
    private: bool
    commits: list[Commit] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    lfs_objects: dict[str, bytes] = field(default_factory=dict)  # sha256 hex -> bytes
    parts: dict[str, dict[int, bytes]] = field(default_factory=dict)  # multipart in progress

    @property
    def head(self) -> Commit:
        return self.commits[-1]

    def commit(self, sha: str) -> Commit | None:
        return next((c for c in self.commits if c.sha == sha), None)

    def at(self, revision: str) -> Commit | None:
        """The commit a revision names: main, a tag or a commit sha."""
        if revision == "main":
            return self.head
        return self.commit(self.tags.get(revision, revision))


def _blob_oid(data: bytes) -> str:
    """git's blob id, as the Hub reports a file's `oid`."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _sha(*parts: bytes) -> str:
    h = hashlib.sha1()
    for p in parts:
        h.update(p)
    return h.hexdigest()


def lfs_pointer(data: bytes) -> bytes:
    """The git-lfs pointer file git stores in place of an LFS file."""
    return (f"version https://git-lfs.github.com/spec/v1\noid sha256:"
            f"{hashlib.sha256(data).hexdigest()}\nsize {len(data)}\n").encode()


def _lfs_patterns(commit: Commit) -> list[str]:
    text = commit.files.get(".gitattributes", b"").decode("utf-8", "replace")
    return [line.split()[0] for line in text.splitlines()
            if line.strip() and not line.startswith("#") and "filter=lfs" in line.split()[1:]]


def wants_lfs(commit: Commit, path: str, size: int, sample: bytes) -> bool:
    """The Hub's choice for a file: LFS when .gitattributes says so, when it is binary, or
    when it is large. (Empty files are always regular; the client enforces that itself.)"""
    name = path.rsplit("/", 1)[-1]
    if any(fnmatch.fnmatchcase(path if "/" in pat else name, pat)
           for pat in _lfs_patterns(commit)):
        return True
    return size >= LFS_SIZE or b"\0" in sample[:512]


class FakeHub:
    """Start with `with FakeHub(tmp_path, token="hf_x") as hub:`; `hub.endpoint` for HfApi."""

    def __init__(self, root: Path, token: str, timeout: float = 10.0):
        self.root = Path(root)
        self.token = token
        self.timeout = timeout
        self.repos: dict[str, Repo] = {}
        self.failures: dict[str, tuple[int, str]] = {}
        self.requests: list[tuple[str, str]] = []
        self.bodies: list[bytes] = []  # every request body, to check no secret leaks into one
        # storage side: (method, path, whether an Authorization header came along)
        self.storage_requests: list[tuple[str, str, bool]] = []
        self.upload_modes: dict[str, str] = {}  # path -> the mode preupload last answered
        self.reflect_headers = False
        self.echo_token = False
        self.lfs_multipart_chunk: int | None = None
        # per coming PUT: False = it succeeds, a status = it fails so, None = the connection drops
        self._upload_failures: list[int | bool | None] = []
        self._key = os.urandom(16)  # signs storage URLs
        self._lock = threading.Lock()
        self._servers: list[ThreadingHTTPServer] = []
        self._threads: list[threading.Thread] = []

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> "FakeHub":
        for base in (_Handler, _StorageHandler):
            handler = type(base.__name__, (base,), {"fake": self, "timeout": self.timeout})
            server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
            server.daemon_threads = True
            thread = threading.Thread(target=server.serve_forever,
                                      kwargs={"poll_interval": 0.02}, daemon=True)
            thread.start()
            self._servers.append(server)
            self._threads.append(thread)
        return self

    def __exit__(self, *exc) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=self.timeout)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._servers[0].server_address[1]}"

    @property
    def storage_endpoint(self) -> str:
        """Another origin, as S3 and the CDN are: the client sends it no Hub token."""
        return f"http://127.0.0.1:{self._servers[1].server_address[1]}"

    # -- test controls ----------------------------------------------------------------------
    def fail(self, step: str, status: int, message: str) -> None:
        assert step in STEPS, step
        self.failures[step] = (status, message)

    def fail_uploads(self, times: int, status: int | None = None, after: int = 0) -> None:
        """`times` PUTs to storage, after the next `after` ones, fail: with `status`, or
        (None) by dropping the connection half-way through the body."""
        with self._lock:
            self._upload_failures = [False] * after + [status] * times

    def steps(self) -> list[str]:
        return [f"{m} {p}" for m, p in self.requests]

    def stored_dir(self, repo_id: str) -> Path:
        return self.root / repo_id

    def sign(self, path: str) -> str:
        return hmac.new(self._key, path.encode(), hashlib.sha256).hexdigest()[:32]

    def signed(self, base: str, path: str, extra: str = "") -> str:
        return f"{base}{path}?X-Amz-Signature={self.sign(path)}{extra}"

    # -- state changes (under the lock) -------------------------------------------------------
    def create_repo(self, repo_id: str, private: bool) -> bool:
        with self._lock:
            if repo_id in self.repos:
                return False
            attrs = DEFAULT_GITATTRIBUTES
            repo = Repo(repo_id, private)
            repo.commits.append(Commit(_sha(repo_id.encode(), attrs), None,
                                       {".gitattributes": attrs}, "initial commit"))
            self.repos[repo_id] = repo
            self._mirror(repo)
            return True

    def apply_commit(self, repo: Repo, message: str, adds: dict[str, bytes],
                     deletes: list[str], lfs: frozenset[str] = frozenset()) -> Commit:
        with self._lock:
            files = dict(repo.head.files)
            stored_lfs = set(repo.head.lfs)
            for path in deletes:
                if path.endswith("/"):
                    files = {k: v for k, v in files.items() if not k.startswith(path)}
                else:
                    files.pop(path, None)
            files.update(adds)
            stored_lfs = {p for p in stored_lfs if p in files and p not in adds} | set(lfs)
            digest = _sha(repo.head.sha.encode(),
                          *(k.encode() + v for k, v in sorted(files.items())))
            commit = Commit(digest, repo.head.sha, files, message, frozenset(stored_lfs))
            repo.commits.append(commit)
            self._mirror(repo)
            return commit

    def store_object(self, repo: Repo, data: bytes) -> str:
        with self._lock:
            oid = hashlib.sha256(data).hexdigest()
            repo.lfs_objects[oid] = data
            return oid

    def next_upload_failure(self) -> tuple[bool, int | None]:
        with self._lock:
            if not self._upload_failures:
                return False, None
            status = self._upload_failures.pop(0)
            return (False, None) if status is False else (True, status)

    def _mirror(self, repo: Repo) -> None:
        target = self.stored_dir(repo.repo_id)
        shutil.rmtree(target, ignore_errors=True)
        for path, data in repo.head.files.items():
            dest = target / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)


@contextmanager
def hub_for_this_process(root: Path, token: str, monkeypatch):
    """A FakeHub that this process's huggingface_hub uses for everything: uploads, downloads
    (`hf_hub_download`, `snapshot_download`, `ruler score --data ORG/NAME`), with the cache under
    `root`. huggingface_hub reads its endpoint, cache, offline flag and Xet switch at import
    (and conftest sets offline mode), so they are patched here, and HF_ENDPOINT/HF_TOKEN/
    HF_HUB_DISABLE_XET are set for subprocesses. Xet is off because the fake serves large
    files through LFS only (see the module docstring)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(Path(root) / "hub_cache"))
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    with FakeHub(Path(root) / "hub", token=token) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.setattr(constants, "ENDPOINT", server.endpoint)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                            server.endpoint + "/{repo_id}/resolve/{revision}/{filename}")
        yield server


class _Base(BaseHTTPRequestHandler):
    fake: FakeHub
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate sends on a kept-alive connection: with Nagle's
    # algorithm the last one waits for the client's delayed ACK, ~40 ms a request (the
    # release tests took 36 s instead of 27).
    disable_nagle_algorithm = True

    def log_message(self, *args) -> None:  # keep pytest output clean
        pass

    def _raw(self, status: int, body: bytes, content_type: str,
             headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _signed(self, url) -> bool:
        sig = parse_qs(url.query).get("X-Amz-Signature", [""])[0]
        return hmac.compare_digest(sig, self.fake.sign(url.path))


class _Handler(_Base):
    # -- plumbing -----------------------------------------------------------------------------
    def _send(self, status: int, payload: dict | list,
              content_type: str = "application/json") -> None:
        if status >= 400 and self.fake.reflect_headers and isinstance(payload, dict) \
                and "error" in payload:
            echoed = ", ".join(f"{k}: {v}" for k, v in self.headers.items())
            payload = {**payload, "error": f"{payload['error']} (request headers: {echoed})"}
        headers = {}
        if status >= 400 and isinstance(payload, dict) and "error" in payload:
            headers["X-Error-Message"] = payload["error"]
        self._raw(status, json.dumps(payload).encode(), content_type, headers)

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.fake.bodies.append(body)
        return body

    def _authorized(self) -> bool:
        if self.headers.get("Authorization") == f"Bearer {self.fake.token}":
            return True
        self._send(401, {"error": "Invalid credentials in Authorization header"})
        return False

    def _failed(self, step: str) -> bool:
        if step in self.fake.failures:
            status, message = self.fake.failures[step]
            self._send(status, {"error": message})
            return True
        return False

    def _repo(self, ns: str, name: str) -> Repo | None:
        repo = self.fake.repos.get(f"{ns}/{name}")
        if repo is None:
            self._raw(404, json.dumps({"error": "Repository not found"}).encode(),
                      "application/json", {"X-Error-Code": "RepoNotFound",
                                           "X-Error-Message": "Repository not found"})
        return repo

    def _route(self, method: str) -> None:
        url = urlparse(self.path)
        path = url.path
        self.fake.requests.append((method, path))
        body = self._body() if method in ("POST", "DELETE") else b""
        parts = [unquote(p) for p in path.strip("/").split("/")]
        try:
            # signed like the storage URLs: the client sends no token with it
            if method == "POST" and parts == ["api", "complete_multipart"]:
                return self._complete_multipart(url, json.loads(body))
            if not self._authorized():
                return
            if method == "POST" and parts == ["api", "repos", "create"]:
                return self._create(json.loads(body))
            if method == "POST" and parts == ["api", "validate-yaml"]:
                return self._validate(json.loads(body))
            if method in ("GET", "HEAD") and len(parts) >= 6 and parts[0] == "datasets" \
                    and parts[3] == "resolve":
                return self._resolve(parts[1], parts[2], parts[4], "/".join(parts[5:]),
                                     body=method == "GET")
            if method == "POST" and len(parts) == 7 and parts[0] == "datasets" \
                    and parts[2].endswith(".git") and parts[3:6] == ["info", "lfs", "objects"]:
                ns, name = parts[1], parts[2][:-len(".git")]
                if parts[6] == "batch":
                    return self._lfs_batch(ns, name, json.loads(body))
                if parts[6] == "verify":
                    return self._lfs_verify(ns, name, json.loads(body))
            if method == "DELETE" and parts == ["api", "repos", "delete"]:
                return self._delete(json.loads(body))
            if len(parts) >= 4 and parts[:2] == ["api", "datasets"]:
                ns, name, rest = parts[2], parts[3], parts[4:]
                if method == "GET" and rest[:1] == ["tree"] and len(rest) >= 2:
                    recursive = parse_qs(url.query).get("recursive", ["false"])[0] == "true"
                    return self._tree(ns, name, rest[1], "/".join(rest[2:]), recursive)
                if method == "POST" and rest[:1] == ["paths-info"] and len(rest) == 2:
                    return self._paths_info(ns, name, rest[1], parse_qs(body.decode()))
                if method == "GET" and rest == ["refs"]:
                    return self._refs(ns, name)
                if method == "GET" and rest[:1] == ["xet-write-token"]:
                    return self._send(501, {"error": "this Hub serves large files through "
                                                     "LFS only, not Xet"})
                if method == "GET" and (rest == [] or rest[:1] == ["revision"]):
                    return self._info(ns, name, rest[1] if len(rest) > 1 else "main")
                if method == "POST" and rest[:1] == ["preupload"]:
                    return self._preupload(ns, name, rest[1], json.loads(body))
                if method == "POST" and rest[:1] == ["commit"]:
                    return self._commit(ns, name, body)
                if method == "POST" and rest[:1] == ["tag"]:
                    return self._tag(ns, name, rest[1], json.loads(body))
            self._send(404, {"error": f"fake hub: no route for {method} {path}"})
        except (ValueError, KeyError, TypeError) as e:
            self._send(400, {"error": f"fake hub: bad request: {e}"})

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_HEAD(self) -> None:
        self._route("HEAD")

    def do_DELETE(self) -> None:
        self._route("DELETE")

    # -- endpoints ----------------------------------------------------------------------------
    def _create(self, payload: dict) -> None:
        if self._failed("create"):
            return
        assert payload.get("type") == "dataset", payload
        repo_id = f"{payload['organization']}/{payload['name']}"
        url = f"{self.fake.endpoint}/datasets/{repo_id}"
        if self.fake.create_repo(repo_id, bool(payload.get("private"))):
            self._send(200, {"url": url})
        else:
            self._send(409, {"error": "You already created this dataset repo", "url": url})

    def _delete(self, payload: dict) -> None:
        if self._failed("delete"):
            return
        repo_id = f"{payload['organization']}/{payload['name']}"
        with self.fake._lock:
            if self.fake.repos.pop(repo_id, None) is None:
                return self._send(404, {"error": "Repository not found"})
        shutil.rmtree(self.fake.stored_dir(repo_id), ignore_errors=True)
        self._send(200, {})

    def _refs(self, ns: str, name: str) -> None:
        if self._failed("refs") or (repo := self._repo(ns, name)) is None:
            return
        self._send(200, {
            "branches": [{"name": "main", "ref": "refs/heads/main", "targetCommit": repo.head.sha}],
            "converts": [],
            "tags": [{"name": t, "ref": f"refs/tags/{t}", "targetCommit": sha}
                     for t, sha in sorted(repo.tags.items())],
        })

    def _info(self, ns: str, name: str, revision: str) -> None:
        if self._failed("info") or (repo := self._repo(ns, name)) is None:
            return
        commit = repo.head if revision == "main" else repo.commit(repo.tags.get(revision, revision))
        if commit is None:
            return self._send(404, {"error": f"Invalid rev id: {revision}"})
        self._send(200, {"id": repo.repo_id, "sha": commit.sha, "private": repo.private,
                         "siblings": [{"rfilename": f} for f in sorted(commit.files)]})

    def _validate(self, payload: dict) -> None:
        if self._failed("validate"):
            return
        content = payload["content"]
        errors = []
        if content.startswith("---\n"):
            try:
                yaml.safe_load(content.split("---\n", 2)[1])
            except yaml.YAMLError as e:
                errors.append({"message": f"Invalid YAML: {e}"})
        self._send(400 if errors else 200, {"errors": errors, "warnings": []})

    def _preupload(self, ns: str, name: str, revision: str, payload: dict) -> None:
        if self._failed("preupload") or (repo := self._repo(ns, name)) is None:
            return
        at = repo.at(revision) or repo.head
        files = []
        for f in payload["files"]:
            lfs = wants_lfs(at, f["path"], int(f["size"]), base64.b64decode(f["sample"]))
            mode = "lfs" if lfs else "regular"
            self.fake.upload_modes[f["path"]] = mode
            entry = {"path": f["path"], "uploadMode": mode, "shouldIgnore": False}
            if (old := at.files.get(f["path"])) is not None:  # lets the client skip no-ops
                entry["oid"] = (hashlib.sha256(old).hexdigest() if f["path"] in at.lfs
                                else _blob_oid(old))
            files.append(entry)
        self._send(200, {"files": files})

    def _lfs_batch(self, ns: str, name: str, payload: dict) -> None:
        if self._failed("lfs-batch") or (repo := self._repo(ns, name)) is None:
            return
        if payload.get("operation") != "upload" or payload.get("hash_algo", "sha256") != "sha256":
            return self._send(422, {"error": f"unsupported LFS batch request {payload!r}"})
        fake, repo_path = self.fake, f"/{ns}/{name}"
        credential = ""
        if fake.echo_token:  # a server that leaks the caller's token into the URLs it returns
            credential = "&X-Amz-Credential=" + quote(
                (self.headers.get("Authorization") or "").removeprefix("Bearer "))
        chunk = fake.lfs_multipart_chunk
        objects, multipart = [], False
        for obj in payload["objects"]:
            oid, size = obj["oid"], int(obj["size"])
            stored = repo.lfs_objects.get(oid)
            if stored is not None and len(stored) == size:
                objects.append({"oid": oid, "size": size, "authenticated": True})
                continue
            verify = {"href": f"{fake.endpoint}/datasets{repo_path}.git/info/lfs/objects/verify"}
            if chunk and size > chunk:
                multipart = True
                n_parts = -(-size // chunk)
                header = {"chunk_size": str(chunk)}
                for i in range(1, n_parts + 1):
                    header[str(i)] = fake.signed(fake.storage_endpoint,
                                                 f"/upload{repo_path}/{oid}/{i}", credential)
                upload = {"href": fake.signed(fake.endpoint, "/api/complete_multipart",
                                              f"&repo={quote(repo.repo_id)}&oid={oid}"),
                          "header": header}
            else:
                upload = {"href": fake.signed(fake.storage_endpoint, f"/upload{repo_path}/{oid}",
                                              credential)}
            objects.append({"oid": oid, "size": size, "authenticated": True,
                            "actions": {"upload": upload, "verify": verify}})
        self._send(200, {"transfer": "multipart" if multipart else "basic", "objects": objects,
                         "hash_algo": "sha256"}, "application/vnd.git-lfs+json")

    def _lfs_verify(self, ns: str, name: str, payload: dict) -> None:
        if self._failed("lfs-verify") or (repo := self._repo(ns, name)) is None:
            return
        stored = repo.lfs_objects.get(payload["oid"])
        if stored is None or len(stored) != int(payload["size"]):
            return self._send(404, {"error": f"LFS object {payload['oid']} was not uploaded"})
        self._send(200, {})

    def _complete_multipart(self, url, payload: dict) -> None:
        if not self._signed(url):
            return self._send(403, {"error": "bad signature"})
        query = parse_qs(url.query)
        repo = self.fake.repos.get(query["repo"][0])
        oid = query["oid"][0]
        if repo is None or payload.get("oid") != oid:
            return self._send(404, {"error": "no such upload"})
        with self.fake._lock:
            parts = repo.parts.pop(oid, {})
        numbers = [p["partNumber"] for p in payload["parts"]]
        if numbers != list(range(1, len(parts) + 1)) or any(
                p["etag"] != f'"{hashlib.md5(parts[p["partNumber"]]).hexdigest()}"'
                for p in payload["parts"]):
            return self._send(400, {"error": "the parts listed are not the parts uploaded"})
        data = b"".join(parts[i] for i in numbers)
        if hashlib.sha256(data).hexdigest() != oid:
            return self._send(400, {"error": f"the parts do not hash to {oid}"})
        self.fake.store_object(repo, data)
        self._send(200, {})

    def _commit(self, ns: str, name: str, body: bytes) -> None:
        if (repo := self._repo(ns, name)) is None:
            return
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        header = next(x["value"] for x in lines if x["key"] == "header")
        parent = header.get("parentCommit")
        if parent is not None and parent != repo.head.sha:
            return self._send(412, {"error": f"A commit has happened since. Please refresh and "
                                             f"try again. (parent {parent} is not the head)"})
        if self._failed("commit"):
            return
        adds, lfs = {}, set()
        for x in lines:
            value = x["value"]
            if x["key"] == "file":
                data = base64.b64decode(value["content"])
                if wants_lfs(repo.head, value["path"], len(data), data[:512]):
                    return self._send(400, {"error": f"Your push was rejected because it "
                                                     f"contains binary files ({value['path']}): "
                                                     f"store them with LFS or Xet"})
                adds[value["path"]] = data
            elif x["key"] == "lfsFile":
                stored = repo.lfs_objects.get(value["oid"])
                if value.get("algo", "sha256") != "sha256" or stored is None or \
                        ("size" in value and len(stored) != value["size"]):
                    return self._send(400, {"error": f"LFS pointer of {value['path']} points to "
                                                     f"an object that was not uploaded "
                                                     f"({value['oid']})"})
                adds[value["path"]] = stored
                lfs.add(value["path"])
        deletes = [x["value"]["path"] for x in lines if x["key"] in ("deletedFile",
                                                                    "deletedFolder")]
        commit = self.fake.apply_commit(repo, header.get("summary", ""), adds, deletes,
                                        frozenset(lfs))
        self._send(200, {"commitUrl": f"{self.fake.endpoint}/datasets/{repo.repo_id}/commit/"
                                      f"{commit.sha}",
                         "commitOid": commit.sha, "pullRequestUrl": None})

    def _tag(self, ns: str, name: str, revision: str, payload: dict) -> None:
        if self._failed("tag") or (repo := self._repo(ns, name)) is None:
            return
        tag = payload["tag"]
        if tag in repo.tags:
            return self._send(409, {"error": f"Tag {tag} already exists"})
        target = repo.head if revision == "main" else repo.commit(revision)
        if target is None:
            return self._send(404, {"error": f"Invalid rev id: {revision}"})
        repo.tags[tag] = target.sha
        self._send(200, {})

    # -- downloads ------------------------------------------------------------------------------
    def _commit_at(self, ns: str, name: str, revision: str) -> Commit | None:
        if (repo := self._repo(ns, name)) is None:
            return None
        commit = repo.at(revision)
        if commit is None:
            self._raw(404, b"", "text/plain", {"X-Error-Code": "RevisionNotFound",
                                               "X-Error-Message": f"Invalid rev id: {revision}"})
        return commit

    def _resolve(self, ns: str, name: str, revision: str, path: str, body: bool) -> None:
        if (commit := self._commit_at(ns, name, revision)) is None:
            return
        data = commit.files.get(path)
        if data is None:
            return self._raw(404, b"", "text/plain", {
                "X-Error-Code": "EntryNotFound",
                "X-Error-Message": f"{path} does not exist at {revision}"})
        if path in commit.lfs:  # as the Hub does: a redirect to the object on the CDN
            oid = hashlib.sha256(data).hexdigest()
            return self._raw(302, b"", "text/plain", {
                "Location": self.fake.signed(self.fake.storage_endpoint,
                                             f"/objects/{ns}/{name}/{oid}"),
                "ETag": f'"{_blob_oid(lfs_pointer(data))}"', "X-Linked-Etag": f'"{oid}"',
                "X-Linked-Size": str(len(data)), "X-Repo-Commit": commit.sha})
        self.send_response(200)
        self.send_header("ETag", f'"{_blob_oid(data)}"')
        self.send_header("X-Repo-Commit", commit.sha)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    @staticmethod
    def _entries(commit: Commit, paths: list[str]) -> list[dict]:
        """Tree entries (files, then the folders that hold files) for exactly `paths`."""
        folders = {"/".join(f.split("/")[:i]) for f in commit.files
                   for i in range(1, f.count("/") + 1)}
        out = []
        for p in paths:
            if p in commit.files:
                data = commit.files[p]
                entry = {"type": "file", "oid": _blob_oid(data), "size": len(data), "path": p}
                if p in commit.lfs:
                    pointer = lfs_pointer(data)
                    entry["oid"] = _blob_oid(pointer)
                    entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                                    "pointerSize": len(pointer)}
                out.append(entry)
            elif p in folders:
                out.append({"type": "directory", "oid": _sha(p.encode()), "size": 0, "path": p})
        return out

    def _tree(self, ns: str, name: str, revision: str, folder: str, recursive: bool) -> None:
        if (commit := self._commit_at(ns, name, revision)) is None:
            return
        prefix = f"{folder}/" if folder else ""
        below = {f[len(prefix):] for f in commit.files if f.startswith(prefix)}
        if folder and not below:
            return self._send(404, {"error": f"{folder} does not exist at {revision}"})
        if recursive:
            names = {"/".join(r.split("/")[:i]) for r in below for i in range(1, r.count("/") + 2)}
        else:
            names = {r.split("/")[0] for r in below}
        self._send(200, self._entries(commit, sorted(prefix + n for n in names)))

    def _paths_info(self, ns: str, name: str, revision: str, form: dict) -> None:
        if (commit := self._commit_at(ns, name, revision)) is None:
            return
        self._send(200, self._entries(commit, form.get("paths", [])))


class _StorageHandler(_Base):
    """S3 and the CDN: signed URLs, no Hub token. PUT /upload/{ns}/{name}/{oid}[/{part}]
    stores an object (the bytes must hash to the oid) or a part of one; GET/HEAD
    /objects/{ns}/{name}/{oid} serves an object."""

    def _error(self, status: int, code: str, message: str) -> None:
        body = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code>"
                f"<Message>{message}</Message></Error>").encode()
        self._raw(status, body, "application/xml")

    def _start(self, method: str):
        url = urlparse(self.path)
        self.fake.storage_requests.append(
            (method, url.path, self.headers.get("Authorization") is not None))
        if not self._signed(url):
            self._error(403, "SignatureDoesNotMatch", "The request signature we calculated "
                                                      "does not match the signature you provided")
            return None
        return [unquote(p) for p in url.path.strip("/").split("/")]

    def do_PUT(self) -> None:
        parts = self._start("PUT")
        if parts is None:
            return
        length = int(self.headers.get("Content-Length") or 0)
        fail, status = self.fake.next_upload_failure()
        if fail and status is None:  # the connection drops in the middle of the body
            self.rfile.read(length // 2)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        data = self.rfile.read(length)
        if fail:
            return self._error(status, "ServiceUnavailable" if status >= 500 else "AccessDenied",
                               f"upload refused ({status}) by the storage service")
        if parts[0] != "upload" or len(parts) not in (4, 5):
            return self._error(404, "NoSuchKey", "no such upload")
        repo = self.fake.repos.get(f"{parts[1]}/{parts[2]}")
        if repo is None:
            return self._error(404, "NoSuchBucket", "no such repo")
        oid = parts[3]
        if len(parts) == 5:  # one part of a multipart upload
            with self.fake._lock:
                repo.parts.setdefault(oid, {})[int(parts[4])] = data
            return self._raw(200, b"", "text/plain",
                             {"ETag": f'"{hashlib.md5(data).hexdigest()}"'})
        if hashlib.sha256(data).hexdigest() != oid:
            return self._error(400, "BadDigest", f"the body does not hash to {oid}")
        self.fake.store_object(repo, data)
        self._raw(200, b"", "text/plain", {"ETag": f'"{hashlib.md5(data).hexdigest()}"'})

    def _serve(self, method: str) -> None:
        parts = self._start(method)
        if parts is None:
            return
        repo = self.fake.repos.get(f"{parts[1]}/{parts[2]}") if len(parts) == 4 else None
        data = repo.lfs_objects.get(parts[3]) if repo is not None and parts[0] == "objects" \
            else None
        if data is None:
            return self._error(404, "NoSuchKey", "The specified key does not exist.")
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        self.end_headers()
        if method == "GET":
            self.wfile.write(data)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_HEAD(self) -> None:
        self._serve("HEAD")
