"""The card's RULERv2 section: its configs, tasks, metrics, sources and differences, rendered
from the catalog, the source registry, the manifest and `RULER2_DIFFERENCES`; "" for a folder
without a RULERv2 config (its card reads as before RULERv2 existed)."""

from __future__ import annotations

from ruler.benchmarks.ruler2 import prompt_mode
from ruler.benchmarks.ruler2.differences import RULER2_DIFFERENCES
from ruler.benchmarks.ruler2.tasks import RULER2_TOKENS_TO_GENERATE
from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS
from ruler.builder.manifest import Manifest
from ruler.cards.render import table
from ruler.catalog.sources import SOURCES, HubSource
from ruler.catalog.tasks import TASKS

#: What each task asks (the family x difficulty grid of NeMo-Skills' ruler2).
_ASKS = {
    "mk_niah_basic": "the one value of a key among distractor needles",
    "mk_niah_easy": "copy the MMLU question with an id",
    "mk_niah_medium": "copy, then solve, the question with an id (5 solved examples)",
    "mk_niah_hard": "solve the question with an id (5 solved examples)",
    "mv_niah_basic": "the four values of a key among distractor needles",
    "mv_niah_easy": "copy every question with an id (up to 4 share one)",
    "mv_niah_medium": "copy every question with an id, then the n-th of them",
    "mv_niah_hard": "copy the n-th question with an id",
    "qa_basic": "the id of the document whose text is given",
    "qa_easy": "the ids of the documents that answer a question",
    "qa_medium": "copy the relevant documents, then answer the question",
    "qa_hard": "answer the question",
}

_METRICS = {
    "ruler2_all": "mean over the references of max(reference in prediction, 1 - word error "
                  "rate), case-insensitive",
    "ruler2_2steps": "`ruler2_all` on the text after the prediction's last blank line",
    "ruler2_part": "max over the references, after removing copied `Document N:` blocks "
                   "from the prediction",
    "multichoice": "the letter in the last `\\boxed{}` (or an `Answer: X` line) equals the "
                   "reference letter",
}


def ruler2_section(manifest: Manifest) -> str:
    configs = [c for c in manifest.configs()
               if manifest.builds[c].benchmark == "ruler2" and manifest.files_of(c)]
    if not configs:
        return ""
    built = {f.task for c in configs for f in manifest.files_of(c)}
    tasks = table(["task", "asks for", "metric", "sources", "in this repo"],
                  [[f"`{t}`", _ASKS[t], f"`{TASKS[t].metric}`",
                    ", ".join(TASKS[t].sources) or "—", "yes" if t in built else "no"]
                   for t in RULER2_TASKS])
    metrics = "\n".join(f"- `{m}`: {text}." for m, text in _METRICS.items())
    hub_rows = []
    for sid in ("mmlu", "hotpotqa_hub"):
        spec = SOURCES[sid]
        assert isinstance(spec, HubSource)
        hub = spec.hub
        used = {c: (manifest.builds[c].sources or {}).get(sid) for c in configs}
        got = "; ".join(f"`{c}`: " + (f"revision `{s.revision}`" if s.revision
                                       else "stand-in files, no revision")
                        + ("" if s.official else " (**not official**)")
                        for c, s in used.items() if s)
        hub_rows.append([f"`{sid}`", f"`{hub.repo}` config `{hub.config}`",
                         ", ".join(f"`{s.name}` ({s.rows:,} rows)" for s in hub.splits),
                         f"`{hub.revision}`", SOURCES[sid].license, got or "—"])
    sources = table(["source", "Hub dataset", "splits read", "pinned revision", "licence",
                     "read by this folder"], hub_rows)
    differences = table(["scope", "what differs", "measured effect"], RULER2_DIFFERENCES)
    listed = ", ".join(f"`{c}`" for c in configs)
    return f"""## RULERv2

RULER's maintainers moved on to RULERv2 (NVIDIA/RULER, branch `rulerv2-ns`), whose generator,
evaluator and scorer live in NVIDIA-NeMo/Skills (`nemo_skills/dataset/ruler2`): 12 tasks, a
family (needle keys `mk`, multiple values `mv`, HotpotQA `qa`) by four difficulties. Upstream
regenerates them per tokenizer at evaluation time; its qa rows change with the process's string
hash seed. Here they are built once, deterministically, as configs of their own: config
`<tokenizer>--v2` holds a tokenizer's 12 tasks, `<tokenizer>--v2--<task>` one task, and the
manifest's build entry says `"benchmark": "ruler2"`. Configs here: {listed}.

- `input` is upstream's `question`, the whole user message; `answer_prefix` is empty (upstream's
  instruct prompts end with the question); `outputs` are upstream's `expected_answer` (for
  `mk_niah_medium` and `mk_niah_hard` the one letter A-D).
- `length` counts the prompt alone as the model reads it: the question as the user turn of
  the tokenizer's chat template with the generation prompt (prompt mode
  `{prompt_mode(True)}`), or BOS + question without a template; it is at most L.
- The answer comes on top: `tokens_to_generate` is {RULER2_TOKENS_TO_GENERATE}, upstream's
  RULERv2 example (greedy), so serve the model with a context of L + {RULER2_TOKENS_TO_GENERATE}
  or more.
- Scores: per task the mean of the row scores (x100); the RULERv2 score of a length is the plain
  mean of the 12 tasks.

Build them with `ruler build --benchmark v2 --tokenizer <tokenizer> --lengths 8k,32k` after
`ruler sources fetch mmlu hotpotqa_hub`; load with
`load_dataset(<repo>, "<tokenizer>--v2", split="8192")`.

{tasks}

Metrics (NeMo-Skills' `eval_ruler2` and multiple-choice scorer), per row:

{metrics}

### RULERv2 sources

Upstream loads `cais/mmlu` (`all`) and `hotpotqa/hotpot_qa` (`distractor`) from the Hub with no
revision; here they are pinned (`ruler sources fetch` checks the pinned sha256 where one is
published, the Hub's own LFS hash always, and the row counts) and each build records the
revision and the sha256 of every file it read (Provenance, `manifest.json`). Builds from
stand-in files (fewer rows in the Hub schema) are marked unofficial.

{sources}

### RULERv2 differences from upstream

{differences}

"""
