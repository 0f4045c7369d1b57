"""The registry of published RULER results: every packaged number checked against the source text
it was taken from, the schema enforced on load, a user's file extending the registry.

Sources: NVIDIA/RULER's README at c3f5e3b, read from $RULER_SHARED (parsed here, independently of
how the registry file was written); the maintainer's comment in NVIDIA/RULER issue #63 (its
table quoted below, as the search corpus holds it: https://github.com/NVIDIA/RULER/issues/63,
hsiehjackson, 2024-09-10); this project's own card data (cards/real_model.json).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.paths import SHARED
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.catalog.tasks import PAPER_LENGTHS
from ruler.commands.main import main
from ruler.eval.metrics.aggregate import summarize
from ruler.eval.published_results import load_registry, parse_length_label, read_file
from ruler.kernel.errors import RulerError

README = SHARED / "reference" / "upstream-ruler-results" / "upstream-README.md"
REPO = Path(__file__).resolve().parents[2]

# NVIDIA/RULER issue #63, comment by hsiehjackson (2024-09-10), verbatim.
ISSUE_63 = """\
| Tasks | niah_single_1 | niah_single_2 | niah_single_3 | niah_multikey_1 | niah_multikey_2 | niah_multikey_3 | niah_multivalue | niah_multiquery |   vt  |  fwe |  cwe  | qa_1 | qa_2 |
|-------|:-------------:|:-------------:|:-------------:|:---------------:|:---------------:|:---------------:|:---------------:|:---------------:|:-----:|:----:|:-----:|:----:|:----:|
| Score |     100.0     |     100.0     |     100.0     |      100.0      |      100.0      |      100.0      |       99.5      |      100.0      | 100.0 | 98.0 | 100.0 | 88.0 | 70.0 |
"""  # noqa: E501


def _readme_rows() -> list[dict]:
    """The README's results table: model link, claimed, effective, six scores, three averages
    (None where a cell is empty, '-' or 'TBD')."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("|Models|"))
    out = []
    for line in lines[start + 2:]:
        if not line.strip():
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        link = re.match(r"\[[^\]]+\]\((.+?)\)(?: \(|$)", cells[0]).group(1)

        def value(text: str) -> float | None:
            text = re.sub(r"</?ins>|\*\*\([^)]*\)\*\*", "", text).strip()
            return None if text in ("", "-", "TBD") else float(text)

        numbers = [value(c) for c in cells[3:]] + [None] * (9 - len(cells[3:]))
        out.append({"link": link, "claimed": cells[1] or None, "effective": cells[2] or None,
                    "scores": numbers[:6], "averages": numbers[6:9]})
    return out


def test_every_number_of_the_readme_entry_is_the_readme_s():
    registry = load_registry()
    entries = [e for e in registry.entries.values()
               if e.origin.endswith("nvidia-ruler-readme-c3f5e3b.json")]
    rows = _readme_rows()
    assert len(rows) == len(entries) == 45
    by_link = {e.link: e for e in entries}
    assert len(by_link) == 45
    for row in rows:
        e = by_link[row["link"]]
        assert [e.scores.get(L) for L in PAPER_LENGTHS] == row["scores"], e.name
        assert [e.avg, e.wavg_inc, e.wavg_dec] == row["averages"], e.name
        assert (e.claimed_length, e.effective_length) == (row["claimed"], row["effective"])
        assert e.source.commit == "c3f5e3b4f87f97e048793bb510a3a6b19a46bf3a"
    # The averages the README gives are those of its per-length scores (a transcription check
    # that does not depend on the parser above): within 0.1, since the README averaged the
    # unrounded scores (each off by up to 0.05) and rounded the result (0.05 more).
    for e in entries:
        if e.wavg_inc is not None and all(e.scores[L] is not None for L in PAPER_LENGTHS):
            s = summarize(e.scores)
            for mine, theirs in ((s.avg, e.avg), (s.wavg_inc, e.wavg_inc),
                                 (s.wavg_dec, e.wavg_dec)):
                assert abs(mine - theirs) <= 0.1 + 1e-9, e.name


def test_the_issue_63_entry_is_the_maintainer_s_table():
    header, _, scores = ISSUE_63.splitlines()
    tasks = [c.strip() for c in header.strip("|").split("|")][1:]
    values = [float(c) for c in scores.strip("|").split("|")[1:]]
    e = load_registry().find("ruler-issue-63/gpt-4-1106-preview")
    assert sorted(tasks) == sorted(STANDARD_TASKS)
    assert {t: e.task_score(t, 4096) for t in tasks} == dict(zip(tasks, values))
    mean, derived = e.score(4096)
    assert derived and round(mean, 1) == 96.6  # the README's GPT-4 4K score
    assert load_registry().find("ruler-readme/gpt-4-1106-preview").score(4096) == (96.6, False)


def test_the_card_entry_is_the_card_s_upstream_column():
    card = json.loads((REPO / "cards" / "real_model.json").read_text(encoding="utf-8"))
    e = load_registry().find("gemma-3-270m-base-upstream-rows")
    assert {(c["task"], c["length"]): c["upstream"] for c in card["cells"]} == \
        {(t, L): v for t, by in e.tasks.items() for L, v in by.items()}
    assert e.mode == card["run"]["mode"] == "base" and e.samples_per_task == 30


def test_lookup_by_name_suffix_or_model_id_and_by_a_run_s_model():
    registry = load_registry()
    e = registry.find("meta-llama-3.1-8b-instruct")
    assert registry.find("meta-llama/Llama-3.1-8B-Instruct") is e
    assert [x.name for x in registry.for_model("/models/Meta-Llama-3.1-8B-Instruct/")] == \
        [e.name]
    with pytest.raises(RulerError, match="no published result named 'llama-9'"):
        registry.find("llama-9")
    with pytest.raises(RulerError, match="names 2 published results"):
        registry.find("gpt-4-1106-preview")
    assert parse_length_label(">128k").beyond and parse_length_label("<4K").length is None
    assert parse_length_label("32K").length == 32768


def _user_file(tmp_path: Path, entry: dict) -> Path:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({
        "format": "ruler-published/1", "benchmark": "ruler",
        "source": {"title": "my lab's run", "url": "https://example.org/run", "date":
                   "2026-01-02"},
        "defaults": {"mode": "chat", "samples_per_task": 100},
        "entries": [entry]}))
    return path


def test_a_user_file_extends_the_registry_and_damage_is_one_line(tmp_path, capsys):
    good = _user_file(tmp_path, {"name": "mine/my-model", "model": "My model",
                                 "model_ids": ["me/my-model"], "scores": {"4096": 91.0}})
    registry = load_registry([good])
    assert registry.find("my-model").score(4096) == (91.0, False)
    assert registry.find("my-model").samples_per_task == 100
    assert main(["published", "my-model", "--reference-file", str(good)]) == 0
    assert "mine/my-model  My model  [4K]" in capsys.readouterr().out
    # A number out of range, an unknown field, a task RULER lacks, a name given twice.
    for entry, message in (
            ({"name": "mine/x", "model": "x", "model_ids": [], "scores": {"4096": 101}},
             "at entries/0/scores/4096: 101 is greater than the maximum of 100"),
            ({"name": "mine/x", "model": "x", "model_ids": [], "score": {}},
             "Additional properties are not allowed"),
            ({"name": "mine/x", "model": "x", "model_ids": [],
              "tasks": {"niah_single_9": {"4096": 1}}}, "task(s) RULER does not have"),
            ({"name": "ruler-readme/film-7b", "model": "x", "model_ids": []},
             "is in both ruler/eval/published/nvidia-ruler-readme-c3f5e3b.json and")):
        bad = _user_file(tmp_path, entry)
        with pytest.raises(RulerError, match=re.escape(message)):
            load_registry([bad])
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(RulerError, match="is not JSON"):
        read_file(tmp_path / "broken.json")
