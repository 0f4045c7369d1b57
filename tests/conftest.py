"""Test-wide setup: pinned inputs from `../shared` (beside the checkout, also in CI).

Library code never names that folder; tests point the documented environment variables at it.
Helpers are plain modules in `helpers/`; this file holds only pytest hooks and fixtures.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.paths import SHARED, SOURCES, TOKENIZERS

# The unit tier's markers, and the check that a unit test builds, spawns and connects nothing;
# in CI, a skip tests/expected_skips.toml does not declare fails the session; pytester runs a
# pytest session of its own (tests/package/test_unit_tier.py, test_expected_skips.py).
pytest_plugins = ["helpers.unit_tier", "helpers.expected_skips", "pytester"]

# Python's bytecode cache, whatever the environment says: with PYTHONDONTWRITEBYTECODE set,
# every xdist worker recompiles (and assertion-rewrites) every test module and the package at
# each run, and every spawned `ruler` process recompiles the package. This conftest is loaded
# in xdist's controller before the workers start, so they and spawned processes inherit it.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Ctrl-C as a terminal delivers it: a suite started in the background by a non-interactive
# shell (a CI script's `cmd &`) inherits SIGINT ignored, and so would every build the tests
# interrupt (tests/builder/pipeline/test_build_processes.py, test_build_ray.py: the build
# ran on and exited 0). A handled signal is reset to the default in the processes started
# from here (workers, `ruler`), so they raise KeyboardInterrupt again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

os.environ.setdefault("RULER_TOKENIZERS", str(TOKENIZERS))
os.environ.setdefault("RULER_SOURCES", str(SOURCES))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pytest_configure(config):
    if not TOKENIZERS.is_dir() or not SOURCES.is_dir():
        raise pytest.UsageError(f"pinned inputs not found at {SHARED}; set RULER_SHARED")


# --- builds several modules read: built once per session ----------------------------------------
# Read only: a test that changes a build copies it first (shutil.copytree into its tmp_path); a
# change is caught when the session ends (the error names the build). ruler is imported inside
# the fixtures: the environment above must be set before anything imports huggingface_hub.

@pytest.fixture(scope="module", autouse=True)
def _declared_tasks_stay_in_their_module() -> Iterator[None]:
    """Tasks a module's tests declare (a suite built, a folder read) leave the catalog with the
    module: they are process-wide, and another module's words or default tasks must not depend
    on which module ran before it in the same worker."""
    from ruler.catalog.declared import declared_names, forget
    before = set(declared_names())
    yield
    for name in declared_names():
        if name not in before:
            forget(name)


def _files(out: Path) -> dict[str, tuple[int, int]]:
    """Every file of a build with its size and modification time (the manifest lock aside:
    readers that take it touch it)."""
    from ruler.builder.manifest import LOCK_NAME

    return {p.relative_to(out).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(out.rglob("*")) if p.is_file() and p.name != LOCK_NAME}


def _shared_build(tmp_path_factory, name: str, tokenizer: str, tasks: tuple[str, ...],
                  lengths: tuple[int, ...], samples: int, languages: tuple[str, ...] = (),
                  **kw) -> Iterator[Path]:
    """One build; with `languages` (ONERULER), one config per language in the same folder."""
    from helpers.builds import build

    out = tmp_path_factory.mktemp(name) / "ruler"
    if languages:
        from ruler.benchmarks.oneruler.languages import OnerulerLanguage

        for code in languages:
            build(out, tokenizer, tasks, lengths, samples=samples, workers=1,
                  axes={"language": OnerulerLanguage.parse(code)}, **kw)
    else:
        build(out, tokenizer, tasks, lengths, samples=samples, workers=1, **kw)
    files = _files(out)
    yield out
    changed = sorted(set(files.items()) ^ set(_files(out).items()))
    assert not changed, (f"a test changed the shared build {name} ({changed[:3]}): copy it "
                         f"first (shutil.copytree into tmp_path)")


@pytest.fixture(scope="session")
def built_gpt4_niah(tmp_path_factory) -> Iterator[Path]:
    """gpt-4: niah_single_1, niah_multikey_2 x 1024, 2048 x 3 samples (card, release)."""
    yield from _shared_build(tmp_path_factory, "gpt4_niah", "gpt-4",
                             ("niah_single_1", "niah_multikey_2"), (1024, 2048), 3)


@pytest.fixture(scope="session")
def built_qwen_three(tmp_path_factory) -> Iterator[Path]:
    """qwen2.5: niah_single_1, vt, qa_1 x 1024 x 3 samples (the integrations: lm-eval
    export, Inspect, lm-eval)."""
    yield from _shared_build(tmp_path_factory, "qwen_three", "qwen2.5",
                             ("niah_single_1", "vt", "qa_1"), (1024,), 3)


@pytest.fixture(scope="session")
def built_qwen_niah_vt(tmp_path_factory) -> Iterator[Path]:
    """qwen2.5: niah_single_1, vt x 1024 x 4 samples (the openai backend, resumed evals)."""
    yield from _shared_build(tmp_path_factory, "qwen_niah_vt", "qwen2.5",
                             ("niah_single_1", "vt"), (1024,), 4)


@pytest.fixture(scope="session")
def built_qwen_niah(tmp_path_factory) -> Iterator[Path]:
    """qwen2.5: niah_single_1 x 1024 x 4 samples (eval processes, backend results)."""
    yield from _shared_build(tmp_path_factory, "qwen_niah", "qwen2.5", ("niah_single_1",),
                             (1024,), 4)


@pytest.fixture(scope="session")
def built_llama_v2(tmp_path_factory) -> Iterator[Path]:
    """llama-3.1: RULERv2's 12 tasks x 4096 x 2 samples, config llama-3.1--v2, from the
    stand-in MMLU and HotpotQA (the comparison with upstream's output, the card)."""
    from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS

    yield from _shared_build(tmp_path_factory, "llama_v2", "llama-3.1", RULER2_TASKS, (4096,),
                             2, benchmark="ruler2")


@pytest.fixture(scope="session")
def built_gpt4_niah_single(tmp_path_factory) -> Iterator[Path]:
    """gpt-4: niah_single_1 x 1024 x 2 samples (merge's shard, the command line's verify)."""
    yield from _shared_build(tmp_path_factory, "gpt4_niah_single", "gpt-4", ("niah_single_1",),
                             (1024,), 2)


@pytest.fixture(scope="session")
def built_llama_oneruler(tmp_path_factory) -> Iterator[Path]:
    """llama-3.1: ONERULER's 7 tasks x 1024 x 3 samples in en and ko (configs
    llama-3.1--oneruler-en and -ko: the ONERULER evaluation, its exports and reports)."""
    from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS

    yield from _shared_build(tmp_path_factory, "llama_oneruler", "llama-3.1", ONERULER_TASKS,
                             (1024,), 3, languages=("en", "ko"), benchmark="oneruler")
