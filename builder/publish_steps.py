"""What a build folder holds besides its data and manifest, written by publish steps.

Every change of OUT/manifest.json (a merge, a config dropped) is followed by each step's
`write`, under the manifest lock; a build calls it once its files are recorded (once per
command, however many configs it builds); a build or merge with nothing to do calls `refresh`,
which re-renders a file a killed run left stale; `ruler verify` asks each step's `problems`.
The builder knows the steps only through this interface: the dataset card (`ruler.cards.step`,
above the builder, which renders the card from the manifest) is the one ruler ships, listed
here by address; a plug-in may add one in entry point group `ruler.publish_steps`
(`name = "pkg.module:STEP"`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ruler.kernel.registry import Registry

if TYPE_CHECKING:
    from ruler.builder.findings import Problem
    from ruler.builder.manifest import Manifest


@dataclass(frozen=True)
class PublishStep:
    """One file (or set of files) a build folder holds, rendered from its manifest.

    Attributes:
        name: the step's name (the registry's key).
        write: `write(out)`: render it from OUT/manifest.json, atomically; the caller holds
            the manifest lock.
        refresh: `refresh(out)`: render it again if it is not what the manifest renders (a
            run killed between writing the manifest and it); True when it was written. Takes
            the manifest lock itself, and leaves a current file (and a read-only folder)
            untouched.
        problems: `problems(out, manifest)`: what `ruler verify` reports of it (`Problem`s).
    """

    name: str
    write: Callable[[Path], object]
    refresh: Callable[[Path], bool]
    problems: Callable[[Path, "Manifest"], list["Problem"]]


#: Every publish step, in the order they run: the card, then a plug-in's.
PUBLISH_STEPS: Registry[PublishStep] = Registry(
    "publish step", "ruler.publish_steps", accepts=lambda obj: isinstance(obj, PublishStep),
    name_of=lambda step: step.name)
PUBLISH_STEPS.register_lazy("card", "ruler.cards.step:CARD")


def write_published(out: Path) -> None:
    """Every step's files, from OUT's manifest (the caller holds the manifest lock)."""
    for step in PUBLISH_STEPS.values():
        step.write(Path(out))


def refresh_published(out: Path) -> bool:
    """Every step's files rendered again where stale; True when any was written."""
    return any([step.refresh(Path(out)) for step in PUBLISH_STEPS.values()])


def published_problems(out: Path, manifest: "Manifest") -> list["Problem"]:
    """What is wrong with the steps' files, for `ruler verify`."""
    return [p for step in PUBLISH_STEPS.values() for p in step.problems(Path(out), manifest)]
