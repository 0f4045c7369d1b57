"""`ruler sources fetch essays`: upstream's scraper procedure, against recorded pages on a
loopback server (made from the pinned corpus at test time: helpers.essay_pages)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil

import pytest

from helpers.essay_pages import (
    PAGES_THAT_ROUND_TRIP,
    page_for,
    pinned_texts,
    serve_folder,
    write_mirror,
)
from helpers.paths import SOURCES
from ruler.builder.manifest import Manifest
from ruler.catalog import essay_fetch, sources
from ruler.catalog.essay_fetch import as_read_back, fetch_essays, page_text
from ruler.catalog.essay_list import corpus_order, pinned_essays
from ruler.catalog.essay_record import DIFFERS, MISSING, SAME, EssayFetchRecord, record_path
from ruler.commands.main import main

PINNED = SOURCES / "essays/PaulGrahamEssays.json"


def _txt_pages() -> dict[str, bytes]:
    return {e.name: pinned_texts()[e.name].encode("utf-8")
            for e in pinned_essays() if not e.is_page}


def test_the_list_is_upstreams_and_walks_the_pinned_corpus():
    essays = pinned_essays()
    assert len(essays) == 218 and len({e.url for e in essays}) == 218
    assert sum(not e.is_page for e in essays) == 49  # gkamradt's .txt files, then 169 pages
    assert all(e.url.startswith("http://www.paulgraham.com/") for e in essays if e.is_page)
    assert list(essays) == corpus_order(list(reversed(essays)))  # stored in upstream's order
    text = json.loads(PINNED.read_text("utf-8"))["text"]
    assert sum(e.chars for e in essays) == len(text)
    joined = "".join(pinned_texts()[e.name] for e in essays)
    assert all(hashlib.sha256(pinned_texts()[e.name].encode()).hexdigest() == e.sha256
               for e in essays)
    # upstream's json.dump of the joined texts is the pinned file, byte for byte
    assert json.dumps({"text": joined}).encode() == PINNED.read_bytes()
    assert sources.file_sha256(PINNED) == sources.SOURCES["essays"].sha256


def test_a_page_is_converted_as_upstreams_script_converts_it():
    page = (b"<html><body><font size=1>menu</font><p>x</p></body></html>")
    assert page_text(page) == "menu\n\n"  # the first <font> only
    page = (b"<html><body><table><tr><td><img src=a.gif alt=title></td></tr></table>"
            b"<font>May 2021<br><br>It's not a_b or *c* [d]: \\u2014 caf\xe9 \x97 "
            b"<a href=\"http://x.org/y\">link</a><br><br></font></body></html>")
    # unicode_escape: \u2014 is read as an escape, other bytes as Latin-1 (0x97 stays \x97);
    # no markdown escaping (upstream's escape_all is no html2text option); links inline
    assert page_text(page) == ("May 2021  \n  \nIt's not a_b or *c* [d]: \u2014 caf\xe9 \x97 "
                               "[link](http://x.org/y)  \n  \n\n")
    assert page_text(b"<html>no font</html>") == "None\n\n"  # str(None), as upstream saves it
    assert as_read_back("a\r\nb\rc\n") == "a\nb\nc\n"  # open(..., 'r') reads it so


@pytest.mark.parametrize("name", PAGES_THAT_ROUND_TRIP)
def test_recorded_pages_convert_back_to_their_pinned_text(name):
    text = pinned_texts()[name]
    assert as_read_back(page_text(page_for(text))) == text


@pytest.mark.network
def test_a_download_that_gives_every_essay_its_pinned_text_is_official(tmp_path):
    """The 49 .txt files and 5 pages (a reduced list: pages that reproduce all 169 are not
    constructed here), fetched through --mirror's layout from a loopback server."""
    essays = tuple(e for e in pinned_essays() if not e.is_page or e.name in PAGES_THAT_ROUND_TRIP)
    pages = {**_txt_pages(), **{n: page_for(pinned_texts()[n]) for n in PAGES_THAT_ROUND_TRIP}}
    write_mirror(tmp_path / "www", essays, pages)
    expected = json.dumps({"text": "".join(pinned_texts()[e.name] for e in essays)}).encode()
    target = tmp_path / "sources/essays/PaulGrahamEssays.json"
    with serve_folder(tmp_path / "www") as url:
        record = fetch_essays(target, hashlib.sha256(expected).hexdigest(),
                              essays=list(reversed(essays)), mirror=url, timeout=10)
    assert target.read_bytes() == expected  # upstream's order, whatever the list's order
    assert record.official and [e.status for e in record.essays] == [SAME] * len(essays)
    written = EssayFetchRecord.from_json(record_path(target).read_text("utf-8"))
    assert written == record and written.mirror == url
    assert set(written.packages) == {"html2text", "beautifulsoup4", "python"}
    assert "identical to the pinned corpus" in written.summary()


def _mirror_with_changes(root):
    """Every .txt file and the pages that round-trip; avg.txt changed, worked.txt and
    mac.html gone, ds.html changed."""
    pages = {**_txt_pages(), **{n: page_for(pinned_texts()[n]) for n in PAGES_THAT_ROUND_TRIP}}
    pages["avg.txt"] = pages["avg.txt"].replace(b"Lisp", b"Lips", 1)
    pages["ds.html"] = page_for(pinned_texts()["ds.html"].replace("scale", "scala", 1))
    del pages["worked.txt"], pages["mac.html"]
    write_mirror(root, pinned_essays(), pages)


@pytest.mark.slow
def test_fetch_list_and_build_say_which_essays_differ(tmp_path, capsys, monkeypatch):
    """End to end: `ruler sources fetch essays --mirror`, `ruler sources list`, and a build of
    niah_single_2 from that folder whose manifest and card name the essays."""
    _mirror_with_changes(tmp_path / "www")
    dest = tmp_path / "sources"
    monkeypatch.delenv(sources.MIRROR_ENV, raising=False)
    with serve_folder(tmp_path / "www") as url:
        # essays are missing: written (nothing better was there), and the exit says so
        assert main(["sources", "fetch", "essays", "--dest", str(dest), "--mirror", url]) == 1
    fetched = capsys.readouterr()
    out = fetched.out
    assert f"{169 - len(PAGES_THAT_ROUND_TRIP) + 2} of 218 essays could not be downloaded" \
        in fetched.err
    corpus = dest / "essays/PaulGrahamEssays.json"
    assert f"essays: {corpus}" in out and "UNOFFICIAL" in out
    record = EssayFetchRecord.from_json(record_path(corpus).read_text("utf-8"))
    assert record.named(DIFFERS) == ["avg.txt", "ds.html"]
    assert "worked.txt" in record.named(MISSING) and "mac.html" in record.named(MISSING)
    assert len(record.named(MISSING)) == 169 - len(PAGES_THAT_ROUND_TRIP) + 2
    assert "1 of 218" not in out and "2 of 218 essays differ from the pinned corpus: avg.txt, " \
        "ds.html" in out
    shutil.copytree(SOURCES / "nltk_data", dest / "nltk_data")

    assert main(["sources", "list", "--sources", str(dest)]) == 1  # no squad, no hotpotqa
    listed = capsys.readouterr().out
    assert re.search(r"^essays +UNOFFICIAL", listed, re.M) and "avg.txt, ds.html" in listed

    build = tmp_path / "ruler"
    assert main(["build", "--tokenizer", "gpt-4", "--tasks", "niah_single_2", "--lengths",
                 "1024", "--samples", "2", "--no-progress", "--sources", str(dest),
                 "--out", str(build)]) == 0
    built = capsys.readouterr().out
    assert "unofficial build" in built and "avg.txt, ds.html" in built
    entry = Manifest.load(build).build("gpt-4")
    assert entry.official is False
    note = entry.sources["essays"].note
    assert "2 of 218 essays differ from the pinned corpus: avg.txt, ds.html" in note
    assert f"{len(record.named(MISSING))} of 218 essays missing" in note
    card = (build / "README.md").read_text("utf-8")
    assert "avg.txt, ds.html" in card and "essays" in card


def test_fetch_without_any_essay_writes_nothing(tmp_path, capsys):
    dest = tmp_path / "new"
    assert main(["sources", "fetch", "essays", "--dest", str(dest), "--mirror",
                 (tmp_path / "empty-mirror").as_uri()]) == 2
    err = capsys.readouterr().err
    assert "none of the 218 essays could be downloaded" in err
    assert len(err.strip().splitlines()) == 1 and not dest.exists()


def test_fetch_without_the_converters_is_one_line_before_any_download(tmp_path, capsys,
                                                                      monkeypatch):
    monkeypatch.setattr(essay_fetch, "CONVERTER_PACKAGES", ("html2text", "no-such-converter"))
    assert main(["sources", "fetch", "--dest", str(tmp_path / "d"), "--mirror",
                 (tmp_path / "m").as_uri()]) == 2
    err = capsys.readouterr().err
    assert "ruler-bench[essays]" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists()  # squad, hotpotqa, punkt_tab were not tried either
