"""Rows as an Arrow table built from buffers (builder.row_table): the table Table.from_pylist
makes, without importing pandas."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ruler.builder.row_table import rows_table
from ruler.builder.schema import ROW_SCHEMA


def _row(i: int, **changes) -> dict:
    row = {"tokenizer": "llama-3.1", "task": "niah_single_1", "max_seq_length": 4096,
           "index": i, "input": f"Ein Text über {i} Nadeln — 中文 🎯\n" * (i + 1),
           "context": "ctx " * i, "question": "", "answer_prefix": " Answer:",
           "outputs": [f"{i}" * 3, "ünï"][:i % 3], "length": 4000 + i,
           "tokens_to_generate": 128, "metric": "string_match_all",
           "gold_token_positions": list(range(i % 4)), "gold_depths": [j / 7 for j in range(i % 3)],
           "haystack_size": 2**62 - i}
    return {**row, **changes}


@pytest.mark.parametrize("rows", [
    [_row(i) for i in range(7)],
    [_row(0)],
    [_row(0, outputs=[], gold_token_positions=[], gold_depths=[], input="")],
    [_row(1, gold_depths=[0, 1], index=-5)],  # ints in a float column, a negative int
])
def test_the_table_is_the_one_from_pylist_makes(rows):
    ours = rows_table(rows, ROW_SCHEMA)
    theirs = pa.Table.from_pylist(rows, schema=ROW_SCHEMA)
    assert ours.schema == theirs.schema and ours.equals(theirs)
    assert ours.to_pylist() == theirs.to_pylist()


@pytest.mark.parametrize("change", [{"index": True}, {"outputs": ("a",)}, {"length": 2.0},
                                    {"input": None}, {"haystack_size": 2**70}])
def test_other_values_are_left_to_from_pylist(change):
    """A value the buffers path does not take gives from_pylist's table, or its error."""
    rows = [_row(0), _row(1, **change)]
    try:
        theirs = pa.Table.from_pylist(rows, schema=ROW_SCHEMA)
    except Exception as e:  # noqa: BLE001 (whatever pyarrow raises, ours raises the same)
        with pytest.raises(type(e)):
            rows_table(rows, ROW_SCHEMA)
        return
    assert rows_table(rows, ROW_SCHEMA).equals(theirs)


@pytest.mark.subprocess
def test_writing_a_split_does_not_import_pandas(tmp_path):
    """At e344ff3 each build process imported pandas (a third of a second) through
    Table.from_pylist when it wrote its first file."""
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from ruler.builder.writer import SplitWriter
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_row_table import _row
        with SplitWriter(Path({str(tmp_path)!r}) / "4096.parquet", 4096) as w:
            for i in range(3):
                w.write(_row(i))
        print("pandas" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
    assert pq.read_table(tmp_path / "4096.parquet").to_pylist() == \
        [_row(i) for i in range(3)]
