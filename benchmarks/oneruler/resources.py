"""What ONERULER's generators and row checks read, loaded once per process: the data folder
(the `oneruler` source), a language's prompt parts, keys, sentences and CWE words.

A build's context says which language (its `language` axis, `BuildContext.axes`; English
when none is given, as upstream's `--lang` defaults); a checked row carries the language its
build records (the manifest's `language`, `checks.with_build`), which is how `ruler verify`
checks a row against its language's prompt files: a config's name is never read for it.
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import TYPE_CHECKING, Mapping

from ruler.benchmarks.oneruler.data import OnerulerData
from ruler.benchmarks.oneruler.languages import OnerulerLanguage
from ruler.benchmarks.oneruler.sentences import split_sentences
from ruler.benchmarks.ruler.common_words import wonderwords_pool
from ruler.kernel.errors import RulerError

if TYPE_CHECKING:
    from ruler.catalog.context import BuildContext

SOURCE = "oneruler"


def language_of(ctx: "BuildContext") -> OnerulerLanguage:
    return ctx.axes.get("language") or OnerulerLanguage.mono("en")


def data(ctx: "BuildContext") -> OnerulerData:
    return ctx.resource(f"{SOURCE}:data", lambda: OnerulerData(ctx.source(SOURCE).path))


def prompt_parts(ctx: "BuildContext", lang: str) -> Mapping[str, str]:
    return ctx.resource(f"{SOURCE}:niah-parts:{lang}", lambda: data(ctx).niah_parts(lang))


def noun_keys(ctx: "BuildContext", language: OnerulerLanguage) -> tuple[str, ...]:
    """The context language's keys: the 100 nouns' entries (95 cross-lingually)."""
    return data(ctx).nouns.keys(language.context, language.cross_lingual)


def translations(ctx: "BuildContext", language: OnerulerLanguage) -> dict[str, str]:
    """Key -> the word the question asks it by: itself, or cross-lingually its translation."""
    keys = noun_keys(ctx, language)
    if not language.cross_lingual:
        return {k: k for k in keys}
    table = data(ctx).nouns.translations(language.context, language.instructions)
    missing = [k for k in keys if k not in table]
    if missing:
        raise RulerError(f"ONERULER {language.code}: no {language.instructions} translation of "
                         f"{', '.join(missing[:3])}")
    return table


def book_sentences(ctx: "BuildContext", lang: str) -> tuple[str, ...]:
    return ctx.resource(f"{SOURCE}:sentences:{lang}",
                        lambda: split_sentences(lang, data(ctx).book(lang)))


def cwe_pool(ctx: "BuildContext", lang: str) -> tuple[str, ...]:
    """Upstream's CWE words: sorted(set(nouns + adjectives + verbs)) (English: wonderwords
    2.2.0's lists; else the language's dictionary), shuffled by a fresh Random(seed)."""
    def load() -> tuple[str, ...]:
        words = list(wonderwords_pool()) if lang == "en" else \
            sorted(set(data(ctx).dictionary_words(lang)))
        random.Random(ctx.seed).shuffle(words)
        return tuple(words)

    return ctx.resource(f"{SOURCE}:cwe-pool:{lang}:{ctx.seed}", load)


@lru_cache(maxsize=1)
def _check_data() -> OnerulerData:
    from ruler.catalog.sources import resolve

    return OnerulerData(resolve(SOURCE).path)


def check_resources(row: Mapping) -> tuple[OnerulerLanguage, OnerulerData] | str:
    """A row's language and the data folder (found as builds find sources: $RULER_SOURCES,
    then the cache), for the row checks; why not, as text."""
    try:
        from ruler.catalog.checks import BUILD_AXES

        recorded = row.get(BUILD_AXES, {}).get("language")
        if recorded is None:
            return (f"the build of config {row['tokenizer']!r} records no ONERULER language "
                    f"to check the row against")
        return OnerulerLanguage.from_record(recorded), _check_data()
    except RulerError as e:
        return f"cannot check against the prompt files: {e}"
