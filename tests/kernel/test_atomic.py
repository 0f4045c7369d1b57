"""`ruler.kernel.atomic`: a file is replaced whole or not at all, and a failed write leaves
the old file and no temporary file behind."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from ruler.kernel.atomic import (
    remove_stale_temps,
    replace_folder,
    replacing,
    temp_file_beside,
    temp_prefix,
    write_bytes_atomic,
    write_json_atomic,
    write_text_atomic,
)
from ruler.kernel.temp_files import _TEMP_NAME, new_temp_tag


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_writes_replace_the_file_readable_by_all(tmp_path):
    path = tmp_path / "sub" / "scores.json"
    write_json_atomic(path, {"b": 1, "a": "é"})
    assert path.read_text(encoding="utf-8") == '{\n  "a": "é",\n  "b": 1\n}\n'
    write_text_atomic(path, "second\n")
    assert path.read_text() == "second\n"
    write_bytes_atomic(path, b"\x00third")
    assert path.read_bytes() == b"\x00third"
    assert path.stat().st_mode & 0o777 == 0o644 and _leftovers(path.parent) == []


@pytest.mark.subprocess
def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temp(tmp_path):
    """A real failure in the middle of writing the data: the process may write at most 4 KiB
    per file (RLIMIT_FSIZE), so writing 1 MiB fails with EFBIG after the first 4 KiB."""
    path = tmp_path / "manifest.json"
    path.write_text("old\n")
    script = textwrap.dedent(f"""
        import errno, resource, signal
        from ruler.kernel.atomic import write_bytes_atomic
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            write_bytes_atomic({str(path)!r}, b"x" * (1 << 20))
        except OSError as e:
            assert e.errno == errno.EFBIG, e
            print("failed as expected")
        else:
            print("no failure")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "failed as expected", done.stderr
    assert path.read_text() == "old\n"
    assert _leftovers(tmp_path) == []


def test_an_interrupted_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    """Ctrl-C (any BaseException) between the complete temporary file and its rename: the
    temporary file goes too; data that cannot be written never makes one."""
    path = tmp_path / "report.json"
    path.write_text("old\n")
    with pytest.raises(TypeError):  # not JSON: fails before any file is made
        write_json_atomic(path, {"x": object()})
    assert path.read_text() == "old\n" and _leftovers(tmp_path) == []

    def interrupt(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_text_atomic(path, "new\n")
    monkeypatch.undo()
    assert path.read_text() == "old\n" and _leftovers(tmp_path) == []


def test_a_failed_replace_leaves_no_temp(tmp_path):
    target = tmp_path / "a-folder"
    target.mkdir()
    (target / "inside").write_text("x")
    with pytest.raises(OSError):  # a non-empty folder cannot be replaced by a file
        write_text_atomic(target, "text")
    assert target.is_dir() and _leftovers(tmp_path) == []


def test_temporary_files_are_named_as_the_cleaners_expect(tmp_path):
    """Split files' temporary files (tagged by build) match what `temp_files` removes after a
    killed build; untagged ones (manifest, card) what `remove_stale_temps` removes."""
    split = tmp_path / "data" / "gpt-4" / "vt" / "4096.parquet"
    fd, tmp = temp_file_beside(split, new_temp_tag())
    os.close(fd)
    assert tmp.parent == split.parent and _TEMP_NAME.match(tmp.name), tmp.name
    assert tmp.name.startswith(temp_prefix(split)) and tmp.name.endswith(".tmp")

    card = tmp_path / "README.md"
    fd, left = temp_file_beside(card)
    os.close(fd)
    card.write_text("card")
    remove_stale_temps(card)
    assert not left.exists() and card.read_text() == "card"  # the card itself stays


def test_replacing_publishes_what_the_block_wrote_or_nothing(tmp_path):
    path = tmp_path / "plot.png"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with replacing(path) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("the renderer failed")
    assert path.read_bytes() == b"old" and _leftovers(tmp_path) == []
    with replacing(path) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".plot.png.")
        tmp.write_bytes(b"new")
    assert path.read_bytes() == b"new" and _leftovers(tmp_path) == []


def test_replace_folder_swaps_a_whole_folder(tmp_path):
    target = tmp_path / "lm_eval"
    target.mkdir()
    (target / "old.yaml").write_text("old")
    staging = tmp_path / ".lm_eval.new"
    staging.mkdir()
    (staging / "new.yaml").write_text("new")
    replace_folder(staging, target)
    assert sorted(p.name for p in target.iterdir()) == ["new.yaml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lm_eval"]  # old one removed
    with pytest.raises(OSError):  # nothing to move in: the folder there stays as it was
        replace_folder(tmp_path / "missing", target)
    assert sorted(p.name for p in target.iterdir()) == ["new.yaml"]
    replace_folder(target, tmp_path / "fresh")  # no folder there yet: one rename
    assert (tmp_path / "fresh" / "new.yaml").read_text() == "new" and not target.exists()


def test_replace_folder_replaces_a_link_and_leaves_nothing_aside(tmp_path):
    """A link at the target was renamed to `.<name>.old`, which rmtree refused to remove; the
    next replace then failed with NotADirectoryError."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "theirs.txt").write_text("kept")
    target = tmp_path / "folder"
    target.symlink_to(elsewhere, target_is_directory=True)
    for n in range(2):
        staging = tmp_path / f"staging{n}"
        staging.mkdir()
        (staging / "new.txt").write_text(str(n))
        replace_folder(staging, target)
        assert not target.is_symlink() and (target / "new.txt").read_text() == str(n)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "folder"]
    assert [p.name for p in elsewhere.iterdir()] == ["theirs.txt"]
