"""User-supplied text in the files the project writes: one escaping function per output kind.

Model names, run folders, config and task names, file paths, a server's answers, a
predictions file's fields: none of them is ours, and any of them may hold `|`, a newline,
`*`, a backtick or HTML. Every Markdown file (reports, comparisons, the dataset card, an
export's README) puts such a string in through `md_text` (literal text) or `md_code` (inline
code where that is safe); LaTeX through `latex_text`; a figure's title or legend through
`figure_text`. Each leaves ordinary names as they are (`meta-llama/Llama-3.1-8B-Instruct`,
a task, `qwen2.5--v2`) and makes any other string show as exactly itself:
it cannot start a table cell, a line, a heading, a link, emphasis, math or an HTML element.

Characters that are not visible (newlines, tabs, other control characters, bidirectional
overrides, line separators) are shown as their escape (`\\n`, `\\x1b`, `\\u202e`): a name
that holds one says so instead of breaking the line or reordering the text around it.
"""

from __future__ import annotations

import unicodedata

#: Marks that reorder the text around them (bidirectional embeddings, overrides, isolates).
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
#: Markdown punctuation that acts anywhere in a line (CommonMark + GitHub's tables,
#: strikethrough and math): backslash-escaped wherever it appears.
_MD_ALWAYS = frozenset("\\`*[]|~$")
#: Markdown's meaning of these at the start of a line (a heading, a list item).
_MD_LEADING = frozenset("#+-")
#: HTML's specials, as entities: Markdown passes raw HTML through, and an entity shows as the
#: character in Markdown and HTML alike.
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def _hidden(ch: str) -> bool:
    """Whether `ch` is a character that does not show as itself (control, separator, bidi)."""
    return ch in _BIDI or unicodedata.category(ch) in ("Cc", "Zl", "Zp")


def visible(value: object) -> str:
    """`value` as text with its invisible characters written as escapes (`\\n`, `\\u202e`):
    what every output shows of it."""
    text = str(value)
    if not any(_hidden(ch) for ch in text):
        return text
    return "".join(ch.encode("unicode_escape").decode("ascii") if _hidden(ch) else ch
                   for ch in text)


def md_text(value: object) -> str:
    """`value` as literal Markdown text: the same characters when rendered, in a paragraph, a
    list item or a table cell (GitHub-flavoured Markdown, CommonMark)."""
    text = visible(value)
    out = []
    for i, ch in enumerate(text):
        if ch in _ENTITIES:
            out.append(_ENTITIES[ch])
        elif ch in _MD_ALWAYS or (i == 0 and ch in _MD_LEADING):
            out.append("\\" + ch)
        elif ch == "_" and not (0 < i < len(text) - 1 and text[i - 1].isalnum()
                                and text[i + 1].isalnum()):
            out.append("\\_")  # `_` between letters or digits never emphasises
        else:
            out.append(ch)
    if len(text) > 1 and text[0].isdigit():
        digits = len(text) - len(text.lstrip("0123456789"))
        if digits < len(text) and text[digits] in ".)":  # "1. " would start a numbered list
            return "".join(out[:digits]) + "\\" + "".join(out[digits:])
    return "".join(out)


def md_code(value: object) -> str:
    """`value` as inline code (`` `name` ``) where a code span shows it as it is; otherwise as
    `md_text` (a backtick or `|` inside, an invisible character, spaces at either end, empty)."""
    text = str(value)
    plain = (text and text == text.strip() and not any(_hidden(ch) for ch in text)
             and "`" not in text and "|" not in text)
    return f"`{text}`" if plain else md_text(text)


_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                   "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                   "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
                   "|": r"\textbar{}"}


def latex_text(value: object) -> str:
    """`value` as literal LaTeX text (in a table cell or a caption)."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in visible(value))


def figure_text(value: object) -> str:
    """`value` as literal text of a matplotlib title, label or legend entry: `$` would start
    mathtext (and a lone one fails the drawing), invisible characters break the line."""
    return visible(value).replace("$", r"\$")
