"""The row schema shared by every split, the writer, `verify` and the evaluator."""

from __future__ import annotations

import pyarrow as pa

ROW_SCHEMA = pa.schema([
    pa.field("tokenizer", pa.string(), nullable=False),      # dataset config name
    pa.field("task", pa.string(), nullable=False),
    pa.field("max_seq_length", pa.int64(), nullable=False),  # the split's L
    pa.field("index", pa.int64(), nullable=False),           # sample number 0..N-1
    pa.field("input", pa.string(), nullable=False),          # raw prompt, no chat template
    pa.field("context", pa.string(), nullable=False),        # input up to the question
    pa.field("question", pa.string(), nullable=False),       # the rest: context + question == input
    pa.field("answer_prefix", pa.string(), nullable=False),  # pre-filled assistant text
    pa.field("outputs", pa.list_(pa.string()), nullable=False),  # references for the metric
    pa.field("length", pa.int64(), nullable=False),          # prompt tokens + tokens_to_generate
    pa.field("tokens_to_generate", pa.int64(), nullable=False),
    pa.field("metric", pa.string(), nullable=False),         # string_match_all | string_match_part
    pa.field("gold_token_positions", pa.list_(pa.int64()), nullable=False),  # in `input` tokens
    pa.field("gold_depths", pa.list_(pa.float64()), nullable=False),  # fraction of the context
    pa.field("haystack_size", pa.int64(), nullable=False),   # fitted size in the task's units
])

#: Text columns that hold a whole context (hashed by `manifest.canonical_row_bytes`' fast path).
LONG_TEXT_COLUMNS = ("input", "context")

#: The generator version that added `context` and `question` (ruler.builder.__version__):
#: rows of an older build lack them.
PROMPT_PARTS_SINCE = "0.2.0"

def schema_problem(schema: pa.Schema) -> str:
    """What is wrong with a split file's schema (not ROW_SCHEMA), in one line: a file of a
    build made before `context` and `question` existed says so and how to rebuild."""
    missing = [n for n in ROW_SCHEMA.names if n not in schema.names]
    if missing and set(missing) <= {"context", "question"}:
        return (f"rows have no {' and '.join(missing)} column(s): written by a ruler older than "
                f"{PROMPT_PARTS_SINCE}; rebuild the config with this version (`ruler build ... "
                f"--overwrite`) to add them")
    return f"schema differs from ROW_SCHEMA: {schema}"
