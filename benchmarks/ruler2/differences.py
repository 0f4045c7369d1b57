"""RULERv2's deliberate differences from NeMo-Skills' generators: one line each, with the
reason (scope, what differs, why)."""

from __future__ import annotations

#: RULERv2 (NeMo-Skills `ruler2`): what differs from NeMo-Skills' generators, and what it does,
#: as measured on its own output ($RULER_SHARED/reference/nemo-skills-ruler2: llama-3.1, 4K and 8K,
#: 50 samples a task, stand-in MMLU and HotpotQA; perf/ruler2_reference.py prints the
#: comparison) and on its generators run offline (perf/ruler2_speed.py's harness). The
#: card's RULERv2 section renders this list only.
RULER2_DIFFERENCES: tuple[tuple[str, str, str], ...] = (
    ("all 12 tasks",
     "every sample has its own RNG (seed, tokenizer config, task, length, index); the MMLU "
     "test question of sample i is fixed per task by the seed alone",
     "upstream's one global RNG is consumed by its size probes, so every row depends on the "
     "tokenizer's probe trajectory: its llama-3.1 and qwen2.5 runs of mk_niah_easy and "
     "mk_niah_hard at 4K ask about 0 of the same 50 MMLU test questions, where these builds "
     "ask the same question in all 50 samples; any subset of a build gives the same rows. "
     "Distributions are unchanged: mean depth of the gold item 0.43-0.58 here, 0.40-0.57 "
     "upstream, per task and length"),
    ("qa_*",
     "the haystack is HotpotQA's train paragraphs in sorted order",
     "upstream builds it with `list(set(...))`, whose order follows the process's string hash "
     "seed: 50 of 50 rows of qa_basic and qa_hard at 4K differ between PYTHONHASHSEED 1 and 2 "
     "(all four qa tasks in the reference README); here two builds with different hash seeds "
     "are byte-identical"),
    ("qa_*",
     "a question's own paragraphs (supporting and distractor) are never drawn again into the "
     "haystack under another id",
     "upstream only subtracts their count, so a gold paragraph can appear twice under two ids "
     "and the other id, a correct answer to qa_basic / qa_easy, scores wrong: in its rows "
     "(stand-in pool: the 100 questions' own paragraphs) qa_basic 4 % / 4 %, qa_easy, "
     "qa_medium, qa_hard 2 % / 10 % of rows at 4K / 8K; here 0 %. With the real train split "
     "(90,447 questions) it happens only where a validation paragraph is also a train one"),
    ("all 12 tasks",
     "`length` counts the prompt as the model reads it: the question as the user turn of the "
     "tokenizer's chat template with the generation prompt (prompt mode `reasoning`; BOS + "
     "question without a template), and it is at most L; the answer (`tokens_to_generate` = "
     "16384) comes on top, as upstream's",
     "upstream counts `tokenize(question)`: no chat template, no BOS; the template adds 10 "
     "tokens for llama-3.1, 29 for qwen2.5, so the raw question here is that much shorter than "
     "upstream allows"),
    ("all 12 tasks",
     "each sample is fitted on its own to the largest haystack whose prompt fits L",
     "upstream sizes the haystack once from sample 0 and shrinks a sample 10 questions (5 "
     "lines or documents) at a time, so its rows fall short of L: mean fill (raw prompt / L, "
     "upstream's count) at 4K 0.974-0.978 here against 0.806-0.834 upstream for the MMLU "
     "tasks, 0.972-0.975 against 0.878-0.904 for qa, 0.995 against 0.985-0.990 for the needle "
     "tasks; at 8K 0.986-0.991 against 0.889-0.906, 0.984-0.988 against 0.926-0.931, 0.998 "
     "against 0.994-0.996"),
    ("mk/mv MMLU, qa_*",
     "the 7-digit ids of one prompt are distinct (the mv tasks still give each id to up to 4 "
     "questions, as upstream); a distractor needle never has the asked key",
     "upstream draws every id independently: none of its 4K and 8K rows has two items under "
     "one id; at 128K (about 1,340 questions, 940 documents a prompt) about 9 % of mk rows and "
     "5 % of qa rows would, but the asked item is one of the pair in only about 0.02 % of "
     "rows, so scores barely move"),
)
