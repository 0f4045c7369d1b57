"""Golden rows: a small fixed build whose content hashes are committed here, so any change of
generated output (code, or a package version the constraints file pins) is a visible,
deliberate update of `golden_content_sha256.json`, never a silent one.

The hashes are `content_sha256` of 13 tasks x 4K x 2 samples for a chat-template tokenizer
(llama-3.1), a tiktoken encoding (gpt-4o) and a SentencePiece model (llama-2), of RULERv2's 12
tasks x 4K x 2 samples for llama-3.1 and qwen2.5 (config `<tokenizer>--v2`, from the stand-in
MMLU and HotpotQA), and of ONERULER's 7 tasks x 8000 (upstream's 8K) x 2 samples for llama-3.1
in each of the 26 languages (config `llama-3.1--oneruler-<lang>`: per language, so a change of
one book's sentences shows as that language's rows only), generated with the versions in
`constraints.txt`. To update them after a deliberate change, rebuild with `ruler build
[--benchmark v2] --tokenizer T --lengths 4096 --samples 2` (`--benchmark oneruler --languages
all --lengths 8000`) and copy the manifest's `content_sha256` values, saying in the commit why
the rows changed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.builds import build
from helpers.paths import ROOT
from ruler.benchmarks.oneruler.languages import LANGUAGES
from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS
from ruler.builder.identity import CONTENT_PACKAGES
from ruler.builder.manifest import read_manifest

GOLDEN = json.loads(Path(__file__).with_name("golden_content_sha256.json").read_text())
CONSTRAINTS = ROOT / "constraints.txt"


@pytest.mark.slow
@pytest.mark.parametrize("tokenizer", ["llama-3.1", "gpt-4o", "llama-2"])
def test_rows_equal_the_committed_golden_hashes(tmp_path, tokenizer):
    build(tmp_path, tokenizer, STANDARD_TASKS, [4096], 2)
    got = {rel: e["content_sha256"] for rel, e in read_manifest(tmp_path)["files"].items()}
    want = {rel: h for rel, h in GOLDEN.items() if rel.startswith(f"data/{tokenizer}/")}
    assert len(want) == len(STANDARD_TASKS)
    changed = sorted(rel for rel in want if got.get(rel) != want[rel])
    assert not changed, (f"generated rows changed for {changed}: if deliberate, update "
                         f"tests/builder/golden_content_sha256.json (see this module's docstring)")


@pytest.mark.slow
@pytest.mark.parametrize("tokenizer", ["llama-3.1", "qwen2.5"])
def test_ruler2_rows_equal_the_committed_golden_hashes(tmp_path, tokenizer):
    build(tmp_path, tokenizer, RULER2_TASKS, [4096], 2, benchmark="ruler2")
    got = {rel: e["content_sha256"] for rel, e in read_manifest(tmp_path)["files"].items()}
    want = {rel: h for rel, h in GOLDEN.items() if rel.startswith(f"data/{tokenizer}--v2/")}
    assert len(want) == len(RULER2_TASKS)
    changed = sorted(rel for rel in want if got.get(rel) != want[rel])
    assert not changed, (f"generated rows changed for {changed}: if deliberate, update "
                         f"tests/builder/golden_content_sha256.json (see this module's docstring)")


@pytest.mark.slow
@pytest.mark.build
def test_oneruler_rows_equal_the_committed_golden_hashes_in_every_language(tmp_path):
    for lang in LANGUAGES:
        build(tmp_path, "llama-3.1", ONERULER_TASKS, [8000], 2, benchmark="oneruler",
              axes={"language": lang})
    got = {rel: e["content_sha256"] for rel, e in read_manifest(tmp_path)["files"].items()}
    want = {rel: h for rel, h in GOLDEN.items() if rel.startswith("data/llama-3.1--oneruler-")}
    assert len(want) == len(ONERULER_TASKS) * len(LANGUAGES)
    changed = sorted(rel for rel in want if got.get(rel) != want[rel])
    assert not changed, (f"generated rows changed for {changed}: if deliberate, update "
                         f"tests/builder/golden_content_sha256.json (see this module's docstring)")


def test_constraints_pin_every_package_that_shapes_content():
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", CONSTRAINTS.read_text(), re.M))
    content = {p for ps in CONTENT_PACKAGES.values() for p in ps}
    assert set(pins) == content | {"pyarrow"}
