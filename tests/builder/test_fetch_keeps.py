"""`ruler sources fetch` keeps what was there (issue 40, items 7, 8, 15, 25): a fetch that gets
less than the whole pinned set never replaces a complete or official copy; a folder source
(ONERULER's data, punkt_tab, a Hub source) is replaced only while it holds nothing but the
fetch's own files, and a folder holding others is refused, naming them; a link where the folder
was is one line; a plain copy passed as a mirror is told how a mirror is laid out; a failed
fetch leaves no folder of its own behind."""

from __future__ import annotations

import io
import json
import shutil
import zipfile

from helpers.essay_pages import pinned_texts
from helpers.paths import SOURCES
from ruler.benchmarks.oneruler import files as oneruler_files
from ruler.catalog import sources
from ruler.catalog.essay_list import pinned_essays
from ruler.catalog.essay_record import MISSING, EssayFetchRecord, record_path
from ruler.commands.main import main

PINNED = SOURCES / "essays/PaulGrahamEssays.json"


def _essay_mirror(root, names):
    """A mirror (host/path layout, read through file://) holding only the .txt essays `names`."""
    for essay in pinned_essays():
        if essay.name in names:
            path = root / essay.url.split("://", 1)[1]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(pinned_texts()[essay.name].encode("utf-8"))
    return root.as_uri()


# --- item 7: a partial essay fetch never replaces a complete or official corpus -----------------

def test_a_partial_essay_fetch_keeps_the_official_corpus(tmp_path, capsys):
    """217 of 218 downloads failed: the official 3.1 MB corpus became a 28-byte one, exit 0."""
    dest = tmp_path / "sources"
    (dest / "essays").mkdir(parents=True)
    corpus = dest / "essays/PaulGrahamEssays.json"
    shutil.copyfile(PINNED, corpus)
    mirror = _essay_mirror(tmp_path / "www", {"avg.txt"})
    code = main(["sources", "fetch", "essays", "--dest", str(dest), "--mirror", mirror])
    captured = capsys.readouterr()
    assert code == 1, captured
    assert corpus.read_bytes() == PINNED.read_bytes()  # kept, byte for byte
    assert not record_path(corpus).exists()  # and no record of a corpus that is not there
    assert "217 of 218 essays could not be downloaded" in captured.err
    assert "kept the official corpus" in captured.err
    assert sorted(p.name for p in (dest / "essays").iterdir()) == ["PaulGrahamEssays.json"]


def test_a_partial_essay_fetch_keeps_a_complete_copy_but_replaces_a_smaller_one(tmp_path,
                                                                              capsys):
    dest = tmp_path / "sources"
    corpus = dest / "essays/PaulGrahamEssays.json"
    few = _essay_mirror(tmp_path / "few", {"avg.txt"})
    more = _essay_mirror(tmp_path / "more", {"avg.txt", "before.txt", "bias.txt"})

    # nothing there: the partial corpus is written (as upstream's scraper writes it), exit 1
    assert main(["sources", "fetch", "essays", "--dest", str(dest), "--mirror", few]) == 1
    captured = capsys.readouterr()
    assert "UNOFFICIAL" in captured.out and "217 of 218 essays could not be downloaded" \
        in captured.err
    record = EssayFetchRecord.from_json(record_path(corpus).read_text("utf-8"))
    assert len(record.named(MISSING)) == 217

    # a fetch that got more essays replaces it; one that got fewer does not
    assert main(["sources", "fetch", "essays", "--dest", str(dest), "--mirror", more]) == 1
    got_more = corpus.read_bytes()
    assert len(EssayFetchRecord.from_json(record_path(corpus).read_text("utf-8"))
               .named(MISSING)) == 215
    capsys.readouterr()
    assert main(["sources", "fetch", "essays", "--dest", str(dest), "--mirror", few]) == 1
    assert corpus.read_bytes() == got_more
    assert "kept the corpus already there (215 of 218 essays missing)" in capsys.readouterr().err

    # a corpus without a fetch record (put there by hand) is not known to be partial: kept
    record_path(corpus).unlink()
    corpus.write_text(json.dumps({"text": "a corpus of my own"}), encoding="utf-8")
    assert main(["sources", "fetch", "essays", "--dest", str(dest), "--mirror", more]) == 1
    assert json.loads(corpus.read_text("utf-8")) == {"text": "a corpus of my own"}


# --- item 8: a folder source replaces only its own files ----------------------------------------

def _oneruler_mirror(root):
    data = root / oneruler_files.RAW_BASE.split("://", 1)[1]
    for name in oneruler_files.FILES:
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SOURCES / "oneruler" / name, data / name)
    return root.as_uri()


def test_fetch_oneruler_refuses_a_folder_holding_the_users_files(tmp_path, capsys):
    """The fetch replaced <dest>/oneruler whole, deleting a README, SHA256SUMS and a book of the
    user's own."""
    mirror = _oneruler_mirror(tmp_path / "www")
    dest = tmp_path / "sources"
    folder = dest / "oneruler"
    assert main(["sources", "fetch", "oneruler", "--dest", str(dest), "--mirror", mirror]) == 0
    capsys.readouterr()
    mine = {"README.md": "my notes", "SHA256SUMS": "abc  x", "books/en/my_own_book.txt": "x"}
    for name, text in mine.items():
        (folder / name).write_text(text, encoding="utf-8")
    changed = folder / "prompt/en/niah.txt"
    changed.write_text("damaged", encoding="utf-8")

    assert main(["sources", "fetch", "oneruler", "--dest", str(dest), "--mirror", mirror]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "README.md" in err and "SHA256SUMS" in err and "books/en/my_own_book.txt" in err
    assert "did not write" in err
    for name, text in mine.items():
        assert (folder / name).read_text(encoding="utf-8") == text
    assert changed.read_text(encoding="utf-8") == "damaged"  # nothing replaced at all

    for name in mine:  # the user's files moved out: the fetch repairs its own
        (folder / name).unlink()
    assert main(["sources", "fetch", "oneruler", "--dest", str(dest), "--mirror", mirror]) == 0
    assert sources.resolve("oneruler", dest).official
    assert sorted(p.name for p in dest.iterdir()) == ["oneruler"]


def _punkt_zip(root):
    official = sources.SOURCES["punkt_tab"].urls[0]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in (SOURCES / "nltk_data/tokenizers/punkt_tab/english").iterdir():
            z.writestr(f"punkt_tab/english/{f.name}", f.read_bytes())
    path = root / official.split("://", 1)[1]
    path.parent.mkdir(parents=True)
    path.write_bytes(buf.getvalue())
    return root.as_uri()


def test_fetch_punkt_tab_refuses_a_folder_holding_other_files(tmp_path, capsys):
    mirror = _punkt_zip(tmp_path / "www")
    dest = tmp_path / "sources"
    english = dest / "nltk_data/tokenizers/punkt_tab/english"
    english.mkdir(parents=True)
    (english / "my_abbreviations.txt").write_text("mine", encoding="utf-8")
    assert main(["sources", "fetch", "punkt_tab", "--dest", str(dest), "--mirror", mirror]) == 2
    err = capsys.readouterr().err
    assert "my_abbreviations.txt" in err and len(err.strip().splitlines()) == 1
    assert [p.name for p in english.iterdir()] == ["my_abbreviations.txt"]
    (english / "my_abbreviations.txt").unlink()
    assert main(["sources", "fetch", "punkt_tab", "--dest", str(dest), "--mirror", mirror]) == 0
    assert sources.resolve("punkt_tab", dest).official


# --- item 15: a link where the folder goes ------------------------------------------------------

def test_a_link_where_the_oneruler_folder_goes_is_one_line_every_time(tmp_path, capsys):
    """The first fetch left a hidden `.oneruler.old` link; every later one died with
    NotADirectoryError."""
    mirror = _oneruler_mirror(tmp_path / "www")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mine.txt").write_text("kept", encoding="utf-8")
    dest = tmp_path / "sources"
    dest.mkdir()
    (dest / "oneruler").symlink_to(elsewhere, target_is_directory=True)
    for _ in range(2):
        assert main(["sources", "fetch", "oneruler", "--dest", str(dest), "--mirror",
                     mirror]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "is a link" in err, err
    assert (dest / "oneruler").is_symlink()
    assert [p.name for p in elsewhere.iterdir()] == ["mine.txt"]
    assert sorted(p.name for p in dest.iterdir()) == ["oneruler"]  # no .oneruler.old


# --- item 25: a plain copy given as a mirror; a failed Hub fetch leaves no folder ----------------

def test_a_plain_copy_given_as_a_mirror_is_told_how_a_mirror_is_laid_out(tmp_path, capsys):
    plain = tmp_path / "copy"
    plain.mkdir()
    shutil.copyfile(SOURCES / "squad/dev-v2.0.partial.json", plain / "dev-v2.0.json")
    dest = tmp_path / "sources"
    assert main(["sources", "fetch", "squad", "--dest", str(dest), "--mirror",
                 plain.as_uri()]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "no such file" in err and "laid out as host/path" in err and "--sources" in err
    assert f"{plain.as_uri()}/rajpurkar.github.io/SQuAD-explorer/dataset/dev-v2.0.json" in err
    assert not dest.exists()

    assert main(["sources", "fetch", "essays", "--dest", str(dest), "--mirror",
                 plain.as_uri()]) == 2
    err = capsys.readouterr().err
    assert "none of the 218 essays" in err and "laid out as host/path" in err


def test_a_failed_hub_fetch_leaves_no_folder(tmp_path, capsys):
    """`sources fetch mmlu` that failed (here: offline, as the tests run) left <dest>/mmlu."""
    dest = tmp_path / "new" / "sources"
    assert main(["sources", "fetch", "mmlu", "--dest", str(dest)]) == 2
    err = capsys.readouterr().err
    assert "could not download cais/mmlu" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "new").exists()
