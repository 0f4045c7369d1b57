"""Every download of `ruler sources fetch` is bounded (issue 40, items 10-13): a body longer
than the pinned size (or the stated ceiling) is cut there, essay pages are streamed with a cap,
a trickling server is stopped at the total-time bound after the fetch said what it waits for,
a redirect to another host is recorded, and SIGTERM cleans up as Ctrl-C does, with a later
fetch removing what a killed one left. The servers are real loopback servers started by the
tests (tests/helpers/loopback.py)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
import tracemalloc
import urllib.parse
from pathlib import Path

import pytest

from helpers.essay_pages import pinned_texts
from helpers.loopback import Handler, serve, wait_for
from helpers.paths import SOURCES
from helpers.sources import swap_source
from ruler.benchmarks.oneruler import files as oneruler_files
from ruler.catalog import sources
from ruler.catalog.essay_fetch import PAGE_CEILING, fetch_essays
from ruler.catalog.essay_list import pinned_essays
from ruler.catalog.essay_record import MISSING, EssayFetchRecord, record_path
from ruler.catalog.hub_sources import HubFile, HubSplit
from ruler.commands.main import main
from ruler.kernel.errors import RulerError

SQUAD = sources.SOURCES["squad"]


def _hidden(folder) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob(".*"))


# --- item 10: a body longer than the pinned size is cut there ----------------------------------

#: What the long bodies send: as an endless body for a client that stops at its cap (and an
#: end, so that a client without a cap fails instead of hanging).
LONG = 100_000_000
#: What a bounded client may still have been sent: its cap plus what the two sockets' buffers
#: held when it stopped reading (loopback buffers grow to a few MB each).
SLACK = 16_000_000


class _Long(Handler):
    """LONG bytes, with no Content-Length."""

    def do_GET(self):
        self.served.paths.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.stream(b"x" * 65536, total=LONG)


@pytest.mark.network
def test_a_body_longer_than_the_pinned_size_is_cut_there(tmp_path, capsys):
    """The pinned sha256 alone let an endless body fill the disk (3.4 GB in 10 s)."""
    dest = tmp_path / "sources"
    with serve(_Long) as served:
        code = main(["sources", "fetch", "squad", "--dest", str(dest), "--mirror", served.url])
        sent = served.sent
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"more than the {SQUAD.size:,} bytes" in err
    assert sent < SQUAD.size + SLACK  # stopped at the cap, not at the body's end
    assert not dest.exists()  # nothing left: no folder, no temporary file


@pytest.mark.network
def test_a_hub_file_longer_than_its_ceiling_is_cut_there(tmp_path, monkeypatch):
    """A Hub file whose size is pinned nowhere is capped at the source's stated ceiling."""
    from huggingface_hub import constants

    revision = "1" * 40
    test = "all/test-00000-of-00001.parquet"

    class Hub(_Long):
        def do_HEAD(self):
            self.send_response(200)
            self.send_header("X-Repo-Commit", revision)
            self.send_header("ETag", '"' + "0" * 64 + '"')
            self.end_headers()

    real = sources.SOURCES["mmlu"]
    spec = dataclasses.replace(real, ceiling=1_000_000, hub=dataclasses.replace(
        real.hub, revision=revision,
        splits=(HubSplit("test", 14_042, (HubFile(test, "0" * 64),), "mmlu/test*.parquet"),)))
    swap_source(monkeypatch, spec)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with serve(Hub) as served:
        monkeypatch.setenv("HF_ENDPOINT", served.url)
        with pytest.raises(RulerError, match="more than the 1,000,000 bytes"):
            sources.fetch("mmlu", tmp_path / "sources")
        sent = served.sent
    assert f"/datasets/cais/mmlu/resolve/{revision}/{test}" in served.paths
    assert sent < 1_000_000 + SLACK
    assert not (tmp_path / "sources").exists()


# --- item 11: essay pages are streamed, each capped ----------------------------------------------

@pytest.mark.network
def test_essay_pages_are_streamed_with_a_cap(tmp_path):
    """Each page was read whole, 8 at a time: 64 MB pages took 3.1 GB of memory (a MemoryError
    under a limit). Here 8 pages of 100 MB each: at most PAGE_CEILING of each is held."""
    essays = [e for e in pinned_essays() if e.is_page][:8]
    target = tmp_path / "sources/essays/PaulGrahamEssays.json"
    with serve(_Long) as served:
        tracemalloc.start()
        try:
            with pytest.raises(RulerError, match="none of the 8 essays could be downloaded"
                                                 ".*more than the 2,000,000 bytes") as e:
                fetch_essays(target, "0" * 64, essays=essays, mirror=served.url, timeout=10)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        sent = served.sent
    assert PAGE_CEILING == 2_000_000
    assert "laid out as host/path" not in str(e.value)  # the mirror had the pages
    assert peak < 40_000_000, f"peak {peak:,} bytes"  # whole pages: 800 MB and more
    assert sent < 8 * PAGE_CEILING + 8 * SLACK
    assert not target.parent.exists() or not list(target.parent.iterdir())


# --- item 12: a trickling server is stopped at the total-time bound -----------------------------

class _Trickle(Handler):
    """Announces the full size, then sends a byte every 0.2 s."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(SQUAD.size))
        self.end_headers()
        self.stream(b"{", every=0.2)


class _TrickledHeaders(Handler):
    """Even the status line and headers come a byte at a time."""

    def do_GET(self):
        head = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nX-Padding: " + b"p" * 200
        try:
            for i in range(len(head)):
                if self.served.stop.is_set():
                    break
                self.wfile.write(head[i:i + 1])
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass
        self.close_connection = True


@pytest.mark.network
@pytest.mark.parametrize("handler", [_Trickle, _TrickledHeaders])
def test_a_trickling_server_is_stopped_at_the_time_bound(tmp_path, capsys, handler):
    """Each read came well inside the 60 s per-read timeout, so it never timed out, and the
    fetch printed nothing."""
    dest = tmp_path / "sources"
    with serve(handler) as served:
        started = time.monotonic()
        code = main(["sources", "fetch", "squad", "--dest", str(dest), "--mirror", served.url,
                     "--timeout", "1.5"])
        took = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == 2 and took < 5, (code, took)
    wanted = f"{served.url}/rajpurkar.github.io/SQuAD-explorer/dataset/dev-v2.0.json"
    assert f"squad: downloading {wanted} (4.4 MB, within 1.5 s)" in out  # said before the wait
    assert len(err.strip().splitlines()) == 1 and "no complete answer within 1.5 s" in err, err
    assert not dest.exists()


# --- item 13: a redirect to another host is recorded ---------------------------------------------

@pytest.mark.network
def test_the_final_url_of_each_essay_is_recorded(tmp_path):
    essays = [e for e in pinned_essays() if not e.is_page][:2]
    moved = essays[1]
    texts = {e.name: pinned_texts()[e.name].encode("utf-8") for e in essays}

    class Other(Handler):
        def do_GET(self):
            body = texts[self.path.rsplit("/", 1)[-1]]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serve(Other) as other:
        class Mirror(Handler):
            def do_GET(self):
                name = self.path.rsplit("/", 1)[-1]
                if name == moved.name:
                    self.send_response(302)
                    self.send_header("Location", f"{other.url}/elsewhere/{name}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                Other.do_GET(self)

        said: list[str] = []
        target = tmp_path / "essays/PaulGrahamEssays.json"
        with serve(Mirror) as mirror:
            fetch_essays(target, "0" * 64, essays=essays, mirror=mirror.url, timeout=10,
                         say=said.append)
    record = EssayFetchRecord.from_json(record_path(target).read_text("utf-8"))
    finals = {e.name: e.final_url for e in record.essays}
    assert finals[moved.name] == f"{other.url}/elsewhere/{moved.name}"
    assert finals[essays[0].name] == sources.mirrored(essays[0].url, mirror.url)
    assert [e.name for e in record.redirected()] == [moved.name]
    assert any("1 of 2 pages came from another host" in s and other.url in s for s in said)
    assert not record.named(MISSING)


# --- item 10: SIGTERM cleans up; a later fetch removes what a killed one left -------------------

def _oneruler_server_root(tmp_path):
    root = tmp_path / "www"
    data = root / oneruler_files.RAW_BASE.split("://", 1)[1]
    for name in oneruler_files.FILES:
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SOURCES / "oneruler" / name, data / name)
    return root


class _SlowBooks(Handler):
    """ONERULER's files from `directory`; while `slow` is set, each book a chunk at a time."""

    slow = True
    directory: str

    def do_GET(self):
        path = urllib.parse.unquote(os.path.join(self.directory, self.path.lstrip("/")))
        try:
            with open(path, "rb") as f:
                body = f.read()
        except OSError:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if type(self).slow and "/books/" in self.path:
            for i in range(0, len(body), 65536):
                if self.served.stop.is_set():
                    return
                try:
                    self.wfile.write(body[i:i + 65536])
                    self.wfile.flush()
                except OSError:
                    return
                self.served.count(len(body[i:i + 65536]))
                time.sleep(0.05)
        else:
            self.wfile.write(body)


def _start_fetch(dest, url) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ruler", "sources", "fetch", "oneruler",
                             "--dest", str(dest), "--mirror", url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _staging_with_a_file(dest) -> bool:
    return any(p.is_file() for s in dest.glob(".oneruler.fetch-*") for p in s.rglob("*"))


@pytest.mark.network
@pytest.mark.subprocess
def test_sigterm_removes_the_staging_folder(tmp_path):
    """SIGTERM (`timeout`, Slurm) ended the fetch on the spot, its staging left behind."""
    dest = tmp_path / "sources"
    with serve(_SlowBooks, directory=_oneruler_server_root(tmp_path)) as served:
        proc = _start_fetch(dest, served.url)
        try:
            wait_for(lambda: _staging_with_a_file(dest), 20, "a staged file")
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=20)
        finally:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, err)
    assert err.strip().splitlines()[-1] == "ruler: terminated", err
    assert not dest.exists() or _hidden(dest) == [], _hidden(dest)


@pytest.mark.network
@pytest.mark.subprocess
def test_a_later_fetch_removes_the_staging_a_killed_one_left(tmp_path, capsys):
    dest = tmp_path / "sources"
    with serve(_SlowBooks, directory=_oneruler_server_root(tmp_path)) as served:
        proc = _start_fetch(dest, served.url)
        try:
            wait_for(lambda: _staging_with_a_file(dest), 20, "a staged file")
            proc.kill()  # SIGKILL: nothing can clean up
            proc.communicate(timeout=20)
        finally:
            proc.kill()
        left = list(dest.glob(".oneruler.fetch-*"))
        assert left and any(p.is_file() for s in left for p in s.rglob("*"))
        _SlowBooks.slow = False  # the same server, now at full speed
        try:
            assert main(["sources", "fetch", "oneruler", "--dest", str(dest), "--mirror",
                         served.url]) == 0
        finally:
            _SlowBooks.slow = True
    assert _hidden(dest) == [] and sorted(p.name for p in dest.iterdir()) == ["oneruler"]
    assert sources.resolve("oneruler", dest).official


def test_the_staging_of_a_running_fetch_is_kept(tmp_path):
    """Only the staging of a process that has ended is removed: another fetch may be running."""
    from ruler.kernel.fetch_staging import remove_stale_staging, staging_folder
    from ruler.kernel.temp_files import new_temp_tag

    target = tmp_path / "oneruler"
    mine = staging_folder(target)  # this process's: running
    host = new_temp_tag().rsplit("-", 2)[0]
    gone = tmp_path / f".oneruler.fetch-{host}-{_ended_pid()}-0123abcd.xyz"
    gone.mkdir()
    (gone / "book.txt").write_text("half")
    other = tmp_path / ".oneruler.fetch-elsewhere-1-0123abcd.xyz"  # another machine's
    other.mkdir()
    assert remove_stale_staging(target) == [gone]
    assert mine.is_dir() and other.is_dir() and not gone.exists()


def _ended_pid() -> int:
    """A pid no process has: above the kernel's limit."""
    return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1


def test_the_registry_records_each_oneruler_file_size():
    """Each ONERULER file's size is pinned beside its sha256: its download's cap."""
    data = SOURCES / "oneruler"
    assert set(oneruler_files.SIZES) == set(oneruler_files.FILES)
    assert {n: (data / n).stat().st_size for n in oneruler_files.FILES} == \
        dict(oneruler_files.SIZES)


class _TricklePages(Handler):
    """Every page a byte every 0.2 s: eight downloads in flight, none ending."""

    def do_GET(self):
        self.served.paths.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.stream(b"<", every=0.2)


@pytest.mark.network
@pytest.mark.subprocess
def test_sigterm_stops_the_essay_downloads_in_flight(tmp_path):
    """The essays are fetched 8 at a time in threads: SIGTERM stops those in flight at once
    (each would wait up to its time bound) and cancels the rest; nothing is written."""
    dest = tmp_path / "sources"
    with serve(_TricklePages) as served:
        proc = subprocess.Popen([sys.executable, "-m", "ruler", "sources", "fetch", "essays",
                                 "--dest", str(dest), "--mirror", served.url],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: len(served.paths) >= 8, 20, "eight pages asked for")
            sent_at = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=20)
            took = time.monotonic() - sent_at
        finally:
            proc.kill()
        asked = len(served.paths)
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, err)
    assert took < 5, took
    assert asked < 218  # the rest were never started
    assert "essays: downloading 218 essays from 127.0.0.1:" in out
    assert not dest.exists() or _hidden(dest) == [] and not list(dest.rglob("*.json"))


@pytest.mark.network
def test_a_tokenizer_file_longer_than_its_ceiling_is_cut_there(tmp_path, monkeypatch):
    """The tokenizer download shares the bounded download: an endless tokenizer.json stops at
    the stated ceiling (here lowered), and nothing is cached."""
    from huggingface_hub import constants

    from ruler.builder import tokenizer_registry

    commit = "a" * 40

    class Hub(_Long):
        def do_HEAD(self):
            self.send_response(200)
            self.send_header("X-Repo-Commit", commit)
            self.send_header("ETag", '"abc"')
            self.end_headers()

    monkeypatch.setattr(tokenizer_registry, "TOKENIZER_FILE_CEILING", 1_000_000)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("RULER_TOKENIZERS")
    monkeypatch.setenv("RULER_TOKENIZER_CACHE", str(tmp_path / "cache"))
    with serve(Hub) as served:
        monkeypatch.setenv("HF_ENDPOINT", served.url)
        with pytest.raises(RulerError, match="more than the 1,000,000 bytes"):
            tokenizer_registry.load_tokenizer(f"someorg/some-model@{commit}")
        sent = served.sent
    assert f"/someorg/some-model/resolve/{commit}/tokenizer.json" in served.paths
    assert sent < 1_000_000 + SLACK
    cache = tmp_path / "cache"
    assert not cache.exists() or not [p for p in cache.rglob("*") if p.is_file()]
