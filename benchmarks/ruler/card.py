"""RULER's text on the dataset card, the card body of RULER's family (`Benchmark.card_body` of
RULER, RULERv2 and ONERULER: the card's frame, `ruler.cards.render`, shows it once for a folder
holding any of their configs): what RULER is, its tasks and metrics, the differences from
upstream, the check with a real model and the citation."""

from __future__ import annotations

from ruler.benchmarks.ruler.declared_differences import declared_differences
from ruler.benchmarks.ruler.differences import DIFFERENCES
from ruler.benchmarks.ruler.tasks import TASKS
from ruler.builder.manifest import Manifest
from ruler.cards import real_model
from ruler.cards.body import CardBody, CardWords
from ruler.cards.declared import recorded_declarations
from ruler.cards.render import table

INTRO = """RULER (Hsieh et al., *RULER: What's the Real Context Size of Your Long-Context Language
Models?*, COLM 2024; [NVIDIA/RULER](https://github.com/NVIDIA/RULER)) measures how well a model
uses its context window with 13 synthetic tasks — needle retrieval, variable tracking, word
aggregation and multi-document QA — at chosen lengths. Upstream generates the data at
evaluation time, for one tokenizer at a time."""

METRICS = """
Metrics (upstream's `scripts/eval/synthetic/constants.py`), per sample, then averaged over the
samples of a task and split, times 100:

- `string_match_all`: the fraction of the references (`outputs`) found in the prediction, each
  as a case-insensitive substring.
- `string_match_part`: 1 if any reference is a case-insensitive substring of the prediction,
  else 0.
"""

CITATION = """
## Citation

```bibtex
@article{hsieh2024ruler,
  title   = {{RULER}: What's the Real Context Size of Your Long-Context Language Models?},
  author  = {Cheng-Ping Hsieh and Simeng Sun and Samuel Kriman and Shantanu Acharya and
             Dima Rekesh and Fei Jia and Yang Zhang and Boris Ginsburg},
  journal = {arXiv preprint arXiv:2404.06654},
  year    = {2024}
}
```

(Published at the First Conference on Language Modeling, COLM 2024.)"""


#: Why lm-eval's built-in `ruler` group gives other numbers (observed in lm-eval 0.4.13).
BUILTIN_RULER_DIFFERENCES = (
    "its `vt` template misspells \"assgined\" and joins the VAR lines and the noise on one line",
    "its `cwe` prompt drops the worked example",
    "its `string_match_part` (qa) scores the fraction of the reference aliases found (0.75 for "
    "three of four, where RULER gives 1.0 for any one)",
    "it generates its samples anew at every run, for the model's tokenizer, from its own "
    "haystack text and global random state",
)


#: What the card's frame says of RULER's rows in its words (RULERv2's and ONERULER's share them).
WORDS = CardWords(
    metrics="upstream's metrics",
    budget="upstream's budget for the task",
    haystack_units=" (sentences, needles, documents, words, ...)",
    question=(
        ", as upstream's templates place it (\"What are all the special magic ...?\", "
        "\"Question: ...\", or a repeated instruction and \"Question: ...\")"),
    context=(
        ": the task's instruction before the haystack (every template opens with one), the "
        "solved example before that where the task has one, the haystack itself, and the "
        "newlines that end it"),
    cut=(
        " The cut is a clean token junction (\"...\\n\" | \"What\"): `context` tokenized alone "
        "gives the first tokens of `input`, so gold_token_positions (token indices in `input`) "
        "are also indices in `context`'s tokens, and `question` tokenized alone gives the rest "
        "(with the registry's tokenizers; a SentencePiece model such as llama-2 prefixes a "
        "space to any text it encodes alone, which changes the question's first token)."),
    gold_items=(
        " (needle, variable line, gold document; each occurrence of one where a long context "
        "repeats its source)"),
    reference="the paper",
    kvpress_dataset="kvpress's RULER dataset",
    repeated=(
        ": SQuAD v2.0 dev has 1,204 distinct paragraphs (about 200K tokens), the essay corpus "
        "about 700K tokens, a partial HotpotQA copy (100 questions) about 1,000 paragraphs "
        "(130K tokens). Past that point the source is repeated, as upstream repeats it: the QA "
        "tasks take the whole document list again and cut it (then shuffle as at any length), "
        "so a question's gold document occurs several times — every occurrence is a gold item "
        "in `gold_token_positions` and `gold_depths`; the essay haystacks continue with the "
        "corpus from its start. Needle keys stay unique within a sample, and no other task "
        "repeats a source"),
)


class RulerBody(CardBody):
    title = "RULER"
    tags = ("ruler", "needle-in-a-haystack")
    words = WORDS

    def intro(self, manifest: Manifest) -> str:
        return INTRO + " "

    def tasks(self, manifest: Manifest) -> tuple[str, ...]:
        return TASKS

    def metrics(self, manifest: Manifest) -> str:
        return METRICS

    def differences(self, manifest: Manifest) -> str:
        # and those of the folder's declared tasks (the paper's Section 5 configurations
        # upstream HEAD cannot build), as its manifest records them
        declared = declared_differences(recorded_declarations(manifest))
        differences = table(["scope", "what differs", "why"], [*DIFFERENCES, *declared])
        return (f"## Differences from upstream\n\n{differences}\n\n## Checked with a real "
                f"model\n\n{real_model.card_section()}\n\n")

    def citation(self, manifest: Manifest) -> str:
        return CITATION

    def lm_eval_notes(self, manifest: Manifest) -> list[str]:
        return ["lm-eval's built-in `ruler` group is a different generator, and its numbers "
                "are not comparable with these:" + "".join(
                    f"\n  - {d}" for d in BUILTIN_RULER_DIFFERENCES)]

    def licence_note(self, manifest: Manifest) -> str:
        return ("SQuAD and HotpotQA are CC BY-SA 4.0 (share-alike), the essays are © Paul "
                "Graham")


BODY = RulerBody()
