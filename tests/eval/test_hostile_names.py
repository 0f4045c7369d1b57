"""User-supplied names through every Markdown file the evaluator writes (issue 40 #19: a `|`,
a newline or HTML in a model name shifted Table 3's cells): report.md (head, tables, notes,
how the rows were served, the health section, the published result beside the run),
table3.md, report_languages.md, report_replicates.md, compare.md of two runs and of a run
beside a published result. Each is rendered by a CommonMark parser with GitHub's tables: every
name shows as itself, nothing of it becomes an element, no table row gains or loses a cell.

The names: a model name (a served name is anything), run folders (any character but `/`), a
dataset spec, a published-results file's fields (`--reference-file`), and the text a foreign
predictions file puts in scores.json (task names, skip reasons, row keys, the framework, a
server's model name).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.markdown_check import HOSTILE, check_markdown
from helpers.scores import alternating, right, scores, write
from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.commands.main import main
from ruler.eval.records.health_record import HealthFacts
from ruler.eval.records.run_record import PromptCheck, ServingRecord
from ruler.eval.report.run import headline_markdown, write_report

#: A task name of a plug-in or a foreign predictions file, a folder name (no `/`).
TASK = "x|y<b>*t*</b>"
FOLDER = "run|x\n# <b>*r*</b> `c` $m$ [l](e) ~~s~~"
SERVER = "http://h.example/<b>v1</b>|x"


def _hostile(model: str, config: str, tasks=STANDARD_TASKS, lengths=(4096,), values=right,
             **kw):
    """A scores record whose every free-text field is hostile."""
    rec = scores(model, config, tasks, lengths, values, spec=f"data{HOSTILE}", **kw)
    first = rec.cells[0]
    rec.cells[0] = dataclasses.replace(first, skipped=1, scored=first.rows - 1,
                                       skip_reasons=[f"1x {HOSTILE}"])
    rec.health = HealthFacts(
        framework=HOSTILE, answered={t: 10 for t in tasks}, refusals={tasks[-1]: 1},
        examples={"refusals": [f"{HOSTILE}#1"]}, decoding=HOSTILE, mode="chat",
        empty={tasks[-1]: 2}, finish_known=10, cut_at_budget={tasks[-1]: 1})
    rec.serving = [ServingRecord(backend="openai", base_url=SERVER, endpoint=f"{SERVER}/c",
                                 api="chat", prompt="chat messages", model=model,
                                 server_model=HOSTILE, prompt_tokens_checked=True,
                                 max_model_len=8192, max_model_len_source=HOSTILE,
                                 concurrency=1, concurrency_source="--concurrency")]
    rec.prompt_check = PromptCheck(checked=10, differ=0, answered_as={HOSTILE: 3})
    return rec


def _reference_file(tmp_path: Path) -> Path:
    entry = {"name": "hostile/entry", "model": HOSTILE, "model_ids": [HOSTILE],
             "claimed_length": HOSTILE, "effective_length": "<b>4K</b>",
             "scores": {"4096": 50.0, "8192": 40.0}, "avg": 45.0, "wavg_inc": 43.3,
             "wavg_dec": 46.7}
    doc = {"format": "ruler-published/1", "benchmark": "ruler",
           "source": {"title": HOSTILE, "url": f"https://e.org/{HOSTILE}", "date": "2025-01-01"},
           "defaults": {"reported_by": HOSTILE, "decoding": HOSTILE, "averaged": HOSTILE,
                        "notes": HOSTILE, "samples_per_task": 3},
           "entries": [entry]}
    path = tmp_path / "published.json"
    path.write_text(json.dumps(doc))
    return path


def test_report_md(tmp_path):
    rec = _hostile(HOSTILE, "qwen2.5", (*STANDARD_TASKS[:2], TASK), values=alternating)
    folder = write(tmp_path / "run", rec)
    r = write_report(folder, plots=False)
    md = (folder / "report.md").read_text()
    check_markdown(md, HOSTILE, TASK, f"data{HOSTILE}", SERVER)
    assert md.count(f"data{HOSTILE}") == 0  # escaped, never raw
    check_markdown(headline_markdown(r), HOSTILE, TASK)


def test_report_md_beside_a_published_result(tmp_path):
    folder = write(tmp_path / FOLDER.replace("\n", " "), _hostile(HOSTILE, "qwen2.5"))
    reference = _reference_file(tmp_path)
    write_report(folder, plots=False, references=["hostile/entry"], reference_files=[reference])
    check_markdown((folder / "report.md").read_text(), HOSTILE)
    out = tmp_path / "cmp"
    assert main(["compare", str(folder), "reference:hostile/entry", "--reference-file",
                 str(reference), "--out", str(out), "--no-plots"]) == 0
    check_markdown((out / "compare.md").read_text(), HOSTILE, str(folder))


def test_table3(tmp_path, capsys):
    a = write(tmp_path / FOLDER, _hostile(HOSTILE, "qwen2.5"))
    b = write(tmp_path / f"{FOLDER}2", _hostile(HOSTILE, "llama-3.1", values=alternating))
    out = tmp_path / "t3"
    assert main(["report", str(a), str(b), "--table", "--reference", "hostile/entry",
                 "--reference-file", str(_reference_file(tmp_path)), "--out", str(out)]) == 0
    md = (out / "table3.md").read_text()
    check_markdown(md, f"{HOSTILE} (config qwen2.5)", f"{HOSTILE} (config llama-3.1)", str(a),
                   str(b))
    # the header, the threshold's row, two runs, the published row: one line each
    assert len([x for x in md.splitlines() if x.startswith("| ")]) == 5
    tex = (out / "table3.tex").read_text()
    assert "<script>" not in tex and r"x\textbar{}y\textbackslash{}n\# \textless{}script" in tex
    body = tex.split("\\midrule\n", 1)[1].split("\\bottomrule")[0].splitlines()
    assert len(body) == 5 and all(line.endswith(r"\\") or line == r"\midrule" for line in body)


def test_report_languages(tmp_path):
    """The metric too: scores.json names it, and a hand-made one names anything."""
    runs = [write(tmp_path / f"{FOLDER}{code}",
                  _hostile(HOSTILE, f"llama-3.1--oneruler-{code}", ONERULER_TASKS,
                           metric=f"m{HOSTILE}", benchmark="oneruler", language=code))
            for code in ("en", "ko")]
    out = tmp_path / "languages"
    assert main(["report", *map(str, runs), "--out", str(out), "--no-plots"]) == 0
    check_markdown((out / "report_languages.md").read_text(), HOSTILE, f"m{HOSTILE}")
    write_report(runs[0], plots=False)
    check_markdown((runs[0] / "report.md").read_text(), HOSTILE, f"m{HOSTILE}")


def test_report_replicates(tmp_path):
    base = _hostile(HOSTILE, "qwen2.5")
    rep = _hostile(HOSTILE, "qwen2.5--rep1", values=alternating)
    rep.variant = {"replicate": 1}
    runs = [write(tmp_path / f"{FOLDER}{n}", r) for n, r in enumerate((base, rep))]
    out = tmp_path / "replicates"
    assert main(["report", *map(str, runs), "--out", str(out)]) == 0
    check_markdown((out / "report_replicates.md").read_text(), HOSTILE, str(runs[1]))


def test_compare_md(tmp_path):
    a = write(tmp_path / FOLDER, _hostile(HOSTILE, "qwen2.5", (*STANDARD_TASKS[:2], TASK)))
    b = write(tmp_path / f"{FOLDER}b", _hostile(f"{HOSTILE}b", "qwen2.5",
                                                (*STANDARD_TASKS[:2], TASK),
                                                values=alternating))
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out), "--no-plots"]) == 0
    check_markdown((out / "compare.md").read_text(), HOSTILE, f"{HOSTILE}b", TASK, str(a),
                   str(b))


@pytest.mark.subprocess
def test_table3_tex_with_hostile_names_compiles(tmp_path, capsys):
    """The LaTeX of the same table compiles (pdflatex, where installed), § marks included."""
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.skip("pdflatex not installed (apt-get install texlive-latex-base "
                    "texlive-latex-recommended): the LaTeX was checked as text only")
    a = write(tmp_path / FOLDER, _hostile(HOSTILE, "qwen2.5"))
    b = write(tmp_path / f"{FOLDER}2", _hostile(HOSTILE, "llama-3.1", values=alternating))
    out = tmp_path / "t3"
    assert main(["report", str(a), str(b), "--table", "--reference",
                 "ruler-readme/meta-llama-3.1-8b-instruct", "--out", str(out)]) == 0
    assert r"$^\S$" in (out / "table3.tex").read_text()
    (out / "doc.tex").write_text("\\documentclass{article}\n\\usepackage{booktabs}\n"
                                 "\\begin{document}\n\\input{table3.tex}\n\\end{document}\n")
    done = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                          cwd=out, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
