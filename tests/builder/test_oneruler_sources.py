"""ONERULER's data as a pinned source: `ruler sources fetch oneruler` downloads each file from
the upstream repository's raw URLs at the pinned commit (here: a loopback mirror laid out as
host/path, `--mirror`), checks every sha256 against the registry and installs the folder only
whole; the shared copy resolves as the official source."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
import urllib.parse

import pytest

from helpers.paths import SOURCES
from ruler.benchmarks.oneruler import files as oneruler_files
from ruler.catalog import sources
from ruler.commands.main import main
from ruler.kernel.hashing import file_sha256

DATA = SOURCES / "oneruler"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the CLI's stderr is what the tests read
        pass


@pytest.fixture()
def mirror(tmp_path):
    """A loopback HTTP server whose root is a mirror (host/path layout) of upstream's raw files:
    `raw.githubusercontent.com/mungg/OneRuler/<commit>/OneRuler/data/` holds a copy of the
    shared folder."""
    root = tmp_path / "www"
    data = root / oneruler_files.RAW_BASE.split("://", 1)[1]
    shutil.copytree(DATA, data, ignore=shutil.ignore_patterns("README.md", "SHA256SUMS",
                                                              "LICENSE*"))
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                     daemon=True).start()
    yield data, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_registry_pins_every_file_the_generator_reads():
    spec = sources.SOURCES["oneruler"]
    assert spec.sha256 is oneruler_files.FILES and len(spec.sha256) == 104
    pinned = {p.relative_to(DATA).as_posix(): file_sha256(p) for p in DATA.rglob("*")
              if p.is_file() and p.parts[len(DATA.parts)] in ("books", "prompt", "vocab")}
    assert pinned == dict(spec.sha256)
    urls = spec.file_urls()
    assert urls["prompt/ko/niah.txt"] == ("https://raw.githubusercontent.com/mungg/OneRuler/"
                                          "a3fe6af862dc4b30794afc0a8f3d4f60758cecfa/OneRuler/"
                                          "data/prompt/ko/niah.txt")
    assert urls[next(n for n in urls if n.startswith("books/sr/"))].endswith(
        urllib.parse.quote("dragutin_ilić_sr.txt"))
    found = sources.resolve("oneruler", SOURCES)
    assert found.official and found.path == DATA


@pytest.mark.network
def test_fetch_from_a_mirror_installs_the_official_folder(mirror, tmp_path, capsys):
    data, url = mirror
    dest = tmp_path / "dest"
    assert main(["sources", "fetch", "oneruler", "--dest", str(dest), "--mirror", url]) == 0
    assert "oneruler: " in capsys.readouterr().out
    got = sources.resolve("oneruler", dest)
    assert got.official and got.path == dest / "oneruler"
    assert got.sha256 == sources.resolve("oneruler", SOURCES).sha256
    assert sorted(p.name for p in dest.iterdir()) == ["oneruler"]  # no staging left


@pytest.mark.network
def test_a_changed_file_is_refused_and_nothing_is_left(mirror, tmp_path, capsys):
    data, url = mirror
    (data / "prompt/vi/cwe.txt").write_text("changed upstream {context}", encoding="utf-8")
    dest = tmp_path / "new" / "sources"
    assert main(["sources", "fetch", "oneruler", "--dest", str(dest), "--mirror", url]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "could not fetch source 'oneruler'" in err
    assert "prompt/vi/cwe.txt gave sha256" in err
    assert not (tmp_path / "new").exists()
    (dest / "oneruler").mkdir(parents=True)  # an earlier copy stays as it was
    (dest / "oneruler" / "mine.txt").write_text("kept")
    assert main(["sources", "fetch", "oneruler", "--dest", str(dest), "--mirror", url]) == 2
    assert [p.name for p in (dest / "oneruler").iterdir()] == ["mine.txt"]
    assert sorted(p.name for p in dest.iterdir()) == ["oneruler"]


def test_missing_says_how_to_fetch(tmp_path):
    with pytest.raises(sources.RulerError, match="ruler sources fetch oneruler --dest .*` "
                                                 "\\(downloads its 104 files from https://raw"):
        sources.resolve("oneruler", tmp_path)
