"""Source registry: resolution, official/unofficial marking, download with hash checks."""

from __future__ import annotations

import functools
import http.server
import io
import threading
import zipfile

import pytest

from helpers.paths import SOURCES
from ruler.catalog import sources
from ruler.commands.main import main
from ruler.kernel.errors import RulerError


@pytest.fixture()
def http_root(tmp_path):
    """A loopback HTTP server serving files from a temporary folder."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_shared_copies_resolve_and_partial_ones_are_unofficial():
    assert sources.resolve("essays", SOURCES).official
    assert sources.resolve("punkt_tab", SOURCES).official
    squad = sources.resolve("squad", SOURCES)
    assert squad.path.name == "dev-v2.0.partial.json" and not squad.official
    assert squad.as_manifest().sha256 == sources.file_sha256(squad.path)
    assert not sources.resolve("hotpotqa", SOURCES).official


def test_missing_source_names_the_file_and_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.delenv("RULER_SOURCES", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(RulerError) as e:
        sources.resolve("squad", tmp_path)
    assert "squad/dev-v2.0.json" in str(e.value) and "ruler sources fetch squad" in str(e.value)


@pytest.mark.network
def test_fetch_checks_the_hash_and_installs_atomically(http_root, tmp_path):
    root, url = http_root
    (root / "essays.json").write_bytes((SOURCES / "essays/PaulGrahamEssays.json").read_bytes())
    got = sources.fetch("essays", tmp_path / "dest", urls=[f"{url}/essays.json"])
    assert got.official and got.path == tmp_path / "dest/essays/PaulGrahamEssays.json"


@pytest.mark.network
def test_fetch_refuses_a_corrupt_download_and_tries_the_next_url(http_root, tmp_path):
    root, url = http_root
    (root / "bad.json").write_bytes(b'{"text": "not the corpus"}')
    with pytest.raises(RulerError, match="sha256"):
        sources.fetch("essays", tmp_path / "dest", urls=[f"{url}/bad.json", f"{url}/missing"])
    assert not list((tmp_path / "dest").rglob("*.json"))  # nothing left behind
    (root / "good.json").write_bytes((SOURCES / "essays/PaulGrahamEssays.json").read_bytes())
    got = sources.fetch("essays", tmp_path / "dest", urls=[f"{url}/bad.json", f"{url}/good.json"])
    assert got.official


@pytest.mark.network
def test_fetch_punkt_tab_extracts_and_verifies_the_english_files(http_root, tmp_path):
    root, url = http_root
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in (SOURCES / "nltk_data/tokenizers/punkt_tab/english").iterdir():
            z.writestr(f"punkt_tab/english/{f.name}", f.read_bytes())
        z.writestr("punkt_tab/german/abbrev_types.txt", "ignored")
    (root / "punkt_tab.zip").write_bytes(buf.getvalue())
    got = sources.fetch("punkt_tab", tmp_path / "dest", urls=[f"{url}/punkt_tab.zip"])
    assert got.official and sorted(p.name for p in got.path.iterdir()) == sorted(
        sources.SOURCES["punkt_tab"].sha256)


@pytest.mark.network
def test_urls_for_a_hub_source_are_refused_not_installed_as_an_empty_official_folder(
        http_root, tmp_path):
    """`fetch(id, urls=...)` fetches copies of a source that is one file or one archive. Given
    to a Hub dataset (or a folder fetched file by file) the URLs were read as punkt_tab's
    archive: nothing of it matched the source's (empty) hash table, so an empty folder was
    installed and called official (found by typing the source kinds apart)."""
    root, url = http_root
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("english/x.txt", "anything")
    (root / "any.zip").write_bytes(buf.getvalue())
    for sid in ("mmlu", "oneruler"):
        with pytest.raises(RulerError, match=f"source '{sid}'.*urls"):
            sources.fetch(sid, tmp_path / "dest", urls=[f"{url}/any.zip"])
    assert not (tmp_path / "dest").exists()


def test_cli_sources_list(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert main(["sources", "list", "--sources", str(SOURCES)]) == 0
    out = capsys.readouterr().out
    assert "essays" in out and "UNOFFICIAL" in out and "MISSING" not in out
    monkeypatch.delenv("RULER_SOURCES")
    assert main(["sources", "list", "--sources", str(tmp_path / "empty")]) == 1
    assert "MISSING" in capsys.readouterr().out


# --- issue 21.13: --sources is never silently replaced; a failed fetch leaves no folder ---------

def test_a_sources_folder_that_does_not_exist_is_an_error_naming_it(tmp_path, capsys):
    """$RULER_SOURCES (set by conftest) has every file: it used to be used instead, silently."""
    missing = tmp_path / "no-such-folder"
    with pytest.raises(RulerError, match=f"--sources {missing} does not exist"):
        sources.resolve("squad", missing)
    out = tmp_path / "out"
    code = main(["build", "--tokenizer", "gpt-4", "--tasks", "qa_1", "--lengths", "4096",
                 "--samples", "2", "--no-progress", "--sources", str(missing), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and f"--sources {missing} does not exist" in err, err
    assert not out.exists()


def test_a_sources_folder_without_the_needed_file_is_an_error_naming_both(tmp_path, capsys):
    folder = tmp_path / "sources"
    (folder / "essays").mkdir(parents=True)
    with pytest.raises(RulerError) as e:
        sources.resolve("squad", folder)
    assert str(folder) in str(e.value) and "squad/dev-v2.0.json" in str(e.value)
    assert str(SOURCES) not in str(e.value)  # not searched: --sources names the one folder
    assert main(["sources", "list", "--sources", str(folder)]) == 1
    listed = capsys.readouterr().out
    assert "MISSING" in listed and str(SOURCES) not in listed


class _DroppingHandler(http.server.BaseHTTPRequestHandler):
    """Promises a large body, sends a little of it, then closes the connection."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "4370528")
        self.end_headers()
        self.wfile.write(b'{"version": "v2.0", "data": [')
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture()
def dropping_url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _DroppingHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/dev-v2.0.json"
    server.shutdown()
    server.server_close()


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.network
@pytest.mark.parametrize("failure", ["404", "dropped", "unreachable"])
def test_a_failed_fetch_leaves_no_folder_behind(http_root, dropping_url, tmp_path, failure):
    root, url = http_root
    urls = {"404": [f"{url}/missing.json"], "dropped": [dropping_url],
            "unreachable": [f"http://127.0.0.1:{_closed_port()}/dev-v2.0.json"]}[failure]
    dest = tmp_path / "new" / "sources"
    with pytest.raises(RulerError, match="could not fetch source 'squad'"):
        sources.fetch("squad", dest, urls=urls, timeout=10)
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"  # a folder that was there before stays, and only it
    kept.mkdir()
    with pytest.raises(RulerError, match="could not fetch source 'squad'"):
        sources.fetch("squad", kept, urls=urls, timeout=10)
    assert kept.is_dir() and not list(kept.iterdir())


@pytest.mark.network
def test_cli_fetch_that_cannot_connect_leaves_no_folder(tmp_path, capsys, monkeypatch):
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(var, f"http://127.0.0.1:{_closed_port()}")  # refused at once
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    dest = tmp_path / "dest"
    assert main(["sources", "fetch", "squad", "--dest", str(dest)]) == 2
    err = capsys.readouterr().err
    assert "could not fetch source 'squad'" in err and len(err.strip().splitlines()) == 1
    assert not dest.exists()


@pytest.mark.network
def test_mirror_serves_every_source_at_host_path(http_root, tmp_path, monkeypatch):
    """--mirror / $RULER_SOURCES_MIRROR: the official URL's host/path below the mirror's base."""
    root, url = http_root
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in (SOURCES / "nltk_data/tokenizers/punkt_tab/english").iterdir():
            z.writestr(f"punkt_tab/english/{f.name}", f.read_bytes())
    official = sources.SOURCES["punkt_tab"].urls[0]
    (root / official.split("://", 1)[1]).parent.mkdir(parents=True)
    (root / official.split("://", 1)[1]).write_bytes(buf.getvalue())
    assert sources.fetch("punkt_tab", tmp_path / "a", mirror=url + "/").official
    monkeypatch.setenv(sources.MIRROR_ENV, url)
    assert main(["sources", "fetch", "punkt_tab", "--dest", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b/nltk_data/tokenizers/punkt_tab/english/collocations.tab").is_file()
