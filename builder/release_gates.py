"""What a benchmark asks of `ruler release` before its configs are published (`Benchmark.
release_gates`): each gate is a flag of the command (an acknowledgement, comma-separated words)
and a check of the folder's manifest with what the flag names, run before anything is
uploaded; a RulerError (one line) refuses the release. The command adds every registered
benchmark's gate flags (`gate_flags`), and `release.release` takes each by its flag's name
(`acknowledge_book_status=["sw"]`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from ruler.catalog.benchmarks import BENCHMARK_SPECS
from ruler.kernel.flags import check_flags, option

if TYPE_CHECKING:
    from ruler.builder.manifest import Manifest


@dataclass(frozen=True)
class ReleaseGate:
    """A flag (`--acknowledge-...`) and `check(manifest, words)`, which refuses a release of a
    folder holding its benchmark's configs (or named a flag it does not need) in one line."""

    flag: str
    help: str
    check: Callable[[Manifest, Sequence[str]], None]
    metavar: str = "WORDS"

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


def release_gates() -> dict[str, ReleaseGate]:
    """Every registered benchmark's gates, by their flag's name (`dest`)."""
    gates = (b.hook_list("release_gates") for b in BENCHMARK_SPECS.values())
    return {g.dest: g for found in gates for g in found}


def _words(value: str | Sequence[str]) -> tuple[str, ...]:
    """`ko,sw` (or, from Python, a list) as ("ko", "sw")."""
    parts = value.split(",") if isinstance(value, str) else value
    return tuple(s.strip() for s in parts if s.strip())


def gate_flags() -> type:
    """`ruler release`'s gate flags: a frozen dataclass with one field per gate."""
    fields = [(g.dest, "tuple[str, ...] | None", option(g.flag, default=None, parse=_words,
                                                       metavar=g.metavar, help=g.help))
              for g in release_gates().values()]
    return dataclasses.make_dataclass("GateFlags", fields, frozen=True,
                                      namespace={"__post_init__": check_flags})


def check_gates(manifest: Manifest, given: Mapping[str, Sequence[str] | None]) -> None:
    """Run every gate with what its flag names (`given`, by flag name: nothing when absent)."""
    for dest, gate in release_gates().items():
        gate.check(manifest, tuple(given.get(dest) or ()))
