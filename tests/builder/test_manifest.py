"""The canonical row encoding behind `content_sha256`."""

from __future__ import annotations

import pytest

from ruler.builder.manifest import canonical_row, canonical_row_bytes

ROW = {"tokenizer": "llama-3.1", "task": "qa_1", "max_seq_length": 4096, "index": 3,
       "answer_prefix": "Answer:", "outputs": ['a "quoted" \\ answer', "日本"], "length": 4000,
       "tokens_to_generate": 32, "metric": "part", "gold_token_positions": [1, 2],
       "gold_depths": [0.1, 1e-05], "haystack_size": 7}


INPUTS = ["", "plain", 'say "hi"\\n', "back\\slash \\\\ and \\n", "line\nline\n\n",
          "tab\there", "cr\r\nlf", "bell\x07", "naïve café — 日本語 😀", '"input":""',
          '"context":""', "ends with backslash \\", "\x00nul", "\u2028 line separator",
          "\x7f del"]


def test_the_fast_encoding_equals_json_for_every_kind_of_input():
    for text in INPUTS:
        row = {**ROW, "input": text, "context": text[:3], "question": text[3:]}
        assert canonical_row_bytes(row) == canonical_row(row).encode("utf-8"), text


def test_the_fast_encoding_equals_json_for_every_pair_of_context_and_input():
    # Both long columns take the fast path, each alone or together, whatever the other holds.
    for context in INPUTS:
        for text in INPUTS:
            row = {**ROW, "input": text, "context": context, "question": "?"}
            assert canonical_row_bytes(row) == canonical_row(row).encode("utf-8"), (context, text)


@pytest.mark.subprocess
def test_the_fast_encoding_equals_json_on_built_rows(tmp_path):
    from helpers.builds import all_rows, build

    build(tmp_path, "gpt-4", ["qa_1", "niah_multikey_3", "cwe"], [1024], 2)
    rows = [r for rs in all_rows(tmp_path).values() for r in rs]
    assert len(rows) == 6
    assert all(canonical_row_bytes(r) == canonical_row(r).encode("utf-8") for r in rows)
