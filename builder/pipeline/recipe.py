"""The build recipe: everything that decides a config's rows, in one value.

A row is a pure function of the recipe and (task, L, index), given the sources and the
package versions. The recipe is made in exactly two ways: from the `ruler build` command
(`from_config`) and from the manifest's record of a build (`from_manifest`), so `ruler
verify --regenerate` rebuilds rows from the same object the build used, never from fields
gathered again by hand. Workers are made from a recipe; it travels to worker processes and
Ray workers pickled (the tokenizer as its load recipe, the variant by its class).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from ruler.benchmarks import DEFAULT
from ruler.builder import __version__
from ruler.builder.identity import make_identity
from ruler.builder.manifest import BuildEntry
from ruler.builder.packages import content_packages, installed_versions
from ruler.builder.tokenizer_registry import config_name
from ruler.catalog.benchmarks import benchmark_config, get_benchmark
from ruler.catalog.context import BuildContext
from ruler.catalog.declared import DeclaredTask, declare_records, records
from ruler.catalog.manifest_records import IdentityRecord
from ruler.catalog.tokenizer import Tokenizer
from ruler.catalog.variants import NO_VARIANT, Variant, variant_from_record
from ruler.kernel.errors import RulerError

if TYPE_CHECKING:
    from ruler.builder.pipeline.config import BuildConfig


@dataclass(frozen=True)
class BuildRecipe:
    tokenizer: Tokenizer
    config: str  # the dataset config the rows belong to (their `tokenizer` column)
    seed_name: str  # the name every sample's seed is drawn from (the default config's)
    seed: int
    samples: int
    prompt_mode: str  # how prompts are counted (catalog.tokenizer.PROMPT_MODES)
    variant: Variant = NO_VARIANT
    sources_dir: str | os.PathLike | None = None
    # How piece counts are proven; the rows are the same either way.
    exact_counts: bool = False  # tokenize every probe whole (the reference; slow)
    certify_every_row: bool = False  # check every row's piece count, not sampled rows only
    benchmark: str = DEFAULT  # catalog.benchmarks: whose rows
    # its benchmark's axes' values, by axis name (`BuildAxis`; {}: a benchmark without axes)
    axes: Mapping[str, Any] = field(default_factory=dict)
    # Its declared tasks (`catalog.declared`): name -> {task, args}, what each of their
    # files' build key hashes and the manifest records; a worker in another process declares
    # them again from here.
    declared: Mapping[str, DeclaredTask] = field(default_factory=dict)
    # the suites it builds (`catalog.suites`, `--suite`), which the manifest records
    suites: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, cfg: "BuildConfig", tok: Tokenizer) -> "BuildRecipe":
        """The recipe of a `ruler build` command, for its loaded tokenizer."""
        variant, counted = cfg.variant, get_benchmark(cfg.benchmark).prompt_mode
        base = benchmark_config(config_name(tok.name), cfg.benchmark, cfg.axes)
        # A benchmark may count its prompts its own way (`Benchmark.prompt_mode`); otherwise
        # the prompt as the model reads it (the chat template where the tokenizer has one),
        # as the variant says.
        return cls(tokenizer=tok, config=variant.config_name(base),
                   seed_name=variant.seed_name(base), seed=cfg.seed, samples=cfg.samples,
                   prompt_mode=variant.prompt_mode(tok) if counted is None
                   else counted(tok.has_chat_template), variant=variant,
                   sources_dir=cfg.sources_dir, exact_counts=cfg.exact_counts,
                   # Piece counting is proven additive for the registry's tokenizers only
                   # (tests); any other tokenizer gets every row certified, unless the user
                   # accepts sampled certification.
                   certify_every_row=not tok.identity.pinned and not cfg.sampled_certification,
                   benchmark=cfg.benchmark, axes=cfg.axes, declared=records(cfg.tasks),
                   suites=(cfg.suite,) if cfg.suite else ())

    @classmethod
    def from_manifest(cls, config: str, build: BuildEntry, tok: Tokenizer,
                      sources_dir: str | os.PathLike | None) -> "BuildRecipe":
        """The recipe of `config`'s build as the manifest records it (`build`: its build
        entry), for the tokenizer loaded here (checked against the record by the caller). A
        RulerError where the entry lacks what makes the rows (the schema does not require
        them)."""
        seed, samples, mode = build.seed, build.samples, build.prompt_mode
        if seed is None or samples is None or mode is None:
            missing = [name for name, value in (("seed", seed), ("samples", samples),
                                                ("prompt mode", mode)) if value is None]
            raise RulerError(f"manifest.json records no {' or '.join(missing)} for the build "
                             f"{config!r}: its rows cannot be made again")
        variant = variant_from_record(build.variant)
        return cls(tokenizer=tok, config=config,
                   seed_name=variant.seed_name(variant.base_config(config)),
                   seed=seed, samples=samples, prompt_mode=mode,
                   variant=variant, sources_dir=sources_dir,
                   benchmark=build.benchmark_id, axes=build.axis_values(),
                   declared=build.declared_tasks or {},
                   suites=tuple(build.suites or ()))

    def declare_tasks(self) -> None:
        """Declare its declared tasks in this process (a worker's: a spawned process or a
        Ray worker starts without them)."""
        if self.declared:
            declare_records(self.declared, "the build recipe")

    def context(self) -> BuildContext:
        """A fresh build context (sources and resources load on first use)."""
        return BuildContext(self.tokenizer, self.seed_name, self.seed, self.sources_dir,
                            variant=self.variant, axes=self.axes,
                            length_rule=get_benchmark(self.benchmark).length_rule)

    def identity(self) -> IdentityRecord:
        """Everything that, when changed, makes existing files of this config stale (see
        `ruler.builder.identity`); a variant's parameters are part of it."""
        tok = self.tokenizer
        return make_identity(generator_version=__version__, seed=self.seed,
                             samples=self.samples, prompt_mode=self.prompt_mode,
                             tokenizer=tok.identity.as_manifest(),
                             packages={**content_packages(*tok.identity.content_kinds),
                                       **installed_versions(
                                           get_benchmark(self.benchmark).packages)},
                             variant=self.variant.record(), benchmark=self.benchmark,
                             axes=self.axis_records())

    def axis_records(self) -> dict[str, Any]:
        """Its axes' values as the manifest's build entry records them."""
        bench = get_benchmark(self.benchmark)
        return {a.name: a.record(self.axes[a.name]) for a in bench.axes if a.name in self.axes}
