"""What an OpenAI-compatible server's documents say, read as untrusted input.

Every document `--backend openai` reads — /v1/models, llama.cpp's /props and /apply-template,
vLLM's /tokenize, completion and chat replies — may come in any shape (a proxy's error page,
a truncated body, a list where an object belongs, a count as a string). Each reader here takes
what the document holds in the expected shape and says what it could not use: a shape that
makes the document useless is `Damaged` (a one-line reason), a field that is merely unusable
is reported as such (a count that is not a number is "not reported", never a guess).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any


class Damaged(ValueError):
    """A server document that is not of the shape its route defines (the message says how)."""


def parse_json(body: bytes) -> Any:
    """The JSON value of a reply body; `Damaged` for anything else (including nesting too deep
    for the parser, which Python reports as RecursionError)."""
    try:
        return json.loads(body)
    except RecursionError:
        raise Damaged("JSON nested too deeply to read") from None
    except ValueError as e:  # JSONDecodeError, and UnicodeDecodeError for bytes not UTF-8
        raise Damaged(f"not JSON ({type(e).__name__}: {e})") from None


def shape_of(value: Any) -> str:
    """A few words on what a JSON value is, for messages ("a JSON list")."""
    kinds = {dict: "object", list: "list", str: "string", bool: "boolean", int: "number",
             float: "number", type(None): "null"}
    return f"a JSON {kinds.get(type(value), type(value).__name__)}"


def model_entries(doc: Any) -> list[dict[str, Any]]:
    """/v1/models' entries ({"data": [{"id": ...}, ...]}); entries that are not objects are
    left out. A document without `data` lists nothing (the served model is then unknown)."""
    if not isinstance(doc, dict):
        raise Damaged(f"{shape_of(doc)}, not an object {{\"data\": [...]}}")
    data = doc.get("data")
    if data is None:
        return []
    if not isinstance(data, list):
        raise Damaged(f"`data` is {shape_of(data)}, not a list of models")
    return [m for m in data if isinstance(m, dict)]


def served_context(entry: dict[str, Any]) -> tuple[int | None, str]:
    """The context a /v1/models entry reports, and which field said it: vLLM's
    `max_model_len`, llama.cpp's `meta.n_ctx` (per slot)."""
    if positive_int(entry.get("max_model_len")):
        return entry["max_model_len"], "the server's max_model_len"
    meta = entry.get("meta")
    if isinstance(meta, dict) and positive_int(meta.get("n_ctx")):
        return meta["n_ctx"], "the server's meta.n_ctx"
    return None, ""


def total_slots(doc: Any) -> int | None:
    """llama.cpp's /props `total_slots`, where it is a positive integer."""
    slots = doc.get("total_slots") if isinstance(doc, dict) else None
    return slots if positive_int(slots) else None


def field_text(doc: Any, name: str) -> str | None:
    """A string field of an object (`owned_by`, /apply-template's `prompt`), else None."""
    value = doc.get(name) if isinstance(doc, dict) else None
    return value if isinstance(value, str) else None


def token_ids(doc: Any) -> list[int] | None:
    """vLLM's /tokenize `tokens`, where it is a list of integers."""
    value = doc.get("tokens") if isinstance(doc, dict) else None
    if isinstance(value, list) and all(positive_int(t) or (t == 0 and type(t) is int)
                                       for t in value):
        return value
    return None


def first_choice(data: Any) -> dict[str, Any]:
    """A completion's first choice; `Damaged` when the reply has none in the expected shape."""
    if not isinstance(data, dict):
        raise Damaged(f"{shape_of(data)}, not a completion object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise Damaged(f"no `choices` list (it is {shape_of(choices)})" if choices is not None
                      else "no `choices`")
    if not isinstance(choices[0], dict):
        raise Damaged(f"its first choice is {shape_of(choices[0])}, not an object")
    return choices[0]


def choice_text(choice: dict[str, Any], chat: bool) -> Any:
    """The choice's text (`text`, or a chat choice's `message.content`) as sent: whatever is
    not a string is no answer, and the caller says so."""
    if not chat:
        return choice.get("text")
    message = choice.get("message")
    return message.get("content") if isinstance(message, dict) else None


def finish_reason(choice: dict[str, Any]) -> str:
    """The choice's finish_reason where it is a string; "" (not reported) otherwise."""
    value = choice.get("finish_reason")
    return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class ReportedCount:
    """A token count a server reported: `value` the number (None: none usable), `note` how it
    was given when not as a JSON integer, or why it cannot be used."""

    value: int | float | None
    note: str = ""


def usage_count(data: Any, name: str) -> ReportedCount:
    """`usage.<name>` of a completion reply, in any numeric form: an integer as is; a float
    or a numeric string as the number it is (4055.0 and "4055" are 4055), noted; anything
    else (absent, a word, a boolean, NaN, an object) has no value, and the note says why."""
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict) or usage.get(name) is None:
        return ReportedCount(None, f"the server reported no usage.{name}")
    raw = usage[name]
    if isinstance(raw, int) and not isinstance(raw, bool):
        return ReportedCount(raw)
    number: float | None = None
    if isinstance(raw, float):
        number = raw
    elif isinstance(raw, str):
        try:
            number = float(raw.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number):
        return ReportedCount(None, f"usage.{name} {_shown(raw)} is not a number")
    value = int(number) if number.is_integer() else number
    kind = "a string" if isinstance(raw, str) else "a float"
    return ReportedCount(value, f"usage.{name} given as {kind} ({_shown(raw)})")


def output_count(data: Any) -> tuple[int, str]:
    """The completion's token count (usage.completion_tokens) where it is a count: a whole
    number >= 0; else 0, as for a server that reports none, with a note on what it said."""
    count = usage_count(data, "completion_tokens")
    if count.value is None:
        return 0, ("" if count.note.startswith("the server reported no") else
                   f"{count.note}: recorded as not reported")
    if isinstance(count.value, float) or count.value < 0:
        raw = data["usage"]["completion_tokens"]
        return 0, (f"usage.completion_tokens {_shown(raw)} is not a token count: recorded as "
                   f"not reported")
    return int(count.value), count.note


def answered_model(data: Any) -> str | None:
    """The `model` a completion reply says answered it, where it names one."""
    value = data.get("model") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None


def positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _shown(raw: Any) -> str:
    text = repr(raw)
    return text if len(text) <= 40 else text[:37] + "..."
