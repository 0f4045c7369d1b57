"""An export into an earlier export's folder replaces only the files that export wrote
(`ruler.eval.integrations.export_folder`): what the user put there (a task of their own, notes,
a copied build) or edited is named and kept, never deleted; both exports take `--out` (and
`--to`, the older spelling)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ruler.commands.main import main
from ruler.eval.integrations import export_folder
from ruler.eval.integrations.export_folder import RECORD_NAME
from ruler.kernel.errors import RulerError

EXPORTS = ("lm-eval", "kvpress")
#: Each export's flag for its folder before both took both spellings.
FIRST_FLAG = {"lm-eval": "--to", "kvpress": "--out"}
OTHER_FLAG = {"lm-eval": "--out", "kvpress": "--to"}


def _export(capsys, kind: str, data: Path, to: Path, flag: str = "--out",
            *extra: str) -> tuple[int, str]:
    code = main(["export", kind, str(data), flag, str(to), *extra])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.build
@pytest.mark.parametrize("kind", EXPORTS)
def test_exporting_again_keeps_what_the_user_put_in_the_folder(built_gpt4_niah_single,
                                                               tmp_path, capsys, kind):
    to = tmp_path / "export"
    code, text = _export(capsys, kind, built_gpt4_niah_single, to, FIRST_FLAG[kind])
    assert code == 0, text
    (to / "my_task.yaml").write_text("task: mine\n")  # the user's own
    (to / "notes").mkdir()
    (to / "notes" / "todo.txt").write_text("keep me")
    before = _files(to)
    code, text = _export(capsys, kind, built_gpt4_niah_single, to, FIRST_FLAG[kind])
    assert _files(to) == before  # nothing deleted, nothing replaced
    assert code == 2 and len(text.strip().splitlines()) == 1, text
    assert "my_task.yaml" in text and "notes/" in text and "did not write" in text
    assert [p.name for p in tmp_path.iterdir()] == ["export"]  # no temporary folder left
    # once the user's files are out, the export replaces its own folder
    (to / "my_task.yaml").unlink()
    (to / "notes" / "todo.txt").unlink()
    (to / "notes").rmdir()
    code, text = _export(capsys, kind, built_gpt4_niah_single, to, OTHER_FLAG[kind])
    assert code == 0, text
    assert set(_files(to)) == set(before) - {"my_task.yaml", "notes/todo.txt"}
    record = json.loads((to / RECORD_NAME).read_text())  # every file it wrote, but itself
    assert set(record["files"]) == set(_files(to)) - {RECORD_NAME}


@pytest.mark.build
@pytest.mark.parametrize("kind", EXPORTS)
def test_a_file_edited_since_the_export_is_named_and_kept(built_gpt4_niah_single, tmp_path,
                                                         capsys, kind):
    to = tmp_path / "export"
    assert _export(capsys, kind, built_gpt4_niah_single, to, FIRST_FLAG[kind])[0] == 0
    (to / "README.md").write_text("my notes on this export\n")
    code, text = _export(capsys, kind, built_gpt4_niah_single, to, FIRST_FLAG[kind])
    assert (to / "README.md").read_text() == "my notes on this export\n"
    assert code == 2 and "README.md (changed since the export wrote it)" in text, text


@pytest.mark.build
def test_a_folder_without_a_record_is_refused_naming_what_it_holds(built_gpt4_niah_single,
                                                                   tmp_path, capsys):
    """An export by a ruler that kept no record, or any other folder: nothing there is known to
    be the export's, so nothing is replaced."""
    to = tmp_path / "tasks"
    assert _export(capsys, "lm-eval", built_gpt4_niah_single, to)[0] == 0
    (to / RECORD_NAME).unlink()
    before = _files(to)
    code, text = _export(capsys, "lm-eval", built_gpt4_niah_single, to)
    assert code == 2 and "is not an lm-eval export of ruler" in text and "README.md" in text
    assert _files(to) == before


@pytest.mark.build
def test_a_stale_file_of_the_earlier_export_goes(built_gpt4_niah_single, tmp_path, capsys):
    """A file the earlier export wrote and this one does not (the local build's loader, for
    tasks that now read a Hub release) is the export's own: it is replaced with the rest."""
    to = tmp_path / "tasks"
    assert _export(capsys, "lm-eval", built_gpt4_niah_single, to)[0] == 0
    assert (to / "ruler_data.py").is_file()
    code, text = _export(capsys, "lm-eval", built_gpt4_niah_single, to, "--out", "--repo",
                         "org/ruler", "--revision", "v1")
    assert code == 0, text
    assert not (to / "ruler_data.py").exists()
    assert "ruler_data.py" not in json.loads((to / RECORD_NAME).read_text())["files"]


def test_a_file_added_while_the_export_ran_stops_the_replacement(tmp_path):
    """The check runs again on the old folder once it is moved aside: what was added between
    the first check and the replacement is still there, and the new folder is not."""
    kind = export_folder.ExportKind("ruler export test", "--out", "a test export")
    target = tmp_path / "export"
    first = export_folder.staging_folder(target)
    (first / "a.txt").write_text("a")
    export_folder.publish(first, target, kind)
    assert export_folder.foreign_entries(target) == []
    export_folder.check_target(target, kind)  # the check before the work passes ...
    (target / "late.txt").write_text("added meanwhile")  # ... then the user adds a file
    second = export_folder.staging_folder(target)
    (second / "b.txt").write_text("b")
    with pytest.raises(RulerError, match="late.txt"):
        export_folder.publish(second, target, kind)
    assert sorted(p.name for p in target.iterdir()) == ["a.txt", "late.txt", RECORD_NAME]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]  # staging removed


def test_links_in_an_export_folder_are_not_its_own(tmp_path):
    kind = export_folder.ExportKind("ruler export test", "--out", "a test export")
    target = tmp_path / "export"
    staging = export_folder.staging_folder(target)
    (staging / "a.txt").write_text("a")
    export_folder.publish(staging, target, kind)
    (tmp_path / "elsewhere").mkdir()
    (target / "a.txt").unlink()
    (target / "a.txt").symlink_to(tmp_path / "elsewhere")
    assert export_folder.foreign_entries(target) == ["a.txt/"]
