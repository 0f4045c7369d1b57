"""Running a documented section's command lines as a user would: in one bash, in an environment
without this test's venv or engine variables (the CPU section of docs/evaluating.md, the kvpress
section of docs/integrations.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

#: Seconds for one section's lines: the installs are the long part (minutes from the pip cache).
STEP_TIMEOUT = 1800


def pip_cache_dir() -> str | None:
    found = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True,
                           text=True)
    return found.stdout.strip() if found.returncode == 0 and found.stdout.strip() else None


def user_env(tmp: Path) -> dict[str, str]:
    """This environment without anything that would do the section's work for it: no VLLM_*
    variable, no venv, caches in tmp (but pip's, which makes the install quick)."""
    drop = ("VLLM_", "TORCHINDUCTOR_", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "DO_NOT_TRACK")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    pip_cache = pip_cache_dir()
    if pip_cache:
        env["PIP_CACHE_DIR"] = pip_cache
    env["XDG_CACHE_HOME"] = str(tmp / "cache")  # vLLM's and ruler's caches
    env.setdefault("HF_HUB_OFFLINE", "1")  # the tokenizer comes from $RULER_TOKENIZERS
    return env


def run_lines(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The script's lines in one bash, stopping at the first that fails (with its status), each
    line's time printed (`pytest -s` shows them)."""
    lines = script.splitlines()
    timed = "\n".join(f"_t=$SECONDS; {{ {line}\n}} || exit $?; "
                      f"echo \"[step {n}] took $((SECONDS - _t)) s\" >&2"
                      for n, line in enumerate(lines))
    done = subprocess.run(["bash", "-c", timed], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=STEP_TIMEOUT)
    for n, took in re.findall(r"^\[step (\d+)\] took (\d+ s)$", done.stderr, re.M):
        print(f"{took:>6}  {lines[int(n)]}")
    return done
