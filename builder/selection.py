"""Reading the selections flags make: tasks (`--tasks`), lengths (`--lengths`) and shards
(`--shard`), from the flag's text or from the value Python code gives (`lengths=[4096, "16k"]`).
The config dataclasses declare these as their flags' readers (`ruler.kernel.flags`)."""

from __future__ import annotations

from typing import Any

from ruler.catalog.tasks import LENGTH_SETS, TASKS
from ruler.kernel.errors import RulerError


def length_sets() -> dict[str, tuple[int, ...]]:
    """The named length sets: `paper`, `long`, and those a benchmark names."""
    from ruler.catalog.benchmarks import BENCHMARK_SPECS

    return {**LENGTH_SETS, **{name: lengths for b in BENCHMARK_SPECS.values()
                              for name, lengths in b.length_sets.items()}}


def parse_lengths(text: str) -> tuple[int, ...]:
    """`4096,8192` or `4k,128k,1m` (k = 1024, m = 1024^2), and the named sets `paper`
    (4K..128K) and `long` (256K, 512K, 1M), alone or combined: `paper,long`, or a set a
    benchmark names."""
    out: list[int] = []
    named = length_sets()
    for part in text.split(","):
        part = part.strip().lower()
        if part in named:
            out += [L for L in named[part] if L not in out]
            continue
        scale = {"k": 1024, "m": 1024 * 1024}.get(part[-1:], 1)
        try:
            out.append(int(part[:-1] if scale > 1 else part) * scale)
        except ValueError:
            raise RulerError(f"bad length {part!r} in --lengths {text!r}: use integers like "
                             f"4096,8192 or 4k,1m, or {' / '.join(named)}") from None
    return tuple(out)


def parse_tasks(text: str | None) -> tuple[str, ...]:
    if not text or text == "all":
        from ruler.benchmarks import DEFAULT
        from ruler.catalog.benchmarks import get_benchmark

        return get_benchmark(DEFAULT).tasks
    tasks = split_tasks(text)
    check_task_names(tasks)
    return tasks


def split_tasks(text: str) -> tuple[str, ...]:
    """The names a comma-separated `--tasks` gives, unchecked."""
    return tuple(t.strip() for t in text.split(",") if t.strip())


def check_task_names(tasks: tuple[str, ...]) -> None:
    """Refuse names the catalog does not have (RulerError naming the known ones)."""
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise RulerError(f"unknown task(s) {', '.join(unknown)}; known: {', '.join(TASKS)}")


def parse_shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise RulerError(f"--shard takes i/n, counting from 0 (0/4 .. 3/4), got {text!r}") from None
    return i, n


def _text(value: Any) -> str:
    """A value as its flag's text: a string as it is, a number or a list comma-separated."""
    if isinstance(value, (str, int)):
        return str(value)
    return ",".join(str(v) for v in value)


def lengths_value(value: Any) -> tuple[int, ...]:
    """`--lengths` of a selection (eval, score, export): () for all of them."""
    return parse_lengths(_text(value)) if value not in (None, "", ()) else ()


def tasks_value(value: Any) -> tuple[str, ...]:
    """`--tasks` of a selection (eval, score, export): () for all of them. The names are
    checked against the data's own tasks (a build folder's declared tasks are known once its
    manifest is read: `eval.records.dataset`), not against the catalog before it."""
    return split_tasks(_text(value)) if value not in (None, "", ()) else ()


def build_tasks_value(value: Any) -> tuple[str, ...]:
    """`ruler build --tasks`: () ("all", the default) for the benchmark's tasks, which
    `BuildConfig` settles (with a variant: those it applies to). The names are checked
    there, once the build's declared tasks (`--task-file`, `--declare`) are in the catalog."""
    text = "" if value in (None, ()) else _text(value)
    return () if text in ("", "all") else split_tasks(text)


def shard_value(value: Any) -> tuple[int, int]:
    """`--shard i/n`, or the pair (i, n)."""
    if isinstance(value, str):
        return parse_shard(value)
    try:
        i, n = value
    except (TypeError, ValueError):
        raise RulerError(f"--shard takes i/n, counting from 0 (0/4 .. 3/4), got {value!r}") \
            from None
    return i, n
