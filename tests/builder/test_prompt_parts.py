"""Every row carries its prompt's two parts: `context + question == input`, exactly.

Built for real, for every registry tokenizer: the 13 tasks at 4K and 16K in the default config,
the depth-swept variant (its tasks) and, for tokenizers with a chat template, the reserved
output budget variant. The fast tier builds at 4K every tokenizer's default config and each
variant on two tokenizers (FAST_VARIANTS); the rest of the 4K product and 16K are `slow` (a
16K row costs about four 4K rows).

Besides the equality: the question is the task's query text that follows the context
in upstream's template (the last occurrence of its opening words, never a part of the
context), the context ends where the haystack's line ends, the context's tokens open `input`'s
(so gold positions, token indices in `input`, are indices in the context's tokens) and the
question's tokens are the rest (but for SentencePiece's space before the first word of any
text it encodes alone).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers.builds import all_rows, build
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.builder import __version__
from ruler.builder.manifest import Manifest
from ruler.builder.tokenizer_registry import load_tokenizer, registry
from ruler.builder.verify.run import verify
from ruler.catalog.family import swept_tasks
from ruler.catalog.tasks import get_task
from ruler.catalog.variants import DepthSweep, OutputBudget
from ruler.commands.main import main

pytestmark = [pytest.mark.build]

LENGTHS = (4096, 16384)
BINS = 4
BUDGET = 256

#: How the query text after the context opens in each family's template (upstream's
#: constants.py; niah in its singular form when one value is asked for).
QUESTION_OPENINGS = {
    "niah": ("What is the special magic ", "What are all the special magic "),
    "variable_tracking": ("Question: Find all variables that are assigned the value ",),
    "common_words_extraction": ("Question: What are the 10 most common words in the above "
                                "list?",),
    "freq_words_extraction": ("Question: Do not provide any explanation. ",),
    "qa": ("Answer the question based on the given documents. Only give me the answer and do "
           "not output any other words.\n\nQuestion: ",),
}


def _check_row(tok, path: str, row: dict) -> None:
    where = f"{path} row {row['index']}"
    context, question, text = row["context"], row["question"], row["input"]
    assert context + question == text, where
    family = get_task(row["task"]).family.name
    opening = next((o for o in QUESTION_OPENINGS[family] if question.startswith(o)), None)
    assert opening is not None, (where, question[:80])
    # the last occurrence: qa's instruction also opens the context, vt/cwe's solved example
    # repeats the question's words before the task
    assert opening not in question[1:] and text.rindex(opening) == len(context), where
    assert context.endswith("\n") and not question[0].isspace(), where
    ids, context_ids, question_ids = tok.encode(text), tok.encode(context), tok.encode(question)
    assert ids[:len(context_ids)] == context_ids, where  # the context's tokens open input's
    assert all(p < len(context_ids) for p in row["gold_token_positions"]), where
    rest = ids[len(context_ids):]
    if tok.identity.kind == "sentencepiece":
        # SentencePiece prefixes a space to every text it encodes ("▁Question" alone,
        # "Question" after "\n"): the question's first token differs, nothing else.
        assert len(question_ids) == len(rest) and question_ids[1:] == rest[1:], where
    else:
        assert question_ids == rest, where


#: The variants the fast tier builds at 4K, each on the tokenizers whose differences it meets
#: (SentencePiece's leading space or a BPE, a chat template or none); every tokenizer builds
#: the default config there, and the `slow` run builds the rest of the product.
FAST_VARIANTS = {"depth": ("llama-2", "llama-3.1"), "budget": ("gemma-3", "qwen2.5")}
PARTS = ("default", "depth", "budget")


def _cases():
    for tokenizer in sorted(registry()):
        fast = ("default", *(v for v, toks in FAST_VARIANTS.items() if tokenizer in toks))
        yield pytest.param(tokenizer, LENGTHS[0], fast, id=f"{tokenizer}-{LENGTHS[0]}-fast")
        rest = tuple(p for p in PARTS if p not in fast)
        if rest:
            yield pytest.param(tokenizer, LENGTHS[0], rest, marks=pytest.mark.slow,
                               id=f"{tokenizer}-{LENGTHS[0]}-rest")
        for length in LENGTHS[1:]:
            yield pytest.param(tokenizer, length, PARTS, marks=pytest.mark.slow,
                               id=f"{tokenizer}-{length}")


@pytest.mark.build
@pytest.mark.parametrize("tokenizer,length,parts", list(_cases()))
def test_context_plus_question_is_input_for_every_task_variant_and_tokenizer(tmp_path,
                                                                           tokenizer, length,
                                                                           parts):
    tok = load_tokenizer(tokenizer)
    configs = {}  # config -> its task count
    if "default" in parts:
        build(tmp_path, tokenizer, STANDARD_TASKS, (length,), 1, workers=1)
        configs[tokenizer] = len(STANDARD_TASKS)
    if "depth" in parts:
        build(tmp_path, tokenizer, swept_tasks(), (length,), 1, workers=1,
              variant=DepthSweep(BINS))
        configs[f"{tokenizer}--depth{BINS}"] = len(swept_tasks())
    if "budget" in parts and tok.has_chat_template:  # it counts the prompt with its template
        build(tmp_path, tokenizer, STANDARD_TASKS, (length,), 1, workers=1,
              variant=OutputBudget(BUDGET))
        configs[f"{tokenizer}--out{BUDGET}"] = len(STANDARD_TASKS)
    if not configs:  # the budget variant alone, asked of a tokenizer without a template
        pytest.skip(f"{tokenizer} has no chat template: no output budget variant to build")
    files = all_rows(tmp_path)
    assert {Path(p).parts[1] for p in files} == set(configs)
    assert len(files) == sum(configs.values())
    for path, rows in files.items():
        for row in rows:
            _check_row(tok, path, row)


def test_verify_finds_a_moved_question_boundary(tmp_path):
    """`ruler verify` checks the equality on every row and, where it re-derives gold spans,
    that the cut is the task family's."""
    build(tmp_path, "gpt-4", ("niah_single_1", "vt", "cwe", "fwe", "qa_1"), (1024,), 2,
          workers=1)
    report = verify(tmp_path, full=True)  # every row's cut checked against its family's
    assert report.ok and all(f.gold_checked == 2 for f in report.files), report.all_problems()
    rel = "data/gpt-4/vt/1024.parquet"
    rows = pq.read_table(tmp_path / rel).to_pylist()
    rows[0]["context"] += rows[0]["question"][:9]  # "Question:" moved into the context
    rows[0]["question"] = rows[0]["question"][9:]
    rows[1]["question"] += " "  # no longer adds up to input
    _rewrite(tmp_path, rel, rows)
    problems = [str(p) for p in verify(tmp_path, full=True).all_problems()]
    assert any("row 0: question starts at character" in p and "task family's split" in p
               for p in problems), problems
    assert any("row 1: context" in p and "!= input" in p for p in problems), problems


def _rewrite(out: Path, rel: str, rows: list[dict], schema: pa.Schema | None = None) -> None:
    """Write a split file's rows back, with its manifest entry's bytes and hashes updated (so
    the only finding is the rows' own)."""
    from ruler.builder.manifest import content_sha256_rows
    from ruler.builder.schema import ROW_SCHEMA
    from ruler.kernel.hashing import file_sha256

    pq.write_table(pa.Table.from_pylist(rows, schema=schema or ROW_SCHEMA), out / rel)
    m = Manifest.load(out)
    m.files[rel] = replace(m.files[rel], bytes=(out / rel).stat().st_size,
                           sha256=file_sha256(out / rel), content_sha256=content_sha256_rows(rows))
    m.save(out)


@pytest.fixture
def old_build(tmp_path) -> Path:
    """A build as ruler 0.1.0 left it: rows without `context` and `question`, the manifest
    recording generator version 0.1.0 (and the identity and build keys that version gave)."""
    from ruler.builder.identity import file_key, identity_of_build
    from ruler.builder.schema import ROW_SCHEMA

    out = tmp_path / "old"
    build(out, "gpt-4", ("niah_single_1",), (1024,), 2, workers=1)
    rel = "data/gpt-4/niah_single_1/1024.parquet"
    old_schema = pa.schema([f for f in ROW_SCHEMA if f.name not in ("context", "question")])
    rows = [{k: v for k, v in r.items() if k in old_schema.names}
            for r in pq.read_table(out / rel).to_pylist()]
    _rewrite(out, rel, rows, old_schema)
    m = Manifest.load(out)
    b = replace(m.builds["gpt-4"], generator_version="0.1.0")
    m.builds["gpt-4"] = b = replace(b, identity=identity_of_build(b))
    m.generator = {**(m.generator or {}), "version": "0.1.0"}
    m.files[rel] = replace(m.files[rel],
                           build_key=file_key(b.identity, "niah_single_1", 1024, {}))
    m.save(out)
    return out


def test_an_older_build_is_refused_with_what_to_do_not_mixed(old_build, capsys):
    assert not [str(p) for p in verify(old_build).all_problems() if "build_key" in str(p)]
    code = main(["build", "--tokenizer", "gpt-4", "--tasks", "niah_single_1,vt", "--lengths",
                 "1024", "--samples", "2", "--out", str(old_build), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and f"generator version 0.1.0 -> {__version__}" in err, err
    assert not (old_build / "data/gpt-4/vt").exists()  # nothing of the new version mixed in
    code = main(["verify", str(old_build)])
    out = capsys.readouterr().out
    assert code != 0 and "rows have no context and question column(s): written by a ruler " \
                         "older than 0.2.0" in out, out
    assert "Traceback" not in out
