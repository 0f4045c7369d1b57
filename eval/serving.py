"""How a run's prompts reached the model, where the engine has a say in it: a server's API and
endpoint, where the answer prefix went, whether the server's own prompt counts were checked
against the build's (`--backend openai`). Recorded in run.json (`serving`: one record per
distinct way a results folder was served), carried into scores.json with the count of rows
checked and flagged, and shown at the top of the report.
"""

from __future__ import annotations

from typing import Any, Iterable


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
    """One line: where, how the prompt was sent, and what was checked."""
    checked = ("the server's usage.prompt_tokens checked against the build's count"
               if serving.get("prompt_tokens_checked")
               else "prompt counts not reported by the server, so unchecked")
    if serving.get("probe_compared_whole"):
        checked += f" ({serving['probe_compared_whole']})"
    text = (f"{serving.get('endpoint')} ({serving.get('api')}): {serving.get('prompt')}; "
            f"{checked}; context {serving.get('max_model_len')} "
            f"({serving.get('max_model_len_source')}); {serving.get('concurrency')} request(s) "
            f"at a time ({serving.get('concurrency_source')})")
    if serving.get("probe_mismatch"):
        text += f"; PROMPT MISMATCH allowed: {serving['probe_mismatch']}"
    return text


def prompt_check(records: Iterable[dict[str, Any]]) -> dict[str, int] | None:
    """Answered rows whose prompt the server counted, and those whose count differed from
    the build's (kept with --allow-prompt-mismatch); None when no row was counted."""
    checked = differ = 0
    for r in records:
        if r.get("status", "ok") != "ok":
            continue
        checked += r.get("server_prompt_tokens") is not None
        differ += bool(r.get("prompt_mismatch"))
    return {"checked": checked, "differ": differ} if checked or differ else None


def markdown(serving: list[dict[str, Any]] | None, check: dict[str, int] | None) -> list[str]:
    """The report's lines on how the prompts were served (none for engines that say nothing)."""
    lines = [f"Served by `{s.get('backend')}` at `{s.get('base_url')}`: {describe(s)}."
             for s in serving or []]
    if check:
        lines.append(
            f"Server prompt counts: {check['checked']} answered row(s) checked"
            + (f", **{check['differ']} differ from the build's prompt** (flagged "
               f"`prompt_mismatch` in the predictions: the model saw another prompt)"
               if check["differ"] else ", all equal to the build's") + ".")
    return lines + [""] if lines else []
