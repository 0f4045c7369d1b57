"""RULER's exported lm-evaluation-harness tasks: its per-row metrics, copied into utils.py; its
tasks aggregate with `utils.aggregate` (upstream's rounded mean)."""

from ruler.benchmarks.ruler.metrics import row_match_all, row_match_part
from ruler.eval.integrations.lm_eval_export import LmEvalHooks

LM_EVAL = LmEvalHooks(code=(row_match_all, row_match_part))
