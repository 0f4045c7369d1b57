"""Source registry: resolution, official/unofficial marking, download with hash checks."""

from __future__ import annotations

import functools
import http.server
import io
import threading
import zipfile

import pytest

from ruler.builder import sources
from ruler.cli import main
from ruler.builder.errors import RulerError
from conftest import SOURCES


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
    assert squad.as_manifest()["sha256"] == sources.file_sha256(squad.path)
    assert not sources.resolve("hotpotqa", SOURCES).official


def test_missing_source_names_the_file_and_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.delenv("RULER_SOURCES", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(RulerError) as e:
        sources.resolve("squad", tmp_path)
    assert "squad/dev-v2.0.json" in str(e.value) and "ruler sources fetch squad" in str(e.value)


def test_fetch_checks_the_hash_and_installs_atomically(http_root, tmp_path):
    root, url = http_root
    (root / "essays.json").write_bytes((SOURCES / "essays/PaulGrahamEssays.json").read_bytes())
    got = sources.fetch("essays", tmp_path / "dest", urls=[f"{url}/essays.json"])
    assert got.official and got.path == tmp_path / "dest/essays/PaulGrahamEssays.json"


def test_fetch_refuses_a_corrupt_download_and_tries_the_next_url(http_root, tmp_path):
    root, url = http_root
    (root / "bad.json").write_bytes(b'{"text": "not the corpus"}')
    with pytest.raises(RulerError, match="sha256"):
        sources.fetch("essays", tmp_path / "dest", urls=[f"{url}/bad.json", f"{url}/missing"])
    assert not list((tmp_path / "dest").rglob("*.json"))  # nothing left behind
    (root / "good.json").write_bytes((SOURCES / "essays/PaulGrahamEssays.json").read_bytes())
    got = sources.fetch("essays", tmp_path / "dest", urls=[f"{url}/bad.json", f"{url}/good.json"])
    assert got.official


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


def test_cli_sources_list(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert main(["sources", "list", "--sources", str(SOURCES)]) == 0
    out = capsys.readouterr().out
    assert "essays" in out and "UNOFFICIAL" in out and "MISSING" not in out
    monkeypatch.delenv("RULER_SOURCES")
    assert main(["sources", "list", "--sources", str(tmp_path / "empty")]) == 1
    assert "MISSING" in capsys.readouterr().out


def test_cli_fetch_without_url_is_a_clear_error(capsys):
    assert main(["sources", "fetch", "essays"]) == 2
    assert "no official download URL" in capsys.readouterr().err
