"""`ruler verify`: passes on a real build; each kind of damage fails, naming the file (and row)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers.builds import build
from ruler.builder.manifest import content_sha256
from ruler.builder.schema import ROW_SCHEMA
from ruler.builder.verify.run import verify
from ruler.commands.main import main
from ruler.kernel.hashing import file_sha256

TASKS = ("niah_single_1", "niah_multikey_2")
LENGTHS = (1024, 2048)
VICTIM = "data/gpt-4/niah_multikey_2/1024.parquet"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("verify") / "ruler"
    build(folder, "gpt-4", TASKS, LENGTHS, samples=4, workers=1)
    return folder


@pytest.fixture
def out(pristine, tmp_path) -> Path:
    """A private copy each test may damage."""
    return Path(shutil.copytree(pristine, tmp_path / "ruler"))


def run(capsys, *argv) -> tuple[int, str]:
    code = main(["verify", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def save_manifest(out: Path, m: dict) -> None:
    (out / "manifest.json").write_text(json.dumps(m, indent=2, sort_keys=True))


def rewrite(out: Path, rel: str, rows: list[dict], update_manifest: bool) -> None:
    """Replace a split file with `rows`; optionally make the manifest agree with it, so that
    only the row-level checks can catch the change."""
    table = pa.Table.from_pylist(rows, schema=ROW_SCHEMA)
    pq.write_table(table, out / rel, compression="zstd")
    if update_manifest:
        m = manifest(out)
        m["files"][rel].update(rows=len(rows), bytes=(out / rel).stat().st_size,
                               sha256=file_sha256(out / rel), content_sha256=content_sha256(table))
        save_manifest(out, m)


@pytest.mark.build
@pytest.mark.subprocess
def test_good_build_passes_and_prints_a_summary(out, capsys):
    code, text = run(capsys, out)
    assert code == 0, text
    assert VICTIM in text and "OK: 4 files, 16 rows, 6 config/split loads verified" in text
    assert "gpt-4--niah_multikey_2" in text  # the load table lists every config


@pytest.mark.build
def test_full_retokenizes_every_row(out):
    report = verify(out, full=True, load=False)
    assert report.ok and all(f.retokenized == f.rows == 4 for f in report.files)
    sampled = verify(out, sample=2, load=False)
    assert all(f.retokenized == 2 for f in sampled.files)


@pytest.mark.build
@pytest.mark.subprocess
def test_parallel_verify_reports_what_one_process_reports(out):
    rows = pq.read_table(out / VICTIM).to_pylist()
    rows[2]["length"] -= 1  # a wrong stored length, with a manifest that agrees
    rewrite(out, VICTIM, rows, update_manifest=True)
    one = verify(out, full=True, load=False, workers=1)
    two = verify(out, full=True, load=False, workers=2)
    assert not one.ok and [f.path for f in one.files] == sorted(f.path for f in one.files)
    assert [(f.path, f.rows, f.retokenized, [str(p) for p in f.problems]) for f in one.files] \
        == [(f.path, f.rows, f.retokenized, [str(p) for p in f.problems]) for f in two.files]
    assert any("re-tokenized" in str(p) and p.row == 2 for p in two.all_problems())


@pytest.mark.build
@pytest.mark.subprocess
def test_flipped_byte_fails_naming_the_file(out, capsys):
    path = out / VICTIM
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    code, text = run(capsys, out)
    assert code == 1
    assert f"{VICTIM}: file bytes differ from manifest.json" in text


@pytest.mark.build
@pytest.mark.subprocess
def test_truncated_parquet_fails_naming_the_file(out, capsys):
    path = out / VICTIM
    path.write_bytes(path.read_bytes()[:-100])
    code, text = run(capsys, out)
    assert code == 1
    assert f"{VICTIM}: not readable as Parquet" in text
    assert "load_dataset failed" in text  # the loader trips over it too


@pytest.mark.build
@pytest.mark.subprocess
def test_removed_row_fails_naming_the_file(out, capsys):
    rows = pq.read_table(out / VICTIM).to_pylist()
    rewrite(out, VICTIM, rows[:-1], update_manifest=False)
    code, text = run(capsys, out)
    assert code == 1
    assert f"{VICTIM}: 3 rows, manifest.json says 4" in text
    assert "split '1024': load_dataset gave 7 rows, expected 8" in text


@pytest.mark.build
@pytest.mark.subprocess
def test_removed_row_with_a_consistent_manifest_is_still_caught(out, capsys):
    rows = pq.read_table(out / VICTIM).to_pylist()
    rewrite(out, VICTIM, rows[:1] + rows[2:], update_manifest=True)
    code, text = run(capsys, out, "--no-load")
    assert code == 1
    assert f"{VICTIM} row 1: index=2 (expected 1)" in text


@pytest.mark.build
@pytest.mark.subprocess
def test_edited_manifest_fails_naming_the_file(out, capsys):
    m = manifest(out)
    m["files"][VICTIM]["content_sha256"] = "0" * 64
    save_manifest(out, m)
    code, text = run(capsys, out, "--no-load")
    assert code == 1
    assert f"{VICTIM}: row content differs from manifest.json" in text


@pytest.mark.build
def test_structurally_broken_manifest_is_one_clear_error(out, capsys):
    m = manifest(out)
    del m["files"][VICTIM]["rows"]
    save_manifest(out, m)
    code, text = run(capsys, out)
    assert code == 2 and f"entry '{VICTIM}' has missing or malformed rows" in text
    (out / "manifest.json").write_text("{not json")
    code, text = run(capsys, out)
    assert code == 2 and "manifest.json is not valid JSON" in text and "Traceback" not in text


@pytest.mark.build
@pytest.mark.subprocess
def test_hand_set_official_flag_fails(out, capsys):
    m = manifest(out)
    m["builds"]["gpt-4"]["tokenizer"]["pinned"] = False  # official stays True: inconsistent
    save_manifest(out, m)
    code, text = run(capsys, out, "--no-load")
    assert code == 1
    assert "manifest.json build 'gpt-4': `official` is True, but tokenizer pinned" in text


@pytest.mark.build
@pytest.mark.subprocess
def test_manifest_naming_other_tokenizer_files_fails(out, capsys):
    m = manifest(out)
    files = m["builds"]["gpt-4"]["tokenizer"]["files"]
    files[next(iter(files))] = "0" * 64
    save_manifest(out, m)
    code, text = run(capsys, out, "--no-load")
    assert code == 1
    assert "config 'gpt-4': tokenizer 'gpt-4' loaded here has other files" in text


@pytest.mark.build
@pytest.mark.subprocess
def test_wrong_stored_length_is_named_by_row(out, capsys):
    rows = pq.read_table(out / VICTIM).to_pylist()
    rows[2]["length"] -= 1
    rewrite(out, VICTIM, rows, update_manifest=True)
    code, text = run(capsys, out, "--full", "--no-load")
    assert code == 1
    assert f"{VICTIM} row 2: stored length {rows[2]['length']}, re-tokenized " \
           f"{rows[2]['length'] + 1}" in text


@pytest.mark.build
@pytest.mark.subprocess
def test_length_over_the_split_budget_is_named_by_row(out, capsys):
    rows = pq.read_table(out / VICTIM).to_pylist()
    rows[0]["length"] = 1025
    rewrite(out, VICTIM, rows, update_manifest=True)
    code, text = run(capsys, out, "--no-load")
    assert code == 1
    assert f"{VICTIM} row 0: length 1025 > L = 1024" in text


@pytest.mark.build
@pytest.mark.subprocess
def test_a_row_far_below_its_fill_is_named_by_row(out, capsys):
    """A row of 900 tokens at 2048 falls 1,148 tokens short: more than its benchmark's fill
    promise allows (ONERULER's rows once stopped at 0.07 of L and every check passed)."""
    victim = "data/gpt-4/niah_multikey_2/2048.parquet"
    rows = pq.read_table(out / victim).to_pylist()
    rows[1]["length"] = 900
    rewrite(out, victim, rows, update_manifest=True)
    code, text = run(capsys, out, "--no-load")
    assert code == 1
    assert f"{victim} row 1: fill 0.439 (900 of 2,048 tokens): rows of this benchmark fill " \
           f"at least 0.9 of L or fall short by at most 1,024 tokens" in text


@pytest.mark.build
@pytest.mark.subprocess
def test_unrecoverable_answer_is_named_by_row(out, capsys):
    rows = pq.read_table(out / VICTIM).to_pylist()
    rows[1]["outputs"] = ["1234567"]
    rewrite(out, VICTIM, rows, update_manifest=True)
    code, text = run(capsys, out, "--no-load")
    assert code == 1
    assert f"{VICTIM} row 1: answer not recoverable" in text


@pytest.mark.build
@pytest.mark.subprocess
def test_missing_file_and_stray_file(out, capsys):
    (out / VICTIM).rename(out / "data/gpt-4/niah_multikey_2/4096.parquet")
    code, text = run(capsys, out)
    assert code == 1
    assert f"{VICTIM}: missing (listed in manifest.json)" in text
    assert "data/gpt-4/niah_multikey_2/4096.parquet: Parquet file not listed" in text


@pytest.mark.build
@pytest.mark.subprocess
def test_card_that_does_not_match_the_manifest(out, capsys):
    from ruler.cards.render import write_card

    full = manifest(out)
    smaller = json.loads(json.dumps(full))
    del smaller["files"]["data/gpt-4/niah_single_1/2048.parquet"]
    save_manifest(out, smaller)
    write_card(out)  # a card for a build without that split
    save_manifest(out, full)
    code, text = run(capsys, out, "--no-load")
    assert code == 1 and "README.md: `configs` do not match manifest.json" in text
    (out / "README.md").unlink()
    code, text = run(capsys, out, "--no-load")
    assert code == 1 and "README.md: missing" in text


def test_not_a_build_folder_is_a_clear_error(tmp_path, capsys):
    code, text = run(capsys, tmp_path)
    assert code == 2
    assert "manifest.json not found" in text and "Traceback" not in text


@pytest.mark.build
@pytest.mark.subprocess
def test_tokenizer_override_is_used_and_checked(out, capsys):
    code, text = run(capsys, out, "--tokenizer", "gpt-4")
    assert code == 2 and "--tokenizer expects CONFIG=PATH" in text
    code, text = run(capsys, out, "--no-load", "--tokenizer", "gpt-4=gpt-4o")
    assert code == 1 and "tokenizer 'gpt-4o' loaded here has other files" in text
    code, text = run(capsys, out, "--no-load", "--tokenizer", "gpt-4=/nonexistent/tok")
    assert code == 1 and "cannot load tokenizer '/nonexistent/tok'" in text


# --- the build proven, not only the files: identity, row counts, gold items, regenerated rows --

@pytest.mark.build
@pytest.mark.subprocess
def test_removed_last_row_with_a_consistent_manifest_is_caught(out, capsys):
    rows = pq.read_table(out / VICTIM).to_pylist()
    rewrite(out, VICTIM, rows[:-1], update_manifest=True)
    code, text = run(capsys, out, "--no-load")
    assert code == 1
    assert f"{VICTIM}: 3 rows, the build's samples are 4" in text


@pytest.mark.build
@pytest.mark.subprocess
@pytest.mark.parametrize("edit,message", [
    (lambda b: b.update(seed=7), "seed 42 -> 7"),
    (lambda b: b["tokenizer"].update(revision="abc"), "tokenizer revision"),
    (lambda b: b["packages"].update(numpy="0.1"), "numpy"),
])
def test_edited_build_fields_are_caught(out, capsys, edit, message):
    m = manifest(out)
    edit(m["builds"]["gpt-4"])
    save_manifest(out, m)
    code, text = run(capsys, out, "--no-load")
    assert code == 1
    assert "manifest.json build 'gpt-4': its recorded identity does not match its fields" in text
    assert message in text


@pytest.mark.build
@pytest.mark.subprocess
def test_edited_seed_with_a_matching_identity_still_fails_every_build_key(out, capsys):
    m = manifest(out)
    m["builds"]["gpt-4"]["seed"] = m["builds"]["gpt-4"]["identity"]["seed"] = 7
    save_manifest(out, m)
    code, text = run(capsys, out, "--no-load")
    assert code == 1 and "recorded identity" not in text
    assert f"{VICTIM}: build_key is not the one the build's recorded seed" in text


@pytest.mark.build
@pytest.mark.subprocess
def test_an_edited_tokenizer_revision_is_caught_against_the_registry(out, capsys):
    from ruler.builder.identity import file_key, identity_of_build
    from ruler.builder.manifest import BuildEntry
    from ruler.catalog import get_task

    m = manifest(out)
    build = m["builds"]["gpt-4"]
    build["tokenizer"]["repo"], build["tokenizer"]["revision"] = "openai/other", "v2"
    # a careful forger redoes the identity and the keys, too
    identity = identity_of_build(BuildEntry.from_json(build))
    build["identity"] = identity.to_json()
    for entry in m["files"].values():
        hashes = {sid: build["sources"][sid]["sha256"]
                  for sid in get_task(entry["task"]).sources}
        entry["build_key"] = file_key(identity, entry["task"], entry["max_seq_length"], hashes)
    save_manifest(out, m)
    code, text = run(capsys, out, "--no-load")
    assert code == 1
    assert "records tokenizer 'gpt-4' from openai/other@v2, the registry pins" in text


@pytest.mark.build
@pytest.mark.subprocess
@pytest.mark.parametrize("column", ["gold_token_positions", "gold_depths"])
def test_wrong_gold_positions_or_depths_are_named_by_row(out, capsys, column):
    rows = pq.read_table(out / VICTIM).to_pylist()
    if column == "gold_token_positions":
        rows[1][column] = [p + 1 for p in rows[1][column]]
    else:
        rows[1][column] = [min(1.0, d + 0.01) for d in rows[1][column]]
    rewrite(out, VICTIM, rows, update_manifest=True)
    code, text = run(capsys, out, "--no-load")  # row 1 is not in the default sample ...
    assert code == 0, text
    code, text = run(capsys, out, "--no-load", "--full")  # ... --full re-derives every row
    assert code == 1 and f"{VICTIM} row 1: gold_token_positions" in text and "re-derived" in text
    report = verify(out, full=True, load=False)
    assert sum(f.gold_checked for f in report.files) == 16


@pytest.mark.build
@pytest.mark.subprocess
def test_gold_positions_out_of_shape_are_caught_on_every_row(out, capsys):
    rows = pq.read_table(out / VICTIM).to_pylist()
    rows[1]["gold_depths"] = rows[1]["gold_depths"] + [0.5]
    rewrite(out, VICTIM, rows, update_manifest=True)
    code, text = run(capsys, out, "--no-load")
    assert code == 1 and f"{VICTIM} row 1: gold_token_positions" in text


@pytest.mark.build
@pytest.mark.subprocess
def test_regenerate_rebuilds_rows_and_catches_a_consistent_forgery(out, capsys):
    code, text = run(capsys, out, "--no-load", "--regenerate", "2")
    assert code == 0, text
    assert all(f.regenerated == 2 for f in verify(out, load=False, regenerate=2).files)
    rows = pq.read_table(out / VICTIM).to_pylist()
    first = rows[0]["input"].index(" ")  # one word of the prompt's first line changed
    rows[0]["input"] = rows[0]["input"][:first] + " different" + rows[0]["input"][first:]
    rewrite(out, VICTIM, rows, update_manifest=True)
    code, text = run(capsys, out, "--no-load", "--regenerate", "4")
    assert code == 1
    assert f"{VICTIM} row 0: regenerated from the manifest's identity, the row differs in " \
           f"input" in text


@pytest.mark.build
def test_rows_of_a_build_that_records_no_seed_are_not_regenerated_with_none(out, capsys):
    """A build entry without its seed (or samples, or prompt mode: the manifest's schema does
    not require them) cannot be made again: its rows used to be regenerated with seed None
    and every one reported as differing in its input, as if the files were damaged (found by
    typing the recipe's fields)."""
    m = manifest(out)
    del m["builds"]["gpt-4"]["seed"]
    save_manifest(out, m)
    code, text = run(capsys, out, "--no-load", "--regenerate", "1")
    assert code == 1
    assert "the row differs" not in text
    assert f"{VICTIM} row " in text and "manifest.json records no seed for the build" in text


@pytest.fixture(scope="module")
def qa_build(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("verify-qa") / "ruler"
    build(folder, "gpt-4", ["qa_1"], [2048], samples=3, workers=1)
    return folder


@pytest.mark.build
def test_qa_gold_documents_are_re_derived_from_the_source(qa_build, tmp_path, capsys,
                                                          monkeypatch):
    out = Path(shutil.copytree(qa_build, tmp_path / "ruler"))
    assert sum(f.gold_checked for f in verify(out, full=True, load=False).files) == 3
    rel = "data/gpt-4/qa_1/2048.parquet"
    rows = pq.read_table(out / rel).to_pylist()
    rows[2]["gold_token_positions"] = [p - 1 for p in rows[2]["gold_token_positions"]]
    rewrite(out, rel, rows, update_manifest=True)
    code, text = run(capsys, out, "--no-load", "--full")
    assert code == 1 and f"{rel} row 2: gold_token_positions" in text
    monkeypatch.setenv("RULER_SOURCES", str(tmp_path / "none"))  # no SQuAD here
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    code, text = run(capsys, out, "--no-load")
    assert f"note: {rel}: gold positions not re-derived: source 'squad' not found" in text


# --- issue 21.12: a damaged manifest is one clear line in build and verify, never a traceback ---

def _set(path: tuple, value):
    """A change of the manifest: the value at `path` (keys) becomes `value`."""
    def change(m):
        *where, last = path
        for key in where:
            m = m[key]
        m[last] = value
    return change


def _drop(path: tuple):
    def change(m):
        *where, last = path
        for key in where:
            m = m[key]
        del m[last]
    return change


BUILD = ("builds", "gpt-4")
ENTRY = ("files", VICTIM)
DAMAGE = {  # name -> (change, what the one line names)
    "entry is a list": (lambda m: m["files"].__setitem__(VICTIM, list(m["files"][VICTIM])),
                        VICTIM),
    "entry is null": (_set(ENTRY, None), VICTIM),
    "no sha256": (_drop((*ENTRY, "sha256")), "sha256"),
    "sha256 a number": (_set((*ENTRY, "sha256"), 5), "sha256"),
    "sha256 not hex": (_set((*ENTRY, "sha256"), "xyz"), "sha256"),
    "rows a string": (_set((*ENTRY, "rows"), "4"), "rows"),
    "rows negative": (_set((*ENTRY, "rows"), -1), "rows"),
    "bytes a bool": (_set((*ENTRY, "bytes"), True), "bytes"),
    "counting a list": (_set((*ENTRY, "counting"), ["proven"]), "counting"),
    "repeated_share a string": (_set((*ENTRY, "repeated_share"), "x"), "repeated_share"),
    "build_key a number": (_set((*ENTRY, "build_key"), 3), "build_key"),
    "identity null": (_set((*BUILD, "identity"), None), "identity"),
    "identity a list": (_set((*BUILD, "identity"), [1]), "identity"),
    "identity packages a list": (_set((*BUILD, "identity", "packages"), [1]), "identity"),
    "build null": (_set(BUILD, None), "'gpt-4'"),
    "build a list": (_set(BUILD, []), "'gpt-4'"),
    "tokenizer null": (_set((*BUILD, "tokenizer"), None), "tokenizer"),
    "tokenizer files a list": (_set((*BUILD, "tokenizer", "files"), [1]), "tokenizer"),
    "sources a list": (_set((*BUILD, "sources"), [1]), "sources"),
    "a source a string": (_set((*BUILD, "sources"), {"essays": "x"}), "sources"),
    "a source without sha256": (_set((*BUILD, "sources"), {"essays": {"official": True}}),
                                "sources"),
    "build packages a list": (_set((*BUILD, "packages"), [1]), "packages"),
    "variant a list": (_set((*BUILD, "variant"), [1]), "variant"),
    "variant of an unknown kind": (_set((*BUILD, "variant"), {"foo": 1}), "variant"),
    "samples a string": (_set((*BUILD, "samples"), "4"), "samples"),
    "seed null": (_set((*BUILD, "seed"), None), "seed"),
    "tasks a string": (_set((*BUILD, "tasks"), "vt"), "tasks"),
    "lengths strings": (_set((*BUILD, "lengths"), ["1024"]), "lengths"),
    "official a string": (_set((*BUILD, "official"), "yes"), "official"),
    "top packages a list": (_set(("packages",), [1]), "packages"),
    "generator null": (_set(("generator",), None), "generator"),
    "format_version 2": (_set(("format_version",), 2), "format_version"),
    "files a list": (_set(("files",), []), "not a ruler manifest"),
}


def _build_again(capsys, out: Path) -> tuple[int, str]:
    code = main(["build", "--tokenizer", "gpt-4", "--tasks", ",".join(TASKS), "--lengths",
                 ",".join(map(str, LENGTHS)), "--samples", "4", "--out", str(out),
                 "--no-progress", "--workers", "1"])
    return code, capsys.readouterr().err


@pytest.mark.build
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_manifest_is_one_clear_line_in_build_and_verify(out, capsys, damage):
    change, named = DAMAGE[damage]
    m = manifest(out)
    change(m)
    save_manifest(out, m)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code, text = run(capsys, out, "--no-load", "--workers", "1")
    assert code == 2 and text.startswith("ruler: error: ") and len(text.splitlines()) == 1, text
    assert "manifest.json" in text and named in text, text
    code, err = _build_again(capsys, out)
    assert code == 2 and err.startswith("ruler: error: ") and len(err.splitlines()) == 1, err
    assert "manifest.json" in err and named in err, err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


WRONG_VALUES = (None, True, -1, 0, 1.5, "", "x", [], [1], {}, {"x": 1}, "../..")


def _paths(value, prefix=()):
    """Every key path of a JSON document."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


@pytest.mark.build
def test_fuzzed_manifests_never_give_a_traceback(pristine, tmp_path, capsys):
    """Any value of a manifest replaced by a value of another shape: verify and build answer
    with a verdict or one clear line (exit 2), never an exception."""
    import random

    rng = random.Random(2112)
    paths = [p for p in _paths(manifest(pristine)) if p]
    for trial in range(40):
        out = Path(shutil.copytree(pristine, tmp_path / f"t{trial}"))
        m = manifest(out)
        path, value = rng.choice(paths), rng.choice(WRONG_VALUES)
        _set(path, value)(m)
        save_manifest(out, m)
        code, text = run(capsys, out, "--no-load", "--workers", "1")
        assert code in (0, 1, 2), (path, value, text)
        if code == 2:
            assert text.startswith("ruler: error: ") and len(text.splitlines()) == 1, text
        code, err = _build_again(capsys, out)
        assert code in (0, 2), (path, value, err)
        if code == 2:
            assert err.startswith("ruler: error: ") and len(err.splitlines()) == 1, err


@pytest.mark.build
def test_an_unlisted_link_under_data_is_reported(out, tmp_path, capsys):
    """Issue 21.14: the dataset loader's patterns (`data/<config>/*/<L>.parquet`) would follow
    a link under data/ that no manifest entry names; verify names it."""
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(out / "data/gpt-4/niah_single_1", elsewhere)
    (out / "data/gpt-4/extra").symlink_to(elsewhere)
    code, text = run(capsys, out, "--no-load", "--workers", "1")
    assert code == 1 and "data/gpt-4/extra: symbolic link inside the build folder" in text, text
