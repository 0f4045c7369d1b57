"""The row schema shared by every split, the writer, `verify` and the evaluator."""

from __future__ import annotations

import pyarrow as pa

ROW_SCHEMA = pa.schema([
    pa.field("tokenizer", pa.string(), nullable=False),      # dataset config name
    pa.field("task", pa.string(), nullable=False),
    pa.field("max_seq_length", pa.int64(), nullable=False),  # the split's L
    pa.field("index", pa.int64(), nullable=False),           # sample number 0..N-1
    pa.field("input", pa.string(), nullable=False),          # raw prompt, no chat template
    pa.field("answer_prefix", pa.string(), nullable=False),  # pre-filled assistant text
    pa.field("outputs", pa.list_(pa.string()), nullable=False),  # references for the metric
    pa.field("length", pa.int64(), nullable=False),          # prompt tokens + tokens_to_generate
    pa.field("tokens_to_generate", pa.int64(), nullable=False),
    pa.field("metric", pa.string(), nullable=False),         # string_match_all | string_match_part
    pa.field("gold_token_positions", pa.list_(pa.int64()), nullable=False),  # in `input` tokens
    pa.field("gold_depths", pa.list_(pa.float64()), nullable=False),  # fraction of the context
    pa.field("haystack_size", pa.int64(), nullable=False),   # fitted size in the task's units
])

COLUMNS = tuple(ROW_SCHEMA.names)

#: What `gold_token_positions` / `gold_depths` mean, for the dataset card.
GOLD_POSITION_DOC = (
    "gold_token_positions: index of the first token of each gold item (needle, variable line, "
    "gold document; each occurrence of one where a long context repeats its source) when "
    "`input` is tokenized alone (no chat template, no special tokens); "
    "gold_depths: the same position as a fraction of the context's tokens (0 = start of the "
    "haystack, 1 = its end). Empty for cwe/fwe, whose answers are spread through the text."
)
