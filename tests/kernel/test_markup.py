"""User-supplied strings in Markdown, LaTeX and figures (`ruler.kernel.markup`): each shows as
itself, rendered by a real CommonMark parser with GitHub's tables (issue 40 #19)."""

from __future__ import annotations

import pytest

from helpers.markdown_check import HOSTILE, HOSTILE_LEADING, check_markdown, shown
from ruler.kernel.markup import figure_text, latex_text, md_code, md_text, visible

PLAIN = ("meta-llama/Llama-3.1-8B-Instruct", "niah_single_1", "qwen2.5--oneruler-ko",
         "results/run-1", "Qwen2.5 (7B)", "gpt-4o-mini-2024-07-18")


@pytest.mark.parametrize("name", PLAIN)
def test_ordinary_names_are_left_as_they_are(name):
    assert md_text(name) == name and md_code(name) == f"`{name}`"


@pytest.mark.parametrize("name", [HOSTILE, HOSTILE_LEADING, "a`b", "|", "_x_", "**", "\\",
                                  "9) x", "#", "&lt;", "a\u2028b", "x\x1b[31m"])
@pytest.mark.parametrize("escape", [md_text, md_code])
def test_hostile_names_show_as_themselves_in_prose_lists_and_tables(name, escape):
    text = escape(name)
    assert "\n" not in text and "\r" not in text
    check_markdown(f"Model {text} here.\n\n- {text}\n", name)
    check_markdown(f"{text}\n", name)  # at the start of a line
    table = f"| a | b | c |\n|---|---|---|\n| {text} | {text} | x |\n| {text} | y | z |\n"
    check_markdown(table, name)
    assert shown(table).count(" ".join(visible(name).split())) == 3


def test_invisible_characters_are_shown_as_escapes():
    assert visible("a\nb\tc\u202ed\x00") == "a\\nb\\tc\\u202ed\\x00"
    assert visible("ok ✓ 한국어") == "ok ✓ 한국어"
    assert md_text("a\nb") == "a\\\\nb"  # shows as a\nb


def test_latex_and_figure_text():
    assert latex_text("a_b & 50% {x} $y$ ~^\\") == (
        r"a\_b \& 50\% \{x\} \$y\$ \textasciitilde{}\textasciicircum{}\textbackslash{}")
    assert latex_text("two\n\nlines") == r"two\textbackslash{}n\textbackslash{}nlines"
    assert latex_text("a|b") == r"a\textbar{}b"
    assert figure_text("cost $5 and $6\nnext") == r"cost \$5 and \$6\nnext"
