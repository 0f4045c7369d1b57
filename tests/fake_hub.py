"""A loopback, Hub-compatible HTTP server for release tests (huggingface_hub 2.4 client).

It implements only what `HfApi` calls during `ruler release`, with the response shapes the
client parses (see shared notes §5.5):
  POST /api/repos/create                          -> {"url": ...}; 409 + url when it exists
  GET  /api/datasets/{ns}/{name}/refs             -> branches / tags / converts
  GET  /api/datasets/{ns}/{name}[/revision/{rev}] -> {"id", "sha", "siblings"}
  POST /api/validate-yaml                         -> parses the README front matter for real
  POST /api/datasets/{ns}/{name}/preupload/{rev}  -> every file "regular" (inlined in commit)
  POST /api/datasets/{ns}/{name}/commit/{rev}     -> NDJSON; honours parentCommit (412)
  POST /api/datasets/{ns}/{name}/tag/{rev}        -> 409 when the tag exists
and what downloads call (`hf_hub_download`, `snapshot_download`, `hf download`, and
`datasets.load_dataset` of the repo at a revision, through HfFileSystem):
  HEAD/GET /datasets/{ns}/{name}/resolve/{rev}/{path}     -> the bytes, X-Repo-Commit, ETag
  GET  /api/datasets/{ns}/{name}/tree/{rev}[/{path}]      -> files and folders (?recursive)
  POST /api/datasets/{ns}/{name}/paths-info/{rev}         -> the listed paths that exist
  DELETE /api/repos/delete                                -> removes the repo
A revision is `main`, a tag or a commit sha. Every request needs `Authorization: Bearer
<token>` (401 otherwise). `fail(step, status, message)` makes one endpoint answer an error, so
tests can prove nothing is committed or tagged. `reflect_headers = True` makes every error echo
the request's headers, as some misconfigured servers and proxies do (the token must still never
be printed). A repo's files at its head are mirrored under `root/<ns>/<name>/` so tests can
`load_dataset` them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import yaml

STEPS = ("create", "refs", "info", "validate", "preupload", "commit", "tag", "delete")


@dataclass
class Commit:
    sha: str
    parent: str | None
    files: dict[str, bytes]
    message: str


@dataclass
class Repo:
    repo_id: str
    private: bool
    commits: list[Commit] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)

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
        self.reflect_headers = False
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> "FakeHub":
        hub = self

        class Handler(_Handler):
            fake = hub
            timeout = hub.timeout  # a stuck client cannot hold a handler thread forever

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=self.timeout)

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # -- test controls ----------------------------------------------------------------------
    def fail(self, step: str, status: int, message: str) -> None:
        assert step in STEPS, step
        self.failures[step] = (status, message)

    def steps(self) -> list[str]:
        return [f"{m} {p}" for m, p in self.requests]

    def stored_dir(self, repo_id: str) -> Path:
        return self.root / repo_id

    # -- state changes (under the lock) -------------------------------------------------------
    def create_repo(self, repo_id: str, private: bool) -> bool:
        with self._lock:
            if repo_id in self.repos:
                return False
            attrs = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"
            repo = Repo(repo_id, private)
            repo.commits.append(Commit(_sha(repo_id.encode(), attrs), None,
                                       {".gitattributes": attrs}, "initial commit"))
            self.repos[repo_id] = repo
            self._mirror(repo)
            return True

    def apply_commit(self, repo: Repo, message: str, adds: dict[str, bytes],
                     deletes: list[str]) -> Commit:
        with self._lock:
            files = dict(repo.head.files)
            for path in deletes:
                if path.endswith("/"):
                    files = {k: v for k, v in files.items() if not k.startswith(path)}
                else:
                    files.pop(path, None)
            files.update(adds)
            digest = _sha(repo.head.sha.encode(), *(k.encode() + v for k, v in sorted(files.items())))
            commit = Commit(digest, repo.head.sha, files, message)
            repo.commits.append(commit)
            self._mirror(repo)
            return commit

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
    `root`. huggingface_hub reads its endpoint, cache and offline flag at import (and conftest
    sets offline mode), so they are patched here, and HF_ENDPOINT/HF_TOKEN are set for
    subprocesses."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(Path(root) / "hub_cache"))
    monkeypatch.setenv("HF_TOKEN", token)
    with FakeHub(Path(root) / "hub", token=token) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.setattr(constants, "ENDPOINT", server.endpoint)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                            server.endpoint + "/{repo_id}/resolve/{revision}/{filename}")
        yield server


class _Handler(BaseHTTPRequestHandler):
    fake: FakeHub
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # keep pytest output clean
        pass

    # -- plumbing -----------------------------------------------------------------------------
    def _send(self, status: int, payload: dict | list) -> None:
        if status >= 400 and self.fake.reflect_headers and isinstance(payload, dict) \
                and "error" in payload:
            echoed = ", ".join(f"{k}: {v}" for k, v in self.headers.items())
            payload = {**payload, "error": f"{payload['error']} (request headers: {echoed})"}
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if status >= 400 and "error" in payload:
            self.send_header("X-Error-Message", payload["error"])
        self.end_headers()
        self.wfile.write(body)

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
            self.send_response(404)
            body = json.dumps({"error": "Repository not found"}).encode()
            self.send_header("X-Error-Code", "RepoNotFound")
            self.send_header("X-Error-Message", "Repository not found")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        return repo

    def _route(self, method: str) -> None:
        url = urlparse(self.path)
        path = url.path
        self.fake.requests.append((method, path))
        body = self._body() if method in ("POST", "DELETE") else b""
        if not self._authorized():
            return
        parts = [unquote(p) for p in path.strip("/").split("/")]
        try:
            if method == "POST" and parts == ["api", "repos", "create"]:
                return self._create(json.loads(body))
            if method == "POST" and parts == ["api", "validate-yaml"]:
                return self._validate(json.loads(body))
            if method in ("GET", "HEAD") and len(parts) >= 6 and parts[0] == "datasets" \
                    and parts[3] == "resolve":
                return self._resolve(parts[1], parts[2], parts[4], "/".join(parts[5:]),
                                     body=method == "GET")
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
                if method == "GET" and (rest == [] or rest[:1] == ["revision"]):
                    return self._info(ns, name, rest[1] if len(rest) > 1 else "main")
                if method == "POST" and rest[:1] == ["preupload"]:
                    return self._preupload(ns, name, json.loads(body))
                if method == "POST" and rest[:1] == ["commit"]:
                    return self._commit(ns, name, body)
                if method == "POST" and rest[:1] == ["tag"]:
                    return self._tag(ns, name, rest[1], json.loads(body))
            self._send(404, {"error": f"fake hub: no route for {method} {path}"})
        except (ValueError, KeyError) as e:
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

    def _preupload(self, ns: str, name: str, payload: dict) -> None:
        if self._failed("preupload") or self._repo(ns, name) is None:
            return
        self._send(200, {"files": [{"path": f["path"], "uploadMode": "regular",
                                    "shouldIgnore": False} for f in payload["files"]]})

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
        adds = {x["value"]["path"]: base64.b64decode(x["value"]["content"])
                for x in lines if x["key"] == "file"}
        deletes = [x["value"]["path"] for x in lines if x["key"] in ("deletedFile",
                                                                    "deletedFolder")]
        if any(x["key"] == "lfsFile" for x in lines):
            return self._send(400, {"error": "fake hub: LFS pointers are not supported"})
        commit = self.fake.apply_commit(repo, header.get("summary", ""), adds, deletes)
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
            self.send_response(404)
            self.send_header("X-Error-Code", "RevisionNotFound")
            self.send_header("X-Error-Message", f"Invalid rev id: {revision}")
            self.send_header("Content-Length", "0")
            self.end_headers()
        return commit

    def _resolve(self, ns: str, name: str, revision: str, path: str, body: bool) -> None:
        if (commit := self._commit_at(ns, name, revision)) is None:
            return
        data = commit.files.get(path)
        if data is None:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("X-Error-Message", f"{path} does not exist at {revision}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
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
                out.append({"type": "file", "oid": _blob_oid(data), "size": len(data), "path": p})
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
