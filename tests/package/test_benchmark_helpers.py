"""The HotpotQA timing proxy (perf.hotpotqa_proxy) feeds a real qa_2 build."""

from __future__ import annotations

import json

import pytest

from helpers.builds import build, rows
from helpers.paths import SOURCES
from perf.hotpotqa_proxy import main as make_proxy


def _sentences(questions) -> set[str]:
    return {s for q in questions for _, sents in q["context"] for s in sents}


@pytest.mark.slow
def test_proxy_questions_build_qa_2_beyond_the_partial_copy_and_are_marked_unofficial(tmp_path):
    out = tmp_path / "sources"
    assert make_proxy(["--sources", str(SOURCES), "--out", str(out), "--questions", "300"]) == 0
    proxy = json.loads(next((out / "hotpotqa").glob("*timing-proxy.json")).read_text())
    originals = json.loads(next((SOURCES / "hotpotqa").glob("*.json")).read_text())
    assert len(originals) == 100 and len(proxy) == 300
    assert len({q["question"] for q in proxy}) == 300
    # no document sentence recurs across repetitions, as none would in the real file
    assert len(_sentences(proxy)) == 3 * len(_sentences(originals))

    report = build(tmp_path / "out", "llama-3.1", ["qa_2"], [4096], samples=150,
                   sources_dir=str(out))
    assert report.files[0].rows == 150
    assert len(rows(tmp_path / "out", "llama-3.1", "qa_2", 4096)) == 150
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["builds"]["llama-3.1"]["sources"]["hotpotqa"]["official"] is False
    assert manifest["builds"]["llama-3.1"]["official"] is False
