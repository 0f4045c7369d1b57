"""Upstream RULER's own generator (NVIDIA/RULER `scripts/data/prepare.py`), run offline for the
side-by-side timing of `python -m perf.build --upstream DIR`.

`DIR` is a RULER checkout (or any folder holding its `scripts/`; it is never part of this
repository). As `scripts/run.sh` does, each (task, length) is one `prepare.py` process, which
starts the task's generator as another (`python synthetic/<task>.py ...` through the shell:
the interpreter named by `--upstream-python` is that `python`). The generators read the essays,
SQuAD and HotpotQA from `scripts/data/synthetic/json/` (PaulGrahamEssays.json, squad.json,
hotpotqa.json): missing files are linked to the sources this build resolves. NLTK finds the
pinned punkt_tab (and the `punkt` folder prepare.py looks for) in a folder made here, so
nothing is downloaded. prepare.py swallows a generator's error: a file without `samples` lines
is a failure here.
"""

from __future__ import annotations

import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from perf.side_by_side import Side, check_imports, interpreter_on_path, timed
from ruler.catalog.sources import resolve

#: What upstream's generators import for an `hf` tokenizer (prepare.py, template.py,
#: tokenizer.py, synthetic/*.py at c3f5e3b; tenacity at tokenizer.py's top).
MODULES = ("yaml", "nltk", "numpy", "scipy", "tqdm", "wonderwords", "tenacity", "transformers")

#: upstream's file name -> the source it is
JSON_FILES = {"PaulGrahamEssays.json": "essays", "squad.json": "squad",
              "hotpotqa.json": "hotpotqa"}


def scripts_of(upstream: Path) -> Path:
    scripts = upstream / "scripts"
    if not (scripts / "data" / "prepare.py").is_file():
        raise SystemExit(f"--upstream {upstream}: no scripts/data/prepare.py (a NVIDIA/RULER "
                         f"checkout is needed)")
    return scripts


def upstream_environment(upstream: Path, python: str, work: Path,
                         sources: str | None) -> dict[str, str]:
    """The environment upstream runs in; links its json inputs where it has none."""
    json_dir = scripts_of(upstream) / "data" / "synthetic" / "json"
    json_dir.mkdir(parents=True, exist_ok=True)
    for name, source in JSON_FILES.items():
        if not (json_dir / name).exists():
            (json_dir / name).symlink_to(resolve(source, sources).path)
    nltk = work / "nltk_data" / "tokenizers"
    (nltk / "punkt").mkdir(parents=True, exist_ok=True)  # prepare.py only checks it exists
    if not (nltk / "punkt_tab").exists():
        (nltk / "punkt_tab").symlink_to(resolve("punkt_tab", sources).path.parent,
                                        target_is_directory=True)
    return dict(os.environ, PATH=interpreter_on_path(python, work),
                NLTK_DATA=str(work / "nltk_data"), HF_HUB_OFFLINE="1",
                TOKENIZERS_PARALLELISM="false")


def prepare_upstream(upstream: Path, python: str, work: Path,
                     sources: str | None) -> dict[str, str]:
    """Upstream's environment, its imports checked (before anything is timed)."""
    env = upstream_environment(upstream, python, work, sources)
    check_imports(python, MODULES, env)
    return env


def run_upstream(upstream: Path, python: str, env: dict[str, str], tokenizer_path: Path,
                 tasks, lengths, samples: int, workers: int, work: Path) -> Side:
    """Every (task, length) as its own prepare.py process, `workers` at a time."""
    data = scripts_of(upstream) / "data"
    side = Side(f"upstream (NVIDIA/RULER prepare.py under {python}, {workers} at a time)")

    def one(job: tuple[str, int]) -> tuple[tuple[str, int], float]:
        task, L = job
        out = work / "upstream" / str(L)
        cmd = [python, str(data / "prepare.py"), "--save_dir", str(out), "--benchmark",
               "synthetic", "--task", task, "--tokenizer_path", str(tokenizer_path),
               "--tokenizer_type", "hf", "--max_seq_length", str(L), "--model_template_type",
               "base", "--num_samples", str(samples)]
        started = time.perf_counter()
        done = subprocess.run(cmd, env=env, cwd=data, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        path = out / task / "validation.jsonl"
        lines = len(path.read_text(encoding="utf-8").splitlines()) if path.is_file() else 0
        if done.returncode != 0 or lines != samples:
            raise SystemExit(f"upstream {task} @ {L} failed ({lines} lines):\n"
                             f"{(done.stdout + done.stderr)[-3000:]}")
        return job, seconds

    jobs = [(t, L) for L in lengths for t in tasks]
    with timed(side), ThreadPoolExecutor(max_workers=workers) as pool:
        side.files = dict(pool.map(one, jobs))
    return side

