"""A benchmark family's text on the card, and which families a folder's card shows.

The card's frame (`cards.render`: identity, contents, loading, schema, provenance, licences)
is the same for every benchmark; each family adds its own text through a `CardBody`
(`Benchmark.card_body`, the address of one in its folder), shown once for all the benchmarks
of the folder that name it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ruler.benchmarks import DEFAULT
from ruler.builder.manifest import Manifest
from ruler.catalog.benchmarks import BENCHMARK_SPECS, Benchmark


def present(manifest: Manifest) -> list[Benchmark]:
    """The benchmarks of the folder's configs with files, in the benchmarks' order (the
    default one for a folder without any yet)."""
    built = [c for c in manifest.configs() if manifest.files_of(c)]
    for c in built:  # one not installed: one line naming its package
        manifest.builds[c].spec()
    ids = {manifest.builds[c].benchmark_id for c in built} or {DEFAULT}
    return [b for b in BENCHMARK_SPECS.values() if b.id in ids]


def bodies(manifest: Manifest) -> list[CardBody]:
    """The card text of the folder's benchmarks' families (`Benchmark.card_body`), each once;
    a benchmark without one gets the frame's default, its title."""
    found: dict[str, CardBody] = {}
    for b in present(manifest):
        body = b.hook("card_body") or CardBody(b)
        found.setdefault(b.card_body or b.id, body)
    return list(found.values())


def words(manifest: Manifest) -> CardWords:
    """The words the frame says the folder's facts in (`CardBody.words`): its benchmark
    family's, or in a folder of several families, what the frame knows of every benchmark."""
    found = {body.words for body in bodies(manifest)}
    return found.pop() if len(found) == 1 else CardWords()


def whose(manifest: Manifest) -> str:
    """Whose scores and reports the folder's rows have, as the card's usage sections say it:
    its benchmark family's ("RULER's", from its card body's title), or, in a folder holding
    several, each benchmark's own."""
    titles = [body.title for body in bodies(manifest)]
    return f"{titles[0]}'s" if len(titles) == 1 else "each benchmark's own"


@dataclass(frozen=True)
class CardWords:
    """What the card's frame says in a benchmark family's words, where its facts are the
    family's own (each a fragment the frame's sentence takes in; the default, a benchmark's
    without any, says only what the frame knows of every benchmark)."""

    #: what `ruler eval` scores with ("How to evaluate")
    metrics: str = "the rows' own metrics"
    #: whose `tokens_to_generate` budget a row has (Row schema)
    budget: str = "the task's budget"
    #: the units of `haystack_size`, after "in the task's own units" (Row schema)
    haystack_units: str = ""
    #: where `question` starts, after "the task's text after the context" (Row schema)
    question: str = ""
    #: what `context` holds, after "everything before it" (Row schema)
    context: str = ""
    #: how the cut between `context` and `question` tokenizes, after its paragraph (Row schema)
    cut: str = ""
    #: what a gold item is, after "each gold item" (Row schema)
    gold_items: str = ""
    #: the published reference whose prompt and averaging the usage sections follow ("the
    #: paper"; "": none)
    reference: str = ""
    #: how much text the sources hold and how they repeat past it, after "Some sources hold
    #: less text than a long context needs" (Repeated source material)
    repeated: str = ": past that point the source is repeated"
    #: the kvpress dataset whose schema `ruler export kvpress` writes, for any benchmark
    #: (kvpress's own name for it, as `ruler export kvpress`'s card says it)
    kvpress_dataset: str = "kvpress's `ruler` dataset"


class CardBody:
    """A benchmark family's text on the card (`Benchmark.card_body`, the address of one in its
    folder): the card's frame (identity, contents, loading, schema, provenance, licences) is
    the same for every benchmark; the family's body says what it is, its tasks and metrics, its
    differences from upstream and its citation, and `words`, the fragments the frame's own
    sentences take in where a fact is the family's (`CardWords`). Shown once per folder for all
    the benchmarks that name it. The default, for a benchmark without one, says its title only
    and the frame's words."""

    title = ""
    tags: tuple[str, ...] = ()
    words = CardWords()

    def __init__(self, benchmark: Benchmark | None = None):
        if benchmark is not None:
            self.title = benchmark.family or benchmark.title
            self._tasks = benchmark.tasks

    def intro(self, manifest: Manifest) -> str:
        """What the benchmark is, ending with a space (the frame's sentence follows)."""
        return ""

    def tasks(self, manifest: Manifest) -> tuple[str, ...]:
        """The tasks the Tasks table lists (besides those the folder holds)."""
        return getattr(self, "_tasks", ())

    def metrics(self, manifest: Manifest) -> str:
        """What the metrics are, under the Tasks table (a paragraph after a blank line)."""
        return ""

    def differences(self, manifest: Manifest) -> str:
        """Sections after Provenance (its differences from upstream), each ending in a blank
        line."""
        return ""

    def citation(self, manifest: Manifest) -> str:
        """The card's last section, after a blank line."""
        return ""

    def licence_note(self, manifest: Manifest) -> str:
        """What the Licences section's last line says of the family's sources' terms."""
        return ""

    def lm_eval_notes(self, manifest: Manifest) -> list[str]:
        """Lines the "Use with lm-evaluation-harness" section adds (an lm-eval task of the
        same name that is another generator's)."""
        return []


