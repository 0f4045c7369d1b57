"""Zero glue, proven: kvpress's own pipeline on `ruler export kvpress` rows, scored by ruler.

The "Using with kvpress" section of docs/integrations.md, run as written (its bash lines in one
shell, its script saved as kvpress_predict.py): a build and its export in ruler's environment
(this test's), kvpress 0.5.5 installed into a fresh venv of its own with constraints-kvpress.txt,
its `kv-press-text-generation` pipeline with no press, KnormPress and StreamingLLMPress on the
exported rows of the tiny random model on CPU, `ruler score` on its predictions, and `ruler
eval --backend hf` on the same rows. Then:

- kvpress's own preprocessing (context and question tokenized apart, its chat template cut)
  gives exactly the token ids ruler counted for every row;
- with no press its greedy answers are ruler's hf backend's, row for row, so the scores equal;
- each press changes them (it ran).

Needs torch here (the tiny model, the hf backend) and pip access (the pip cache makes the
install quick): `engines`, and `slow` (several minutes, most of it the install).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import ROOT as REPO
from helpers.readme_shell import run_lines, user_env
from ruler.eval.integrations.kvpress_export import KVPRESS_CHECKED, PREDICT_SCRIPT

PAGE = REPO / "docs" / "integrations.md"
SECTION = "## Using with kvpress"
CONSTRAINTS = REPO / "constraints-kvpress.txt"
PRESSES = ("no_press", "knorm", "streaming_llm")


def page_section() -> tuple[list[str], str]:
    """The section's bash lines and its Python script."""
    text = PAGE.read_text()
    section = re.search(re.escape(SECTION) + r"\n(.*?)(?=\n## |\Z)", text, re.S).group(1)
    bash = re.findall(r"```bash\n(.*?)```", section, re.S)
    python = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(bash) == 1 and len(python) == 1, (bash, python)
    return [line.strip() for line in bash[0].splitlines() if line.strip()], python[0]


def test_the_page_section_is_what_the_test_runs():
    lines, script = page_section()
    assert script == PREDICT_SCRIPT  # the export's card shows the same script
    argv = [shlex.split(line) for line in lines]
    assert [a[:3] for a in argv[:2]] == [["ruler", "build", "--tokenizer"],
                                         ["ruler", "export", "kvpress"]]
    install = next(line for line in lines if "pip install" in line)
    assert install.startswith(".venv-kvpress/bin/pip install ")
    assert f"kvpress=={KVPRESS_CHECKED}" in install and "-c constraints-kvpress.txt" in install
    assert any(a[:2] == [".venv-kvpress/bin/python", "kvpress_predict.py"] for a in argv)
    scored = [a[a.index("--predictions") + 1] for a in argv if a[:2] == ["ruler", "score"]]
    assert scored == ["predictions-no_press.jsonl", "predictions-knorm.jsonl"]
    evals = [a for a in argv if a[:2] == ["ruler", "eval"]]
    assert len(evals) == 1 and evals[0][evals[0].index("--backend") + 1] == "hf"


def test_the_kvpress_constraints_pin_what_kvpress_needs_apart_from_rulers():
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", CONSTRAINTS.read_text(), re.M))
    assert pins["kvpress"] == KVPRESS_CHECKED and pins["torch"] == "2.13.0"
    major, minor = map(int, pins["transformers"].split(".")[:2])
    assert (major, minor) < (5, 3)  # kvpress 0.5.x: transformers < 5.3
    ruler = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$",
                            (REPO / "constraints.txt").read_text(), re.M))
    # why it is a venv of its own: ruler's pinned rows use another transformers
    assert ruler["transformers"] != pins["transformers"]


#: Run in kvpress's venv: its pipeline's own preprocessing of every exported row, as ids.
_KVPRESS_IDS = """\
import json, sys
from datasets import load_dataset
from transformers import pipeline
import kvpress  # registers the pipeline

pipe = pipeline("kv-press-text-generation", model=sys.argv[1], device="cpu")
out = {}
for row in load_dataset(sys.argv[2], data_dir=sys.argv[3], split="test"):
    t = pipe.preprocess(row["context"], questions=[row["question"]],
                        answer_prefix=row["answer_prefix"], max_context_length=10**9)
    ids = t["context_ids"][0].tolist() + t["questions_ids"][0][0].tolist()
    out[f"{row['task']}#{row['index']}"] = ids
print(json.dumps(out))
"""


def _records(path: Path) -> dict[tuple[str, int], dict]:
    recs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return {(r["task"], r["index"]): r for r in recs}


def _cells(scores: Path) -> list[tuple]:
    data = json.loads(scores.read_text())
    return [(c["task"], c["max_seq_length"], c["score"], c["scored"]) for c in data["cells"]]


@pytest.mark.engines
@pytest.mark.slow
def test_kvpress_runs_its_own_pipeline_on_the_export_and_ruler_scores_it(tmp_path):
    pytest.importorskip("torch")
    lines, script = page_section()
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy2(CONSTRAINTS, work / CONSTRAINTS.name)
    (work / "kvpress_predict.py").write_text(script)
    env = user_env(tmp_path)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HF_DATASETS_CACHE"] = str(tmp_path / "hf-datasets")

    done = run_lines("\n".join(lines), work, env)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]

    argv = shlex.split(lines[0])
    tasks = argv[argv.index("--tasks") + 1].split(",")
    samples = int(argv[argv.index("--samples") + 1])
    hf = _records(work / "results/tiny-hf/predictions.jsonl")
    assert len(hf) == len(tasks) * samples and all(r["status"] == "ok" for r in hf.values())
    got = {name: _records(work / f"predictions-{name}.jsonl") for name in PRESSES}

    # no press: ruler's greedy answers, row for row, hence ruler's scores
    assert {k: r["prediction"] for k, r in got["no_press"].items()} == \
        {k: r["prediction"] for k, r in hf.items()}
    no_press = _cells(work / "predictions-no_press.jsonl.scores/scores.json")
    assert no_press == _cells(work / "results/tiny-hf/scores.json")
    assert [c[3] for c in no_press] == [samples] * len(tasks)  # every row scored
    # every row tied to the build by the script's digest of ruler's input (issue 30.1)
    assert json.loads((work / "predictions-no_press.jsonl.scores/scores.json").read_text())[
        "tied_to_build"]["by"] == {"prompt": len(tasks) * samples}
    assert (work / "predictions-knorm.jsonl.scores/scores.json").is_file()
    # each press ran: it changed the answers
    for name in ("knorm", "streaming_llm"):
        assert any(got[name][k]["prediction"] != hf[k]["prediction"] for k in hf), name

    # kvpress's own preprocessing gives the ids ruler counted (`length` - budget)
    (work / "kvpress_ids.py").write_text(_KVPRESS_IDS)
    ids = subprocess.run([str(work / ".venv-kvpress/bin/python"), "kvpress_ids.py",
                          "tiny-llama", "ruler-kvpress", "4096"], cwd=work, env=env,
                         capture_output=True, text=True, timeout=600)
    assert ids.returncode == 0, ids.stderr[-3000:]
    kvpress_ids = json.loads(ids.stdout.strip().splitlines()[-1])
    from helpers.builds import rows
    from ruler.builder.tokenizer_registry import load_tokenizer

    tok = load_tokenizer("qwen2.5")
    for task in tasks:
        for row in rows(work / "ruler-kv", "qwen2.5", task, 4096):
            want = tok.prompt_ids(row["input"], row["answer_prefix"], "chat")
            assert kvpress_ids[f"{task}#{row['index']}"] == want, (task, row["index"])
            assert len(want) == row["length"] - row["tokens_to_generate"] \
                == hf[(task, row["index"])]["prompt_tokens"]
