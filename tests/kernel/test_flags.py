"""The config-to-flags mechanism (`ruler.kernel.flags`, issue 33.2): one field declaration
gives the argparse argument, reads the parsed value back, reads a keyword argument with the
same words argparse uses for a bad value, and checks choices and bounds on creation."""

from __future__ import annotations

import argparse
import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import pytest

from ruler.kernel.errors import RulerError
from ruler.kernel.flags import (
    NEGATED,
    POSITIONAL,
    REPEATED,
    SWITCH,
    FlagValueError,
    add_flags,
    check_flags,
    from_flags,
    keyword_names,
    option,
    read_keywords,
)


def _pairs(value):
    """A `parse` reader: `a=1,b=2` (or a mapping) as a dict."""
    if isinstance(value, dict):
        return value
    return dict(item.split("=", 1) for item in value.split(",") if item)


@dataclass(frozen=True)
class Toy:
    """Every kind of flag, as a command's config declares them."""

    inputs: tuple[Path, ...] = option(kind=POSITIONAL, nargs="+", type=Path, metavar="IN",
                                      help="input files")
    count: int = option("--count", default=3, type=int, minimum=1, hidden=("--n",),
                        help="how many (default: %(default)s)")
    colour: str = option("--colour", default="red", choices=("red", "green"), help="a colour")
    ratio: float = option("--ratio", default=0.5, type=float, above=0, maximum=1)
    pairs: dict = option("--pairs", default_factory=dict, parse=_pairs, text_default="",
                         help="k=v,...")
    tag: tuple[str, ...] = option("--tag", kind=REPEATED, default=(), metavar="T")
    out: Path | None = option("--out", "--to", default=None, type=Path)
    strict: bool = option("--strict", kind=SWITCH, default=False)
    progress: bool = option("--no-progress", kind=NEGATED, default=True)
    internal: str = "not a flag"

    def __post_init__(self) -> None:
        check_flags(self)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toy")
    add_flags(parser, Toy)
    return parser


def _argparse_error(argv: list[str]) -> str:
    """What argparse itself says about `argv`, after its `error: `."""
    said = io.StringIO()
    with contextlib.redirect_stderr(said), pytest.raises(SystemExit):
        _parser().parse_args(argv)
    return said.getvalue().strip().splitlines()[-1].split("error: ", 1)[1]


def test_the_parsed_flags_make_the_config_the_fields_declare():
    parsed = from_flags(Toy, _parser().parse_args(["a", "b"]))
    assert parsed == Toy(inputs=(Path("a"), Path("b")))  # every default is the dataclass's
    given = from_flags(Toy, _parser().parse_args([
        "a", "--n", "5", "--colour", "green", "--ratio", "1", "--pairs", "x=1,y=2", "--tag",
        "p", "--tag", "q", "--to", "o", "--strict", "--no-progress"]))
    assert given == Toy(inputs=(Path("a"),), count=5, colour="green", ratio=1.0,
                        pairs={"x": "1", "y": "2"}, tag=("p", "q"), out=Path("o"), strict=True,
                        progress=False)


def test_help_shows_the_declared_flags_and_hides_the_old_spelling():
    text = " ".join(_parser().format_help().split())
    assert "--count COUNT how many (default: 3)" in text and "--n " not in text
    assert "--colour {red,green}" in text and "--out OUT, --to OUT" in text
    assert "IN [IN ...]" in text and "--tag T" in text and "internal" not in text


@pytest.mark.parametrize("argv, keywords", [
    (["a", "--count", "two"], {"count": "two"}),
    (["a", "--count", "2.5"], {"count": 2.5}),
    (["a", "--colour", "blue"], {"colour": "blue"}),
    (["a", "--ratio", "half"], {"ratio": "half"}),
])
def test_a_keyword_is_refused_in_the_words_argparse_uses_for_the_flag(argv, keywords):
    with pytest.raises(FlagValueError) as e:
        read_keywords(Toy, {"inputs": ["a"], **keywords})
    assert str(e.value) == _argparse_error(argv)


def test_keywords_are_read_as_the_flags_read_them():
    names = keyword_names(Toy)
    # the flag's spelling, its hidden one, and the field's own name
    assert {"count", "n", "no_progress", "progress", "out", "tag", "internal"} - set(names) \
        == {"internal"}
    values = read_keywords(Toy, {"inputs": "a", "n": "4", "ratio": 1, "pairs": "k=v",
                                 "tag": "one", "out": "o", "no_progress": True, "colour": None})
    assert Toy(**values) == Toy(inputs=(Path("a"),), count=4, ratio=1.0, pairs={"k": "v"},
                                tag=("one",), out=Path("o"), progress=False)
    assert read_keywords(Toy, {"progress": False, "pairs": {"a": "b"}}) == \
        {"progress": False, "pairs": {"a": "b"}}
    with pytest.raises(FlagValueError, match="argument --strict: takes True or False, got 'yes'"):
        read_keywords(Toy, {"strict": "yes"})


@pytest.mark.parametrize("field, value, message", [
    ("count", 0, "--count must be >= 1, got 0"),
    ("ratio", 0.0, "--ratio must be > 0, got 0"),
    ("ratio", float("nan"), "--ratio must be > 0, got nan"),
    ("ratio", 1.5, "--ratio must be <= 1, got 1.5"),
    ("count", True, "--count must be >= 1, got True"),
    ("count", "3", "--count must be >= 1, got '3'"),
    ("colour", "blue", "--colour must be one of red, green, got 'blue'"),
])
def test_a_config_refuses_a_value_outside_its_flags_bounds_however_made(field, value, message):
    with pytest.raises(RulerError) as e:
        Toy(inputs=(Path("a"),), **{field: value})
    assert str(e.value) == message


def test_a_flag_two_options_types_declare_alike_is_added_once():
    @dataclass(frozen=True)
    class Other:
        count: int = option("--count", default=3, type=int)

    parser = _parser()
    add_flags(parser.add_argument_group("other"), Other)  # like --dtype, of vllm and hf
    assert [a.option_strings for a in parser._actions].count(["--count"]) == 1
