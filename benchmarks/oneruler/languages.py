"""ONERULER's 26 languages and how a language names a config.

Upstream (GitHub mungg/OneRuler @ a3fe6af, `OneRuler/data/prompt/<lang>/`) has one folder of
translated prompts per language; these codes are its folder names. A build of ONERULER makes
one config per language, `<tokenizer>--oneruler-<lang>` (`llama-3.1--oneruler-ko`), and one per
cross-lingual pair, `<tokenizer>--oneruler-<context>-<instructions>` (`llama-3.1--oneruler-en-ko`:
the book, needles and keys in English, the instructions, question and none-word in Korean), as
upstream's `run_data_generation_xling.sh MODEL synthetic CTX INST` orders them. The manifest's
build entry records the language: `"language": "ko"`, or `{"context": "en", "instructions":
"ko"}` for a pair.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ruler.benchmarks.oneruler.tasks import CROSS_LINGUAL_TASKS
from ruler.catalog.benchmarks import BuildAxis
from ruler.kernel.errors import RulerError

#: Upstream's prompt folders, sorted: every language ONERULER has.
LANGUAGES: tuple[str, ...] = (
    "cs", "da", "de", "en", "es", "fa", "fi", "fr", "hi", "hu", "it", "ja", "ko", "nl", "no",
    "pl", "pt", "ru", "sr", "st", "sv", "sw", "ta", "uk", "vi", "zh",
)

#: The part of a ONERULER config's name after the tokenizer's: `--oneruler-<code>`.
CONFIG_PREFIX = "oneruler-"

# --- upstream's per-language rules (synthetic/niah.py, synthetic/common_words_extraction.py) ---

#: Context languages whose sentences, needles and question parts are joined with "" (upstream:
#: `lang in ["zh", "ja"]`); every other language joins them with one space.
UNSPACED = frozenset({"zh", "ja"})

#: The full stop after a needle (`add_period`): `。` for zh and ja, `۔` (U+06D4) for fa, "."
#: for the other 23.
FULL_STOP = {"zh": "\u3002", "ja": "\u3002", "fa": "\u06d4"}

#: Languages stanza has no model for (not in its resources list), so upstream always splits
#: their books with its regex fallback; the others it splits with stanza (here: sentencex).
REGEX_SPLIT = frozenset({"sw", "st"})

#: The folder (and file) name of each language's CWE dictionary (`language_codes`); English
#: has none: its words are wonderwords 2.2.0's lists.
DICTIONARY = {
    "zh": "Chinese", "fr": "French", "ja": "Japanese", "pt": "Portuguese", "sw": "Swahili",
    "cs": "Czech", "de": "German", "ko": "Korean", "ru": "Russian", "sv": "Swedish",
    "da": "Danish", "hi": "Hindi", "no": "Norwegian", "sr": "Serbian", "ta": "Tamil",
    "nl": "Dutch", "hu": "Hungarian", "fa": "Persian", "st": "Sesotho", "uk": "Ukrainian",
    "fi": "Finnish", "it": "Italian", "pl": "Polish", "es": "Spanish", "vi": "Vietnamese",
}

#: The noun-list rows (0-based data rows) a cross-lingual build drops first: earth, field,
#: house, month, moon (`skip_xling_indices`: translations too ambiguous across languages).
CROSS_LINGUAL_DROPPED_ROWS = (21, 28, 42, 64, 65)


def full_stop(language: str) -> str:
    return FULL_STOP.get(language, ".")


def joiner(language: str) -> str:
    """What upstream joins a context language's sentences and needles (and the question's
    parts) with."""
    return "" if language in UNSPACED else " "


@dataclass(frozen=True)
class OnerulerLanguage:
    """The languages of one ONERULER config: the context's (book, needles, keys, the needles'
    full stop) and the instructions' (task, question, answer format, the none-word). Equal for
    the 26 monolingual configs."""

    context: str
    instructions: str

    def __post_init__(self) -> None:
        bad = [c for c in (self.context, self.instructions) if c not in LANGUAGES]
        if bad:
            raise RulerError(f"ONERULER has no language {bad[0]!r}; its 26: "
                             f"{', '.join(LANGUAGES)}")

    @classmethod
    def mono(cls, code: str) -> "OnerulerLanguage":
        return cls(code, code)

    @property
    def cross_lingual(self) -> bool:
        return self.context != self.instructions

    @property
    def code(self) -> str:
        """`ko`, or `en-ko` for a cross-lingual pair (context first)."""
        return f"{self.context}-{self.instructions}" if self.cross_lingual else self.context

    def record(self) -> Any:
        """What the manifest's build entry records under `language`."""
        if self.cross_lingual:
            return {"context": self.context, "instructions": self.instructions}
        return self.context

    @classmethod
    def from_record(cls, value: Any) -> "OnerulerLanguage":
        """The language a manifest records (`record`)."""
        if isinstance(value, str):
            return cls.mono(value)
        if isinstance(value, dict) and set(value) == {"context", "instructions"}:
            return cls(value["context"], value["instructions"])
        raise RulerError(f"malformed ONERULER language {value!r}: a language code, or "
                         f"{{\"context\": ..., \"instructions\": ...}}")

    @classmethod
    def parse(cls, text: str) -> "OnerulerLanguage":
        """`ko` or `en-ko` (context-instructions), as `--languages` and config names say."""
        parts = text.strip().split("-")
        try:
            if len(parts) == 1:
                return cls.mono(parts[0])
            if len(parts) == 2:
                return cls(*parts)
            raise RulerError(f"bad ONERULER language {text!r}: a code (ko) or a cross-lingual "
                             f"pair context-instructions (en-ko)")
        except RulerError:
            hint = _meant(text)
            if hint is None:
                raise
            raise RulerError(f"ONERULER has no language {text.strip()!r}: {hint}") from None

    def config_suffix(self) -> str:
        return CONFIG_PREFIX + self.code


def _meant(text: str) -> str | None:
    """What a malformed language most likely meant: `KO` is `ko`, `KO-EN` is `ko-en`; `ko_en`
    or `ko:en` name a cross-lingual pair, written context-instructions with a hyphen (both
    orders offered: such a text does not say which language is the context's)."""
    pieces = [p.lower() for p in re.split(r"[^A-Za-z]+", text) if p]
    if not pieces or any(p not in LANGUAGES for p in pieces) or len(pieces) > 2:
        return None
    if len(pieces) == 1 or pieces[0] == pieces[1]:
        return f"did you mean {pieces[0]}?"
    a, b = pieces
    if re.fullmatch(r"\s*[A-Za-z]+-[A-Za-z]+\s*", text):  # the form, in capitals: its order
        return f"did you mean {a}-{b}?"
    return (f"did you mean {a}-{b} or {b}-{a}? (a cross-lingual pair is context-instructions: "
            f"{a}-{b}: the context in {a}, the instructions in {b})")


class LanguageAxis(BuildAxis):
    """ONERULER's build axis: one config per language (`--languages ko,fr`, `language="ko"`),
    or per cross-lingual pair (`en-ko`), whose config holds the 5 NIAH tasks only (upstream's
    CWE has no cross-lingual setting, `--xling`)."""

    name = "language"
    flag = "--languages"
    help = (f"--benchmark oneruler: comma-separated languages, one config each: a code "
            f"({' '.join(LANGUAGES)}) or a cross-lingual pair context-instructions (en-ko: the "
            f"book, needles and keys in English, the instructions, question and none-word in "
            f"Korean); default: all 26 codes")

    def parse(self, text: str) -> OnerulerLanguage:
        return OnerulerLanguage.parse(text)

    def every(self) -> tuple[OnerulerLanguage, ...]:
        return tuple(OnerulerLanguage.mono(code) for code in LANGUAGES)

    def record(self, value: OnerulerLanguage) -> Any:
        return value.record()

    def from_record(self, data: Any) -> OnerulerLanguage:
        return OnerulerLanguage.from_record(data)

    def code(self, value: OnerulerLanguage) -> str:
        return value.code

    def config_suffix(self, value: OnerulerLanguage) -> str:
        return value.config_suffix()

    def tasks(self, value: OnerulerLanguage, tasks: tuple[str, ...]) -> tuple[str, ...]:
        return CROSS_LINGUAL_TASKS if value.cross_lingual else tasks

    def check(self, value: OnerulerLanguage, tasks: Sequence[str]) -> None:
        other = [t for t in tasks if t not in CROSS_LINGUAL_TASKS]
        if value.cross_lingual and other:
            raise RulerError(f"{', '.join(other)}: ONERULER's CWE has no cross-lingual "
                             f"setting (upstream refuses --xling); a cross-lingual config "
                             f"({value.code}) holds {', '.join(CROSS_LINGUAL_TASKS)}")


def row_languages(axes: Mapping[str, Any]) -> tuple[str, ...]:
    """The languages of a ONERULER config's rows: its context's and its instructions'."""
    language = axes.get("language")
    return () if language is None else (language.context, language.instructions)
