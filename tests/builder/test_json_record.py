"""The JSON records (`kernel.json_record`) and the manifest's records in a build entry
(`catalog.manifest_records`): what a record reads it writes back, whatever version wrote it;
whether a build is official is decided in one place."""

from __future__ import annotations

from dataclasses import replace

from ruler.builder.manifest import BuildEntry
from ruler.catalog.manifest_records import (
    IdentityRecord,
    SourceRecord,
    TokenizerRecord,
    is_official,
    unofficial_reasons,
)

SHA, OTHER = "a" * 64, "b" * 64
TOKENIZER = {"name": "gpt-4", "kind": "tiktoken", "origin": "registry", "repo": None,
             "revision": None, "files": {"cl100k_base.tiktoken": SHA},
             "chat_template_sha256": None, "pinned": True}


def test_a_record_writes_back_what_it_read():
    """Nulls stay nulls, absent keys stay absent, unknown keys are kept, nested ones too."""
    for data in (TOKENIZER, {"name": "t", "kind": "hf"},
                 {**TOKENIZER, "future": {"x": [1]}}):
        assert TokenizerRecord.from_json(data).to_json() == data
    entry = {"tokenizer": {**TOKENIZER, "future": 1}, "seed": 42,
             "sources": {"squad": {"id": "squad", "file": "f", "sha256": SHA, "official": True,
                                   "official_sha256": SHA}},
             "identity": {"seed": 42, "tokenizer_revision": None, "packages": {}},
             "future_entry": "kept"}
    build = BuildEntry.from_json(entry)
    assert isinstance(build.tokenizer, TokenizerRecord) and build.tokenizer.extra == {"future": 1}
    assert isinstance(build.sources["squad"], SourceRecord)
    assert isinstance(build.identity, IdentityRecord) and build.identity.seed == 42
    assert build.to_json() == entry


def test_a_field_set_after_reading_is_written():
    """A field the JSON lacked is left out only while it holds its default."""
    record = TokenizerRecord.from_json({"name": "t", "kind": "hf"})
    assert "pinned" not in record.to_json()
    assert replace(record, pinned=True).to_json() == {"name": "t", "kind": "hf", "pinned": True}


def test_optional_fields_are_left_out_when_none():
    """The manifest's records have no nulls: None means absent (`OPTIONAL`); the identity's
    tokenizer revision is written as null, its benchmark and variant not at all."""
    tok = TokenizerRecord(name="t", kind="hf")
    assert BuildEntry(tokenizer=tok).to_json() == {"tokenizer": tok.to_json()}
    assert IdentityRecord(seed=1).to_json() == {
        "generator_version": None, "seed": 1, "samples": None, "prompt_mode": None,
        "tokenizer": None, "tokenizer_revision": None, "packages": {}}


def test_official_is_a_pinned_tokenizer_and_the_official_bytes_of_every_source():
    tok = TokenizerRecord.from_json(TOKENIZER)
    good = SourceRecord(sha256=SHA, file="f", official=True, official_sha256=SHA)
    flagged = replace(good, sha256=OTHER)  # says official, holds other bytes (a hand edit)
    partial = SourceRecord(sha256=OTHER, file="p", official=False, official_sha256=SHA,
                           note="a partial copy")
    assert is_official(tok, {"squad": good}) and unofficial_reasons(tok, {"squad": good}) == []
    assert not is_official(tok, {"squad": flagged}) and not flagged.flag_consistent
    assert not is_official(replace(tok, pinned=False), {"squad": good})
    assert unofficial_reasons(replace(tok, pinned=False), {"squad": partial}) == [
        "tokenizer 'gpt-4' is not a pinned registry tokenizer",
        f"source squad is not the official file (p, sha256 {OTHER[:12]}, official "
        f"{SHA[:12]}): a partial copy"]
    entry = BuildEntry(tokenizer=tok, sources={"squad": partial}, official=False)
    assert not entry.official_by_record() and len(entry.unofficial_reasons()) == 1
    assert replace(entry, official=True).unofficial_reasons() == []  # the entry says it is
