"""How a run's prompts reached the model, where the engine has a say in it: a server's API and
endpoint, where the answer prefix went, whether the server's own prompt counts were checked
against the build's (`--backend openai`). Recorded in run.json (`serving`: one record per
distinct way a results folder was served), carried into scores.json with the count of rows
checked, unchecked and flagged (`PromptCheck`), and shown at the top of the report.

A claim about prompt counts covers exactly the rows it counts: rows whose count the server did
not report, or not as a number, are "not checked" and said to be, never folded into "checked".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping


def prepare_backend(backend: Any, renderer: Any) -> dict[str, Any] | None:
    """Let a backend that has `prepare` settle how it sends rows (see `Backend`); its record."""
    prepare = getattr(backend, "prepare", None)
    return prepare(renderer) if callable(prepare) else None


def record_serving(info: dict[str, Any], old: dict[str, Any] | None,
                   serving: dict[str, Any] | None) -> list[str]:
    """Add this run's serving record to run.json's list (kept from the folder's earlier
    runs); returns what to tell the user: how the rows are sent, and a change from before."""
    if serving is None:
        return []
    before = list((old or {}).get("serving") or [])
    info["serving"] = before + [serving] if serving not in before else before
    notes = [f"{serving.get('backend')}: {describe(serving)}"]
    if before and serving not in before:
        notes.append("this results folder holds predictions served otherwise before (run.json "
                     "`serving` lists each way)")
    return notes


def describe(serving: dict[str, Any]) -> str:
    """One line: where, how the prompt was sent, what the probe checked, and the model the
    server answered as where it named another than asked."""
    if not serving.get("prompt_tokens_checked"):
        checked = "the probe's prompt count not reported by the server"
    elif serving.get("probe_mismatch"):
        checked = "the probe's usage.prompt_tokens compared with the build's count"
    else:
        checked = "the probe's usage.prompt_tokens equal to the build's count"
    if serving.get("probe_compared_whole"):
        checked += f" ({serving['probe_compared_whole']})"
    checked += "; each row's compared where the server reports it"
    said, asked = serving.get("server_model"), serving.get("model")
    if said and asked and said != asked:
        checked += f"; the server answered as model {said!r} (asked: {asked!r})"
    text = (f"{serving.get('endpoint')} ({serving.get('api')}): {serving.get('prompt')}; "
            f"{checked}; context {serving.get('max_model_len')} "
            f"({serving.get('max_model_len_source')}); {serving.get('concurrency')} request(s) "
            f"at a time ({serving.get('concurrency_source')})")
    if serving.get("probe_mismatch"):
        text += f"; PROMPT MISMATCH allowed: {serving['probe_mismatch']}"
    return text


@dataclass
class PromptCheck:
    """Answered rows by what the engine said of their prompt: counted equal to the build's
    (`checked` less `differ`), counted otherwise (`differ`: flagged `prompt_mismatch`), not
    checked (`unchecked`: `prompt_unchecked` says why); and, by name, the rows a server
    answered as another model than asked (`server_model`)."""

    checked: int = 0
    unchecked: int = 0
    differ: int = 0
    answered_as: dict[str, int] = field(default_factory=dict)

    def add(self, record: Mapping[str, Any]) -> None:
        if record.get("status", "ok") != "ok":
            return
        self.checked += record.get("server_prompt_tokens") is not None
        self.unchecked += bool(record.get("prompt_unchecked"))
        self.differ += bool(record.get("prompt_mismatch"))
        model = record.get("server_model")
        if model:
            self.answered_as[str(model)] = self.answered_as.get(str(model), 0) + 1

    @classmethod
    def of(cls, saved: Mapping[str, Any] | None) -> "PromptCheck":
        """From scores.json's `prompt_check` (older ones have no `unchecked`)."""
        saved = saved or {}
        return cls(int(saved.get("checked") or 0), int(saved.get("unchecked") or 0),
                   int(saved.get("differ") or 0), dict(saved.get("answered_as") or {}))

    def saved(self) -> dict[str, Any] | None:
        """For scores.json; None when no row was counted, unchecked or named another
        model (engines that report nothing)."""
        if not (self.checked or self.unchecked or self.differ or self.answered_as):
            return None
        out: dict[str, Any] = {"checked": self.checked, "unchecked": self.unchecked,
                               "differ": self.differ}
        if self.answered_as:
            out["answered_as"] = dict(self.answered_as)
        return out

    def counts_text(self, bold: bool = False) -> str:
        """"58 of 60 answered row(s) checked, all equal to the build's; 2 not checked (...)"."""
        mark = "**" if bold else ""
        text = f"{self.checked} of {self.checked + self.unchecked} answered row(s) checked"
        if self.differ:
            text += (f", {mark}{self.differ} differ from the build's prompt{mark} (flagged "
                     f"`prompt_mismatch` in the predictions: the model saw another prompt)")
        elif self.checked:
            text += ", all equal to the build's"
        if self.unchecked:
            text += (f"; {self.unchecked} not checked (the server reported no "
                     f"usage.prompt_tokens, or not as a number: `prompt_unchecked` in the "
                     f"predictions says which)")
        return text

    def models_text(self) -> str:
        """"answers that name another model than asked: 'm' (8 rows)"; "" when none do."""
        if not self.answered_as:
            return ""
        return "answers that name another model than asked: " + ", ".join(
            f"{name!r} ({n} row{'s' if n != 1 else ''})"
            for name, n in sorted(self.answered_as.items(), key=lambda kv: -kv[1]))

    def console_lines(self) -> list[str]:
        """What a run says of its own rows, after the rows."""
        lines = []
        if self.checked or self.unchecked:
            lines.append(f"server prompt counts: {self.counts_text()}")
        if self.answered_as:
            lines.append(self.models_text())
        return lines


def prompt_check(records: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """scores.json's `prompt_check` of these records (`PromptCheck.saved`)."""
    check = PromptCheck()
    for r in records:
        check.add(r)
    return check.saved()


def markdown(serving: list[dict[str, Any]] | None,
             check: Mapping[str, Any] | None) -> list[str]:
    """The report's lines on how the prompts were served (none for engines that say nothing)."""
    lines = [f"Served by `{s.get('backend')}` at `{s.get('base_url')}`: {describe(s)}."
             for s in serving or []]
    counts = PromptCheck.of(check)
    if counts.checked or counts.unchecked:
        lines.append(f"Server prompt counts: {counts.counts_text(bold=True)}.")
    if counts.answered_as:
        text = counts.models_text()
        lines.append(text[:1].upper() + text[1:] + ".")
    return lines + [""] if lines else []
