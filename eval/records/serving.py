"""How a run's prompts reached the model, where the engine has a say in it: a server's API and
endpoint, where the answer prefix went, whether the server's own prompt counts were checked
against the build's (`--backend openai`). Recorded in run.json (`serving`: one record per
distinct way a results folder was served), carried into scores.json with the count of rows
checked, unchecked and flagged (`PromptCheck`), and shown at the top of the report.

A claim about prompt counts covers exactly the rows it counts: rows whose count the server did
not report, or not as a number, are "not checked" and said to be, never folded into "checked".
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Mapping

from ruler.eval.records.run_record import PromptCheck, RunRecord, ServingRecord
from ruler.kernel.markup import md_code, md_text

__all__ = ["TOKEN_IDS", "PromptCheck", "describe", "markdown", "prepare_backend",
           "prompt_check", "prompt_delivery", "record_serving"]


def prepare_backend(backend: Any, renderer: Any) -> ServingRecord | None:
    """Let a backend that has `prepare` settle how it sends rows (see `Backend`); its record
    (a backend returns it as JSON data: run.json's `serving` entry)."""
    prepare = getattr(backend, "prepare", None)
    if not callable(prepare):
        return None
    record = prepare(renderer)
    return None if record is None else ServingRecord.from_json(record)


def record_serving(info: RunRecord, old: RunRecord | None,
                   serving: ServingRecord | None) -> tuple[RunRecord, list[str]]:
    """`info` with this run's serving record added to its list (kept from the folder's
    earlier runs), and what to tell the user: how the rows are sent, and a change from
    before."""
    if serving is None:
        return info, []
    before = list((old.serving if old else None) or [])
    info = replace(info, serving=before + [serving] if serving not in before else before)
    notes = [f"{serving.backend}: {describe(serving)}"]
    if before and serving not in before:
        notes.append("this results folder holds predictions served otherwise before (run.json "
                     "`serving` lists each way)")
    return info, notes


#: How prompts reach an engine that takes the rendered token ids as they are (vLLM,
#: transformers, the fake backend; a server's completions-ids).
TOKEN_IDS = "token ids"


def prompt_delivery(serving: ServingRecord | None) -> str:
    """How this run's rendered prompts reach the model, as part of the run's identity: the
    token ids as rendered, or a server's text or chat API with the answer prefix where it
    goes (a chat template the server applies renders another prompt than ours)."""
    if serving is None or serving.api in (None, "completions-ids"):
        return TOKEN_IDS
    if serving.api == "chat":
        return f"chat messages, the answer prefix as {serving.answer_prefix}"
    return f"text ({serving.api})" + (", BOS in the text" if serving.bos_in_text else "")


def describe(serving: ServingRecord) -> str:
    """One line: where, how the prompt was sent, what the probe checked, and the model the
    server answered as where it named another than asked."""
    if not serving.prompt_tokens_checked:
        checked = "the probe's prompt count not reported by the server"
    elif serving.probe_mismatch:
        checked = "the probe's usage.prompt_tokens compared with the build's count"
    else:
        checked = "the probe's usage.prompt_tokens equal to the build's count"
    if serving.probe_compared_whole:
        checked += f" ({serving.probe_compared_whole})"
    checked += "; each row's compared where the server reports it"
    said, asked = serving.server_model, serving.model
    if said and asked and said != asked:
        checked += f"; the server answered as model {said!r} (asked: {asked!r})"
    text = (f"{serving.endpoint} ({serving.api}): {serving.prompt}; "
            f"{checked}; context {serving.max_model_len} "
            f"({serving.max_model_len_source}); {serving.concurrency} request(s) "
            f"at a time ({serving.concurrency_source})")
    if serving.probe_mismatch:
        text += f"; PROMPT MISMATCH allowed: {serving.probe_mismatch}"
    return text


def prompt_check(records: Iterable[Mapping[str, Any]]) -> PromptCheck | None:
    """scores.json's `prompt_check` of these records; None when no row was counted,
    unchecked or named another model (engines that report nothing)."""
    check = PromptCheck()
    for r in records:
        check.add(r)
    return check if check.counted else None


def markdown(serving: list[ServingRecord] | None, check: PromptCheck | None) -> list[str]:
    """The report's lines on how the prompts were served (none for engines that say nothing)."""
    lines = [f"Served by {md_code(s.backend)} at {md_code(s.base_url)}: {md_text(describe(s))}."
             for s in serving or []]
    counts = check or PromptCheck()
    if counts.checked or counts.unchecked:
        lines.append(f"Server prompt counts: {counts.counts_text(bold=True)}.")
    if counts.answered_as:  # the names are the server's
        text = counts.models_text()
        lines.append(md_text(text[:1].upper() + text[1:]) + ".")
    return lines + [""] if lines else []
