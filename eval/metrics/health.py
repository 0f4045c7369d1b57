"""The set-up health section of a report: what a run's own records say about how it was run.

Most RULER numbers that miss the published ones miss them for a set-up reason, and each leaves
a trace in the predictions (docs/reports-and-statistics.md lists the checks). `ruler score`
counts these facts from the predictions and the run's record (`health_facts`) into scores.json
(`health`); `ruler report` turns them into flags, each with what it usually means and what to
do (`flags`). Scores written before this section existed have no `health`: the report says so.

Refusals are recognised by a short list of phrases (`REFUSAL_PATTERNS`), matched
case-insensitively anywhere in an answer. It is deliberately small: a refusal flag says "look
at these answers", not a count to publish.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ruler.catalog.benchmarks import in_task_order
from ruler.catalog.declared import is_declared
from ruler.catalog.tasks import TASKS
from ruler.eval.metrics import answer_checks
from ruler.eval.records.health_record import HealthFacts
from ruler.eval.records.skip_reasons import skip_kind
from ruler.kernel.markup import md_text

if TYPE_CHECKING:
    from ruler.eval.records.run_record import RunRecord, ServingRecord
    from ruler.eval.records.scores_record import CellScore

#: Phrases that mark an answer as a refusal or a non-answer rather than an attempt. Each is a
#: regular expression, matched case-insensitively anywhere in the answer.
REFUSAL_PATTERNS = (
    r"\bI(?:'m| am) (?:sorry|unable|not able)\b",
    r"\bI (?:cannot|can't|can not) (?:help|assist|answer|provide|comply|determine|find)\b",
    r"\bas an AI\b",
    r"\b(?:not|isn't|is not) (?:mentioned|provided|found|given) in the (?:provided |given )?"
    r"(?:text|documents?|context)\b",
    r"\bI (?:do not|don't) (?:have|see) (?:enough|any|the) (?:information|context)\b",
)
_REFUSAL = re.compile("|".join(f"(?:{p})" for p in REFUSAL_PATTERNS), re.IGNORECASE)
#: Rows of each kind named in the report (keys), at most.
EXAMPLES = 3


def is_refusal(text: str) -> bool:
    return bool(_REFUSAL.search(text or ""))


def ruler_budget(task: str) -> int | None:
    """RULER's output budget of a task (tokens_to_generate), None for a task it lacks."""
    spec = TASKS.get(task)
    return spec.tokens_to_generate if spec else None


def _key(r: Mapping[str, Any]) -> str:
    return f"{r.get('tokenizer')}/{r.get('task')}/{r.get('max_seq_length')}#{r.get('index')}"


def health_facts(records: Iterable[Mapping[str, Any]],
                 settings: Mapping[str, Any] | None = None) -> HealthFacts:
    """Count the facts of prediction records (any framework's, as `ruler score` reads them).
    `settings`: the run's recorded settings (the `HealthFacts` fields from `mode` on; a
    framework's reader gives what its files record)."""
    known = {f.name for f in HealthFacts.json_fields()}
    facts = HealthFacts(**{k: v for k, v in (settings or {}).items() if k in known})
    counts: dict[str, Counter[str]] = {}
    examples: dict[str, list[str]] = {}

    def count(kind: str, r: Mapping[str, Any]) -> None:
        counts.setdefault(kind, Counter())[str(r.get("task"))] += 1
        shown = examples.setdefault(kind, [])
        if len(shown) < EXAMPLES:
            shown.append(_key(r))

    caps = dict(facts.max_tokens_by_task)
    for r in records:
        status = r.get("status", "ok")
        if status == "skipped":
            if skip_kind(r) is not None or not r.get("reason"):
                count("skipped_context", r)
            continue
        if status == "error" or r.get("prediction") is None:
            count("failed", r)
            continue
        count("answered", r)
        _answer_checks(facts, r, caps.get(str(r.get("task")), facts.max_tokens), count)
        finish, state = r.get("finish_reason"), r.get("reasoning")
        if finish:
            facts.finish_known += 1
        if finish == "length" and state != "budget_exhausted":
            count("cut_at_budget", r)
        if state in ("budget_exhausted", "unterminated"):  # reasoning never ended
            count(state, r)
        text = str(r.get("prediction") or "")
        if not text.strip() and state not in ("budget_exhausted", "unterminated"):
            count("empty", r)
        if is_refusal(text):
            count("refusals", r)
        if r.get("prompt_mismatch"):
            count("prompt_mismatch", r)
        if r.get("prompt_unchecked"):
            count("prompt_unchecked", r)
    for kind, c in counts.items():
        setattr(facts, kind, {t: c[t] for t in in_task_order(c)})
    facts.row_budget = {t: facts.row_budget[t] for t in in_task_order(facts.row_budget)}
    facts.examples = {k: v for k, v in examples.items() if k != "answered"}
    return facts


def _answer_checks(facts: HealthFacts, r: Mapping[str, Any], cap: int | None,
                   count: Any) -> None:
    """Count what `ruler score` found of an answered row against its own row
    (`eval.metrics.answer_checks` marks): its budget (and whether the run's cap was below it), a
    copy of the prompt, an answer far past the budget. A record without the marks (not scored
    against its row) is not counted as checked."""
    budget = r.get(answer_checks.BUDGET_MARK)
    if not isinstance(budget, int):
        return
    task = str(r.get("task"))
    facts.answers_checked = (facts.answers_checked or 0) + 1
    facts.row_budget[task] = max(budget, facts.row_budget.get(task, 0))
    if cap is not None and cap < budget:
        count("capped", r)
    if r.get(answer_checks.COPY_MARK):
        count("copies_prompt", r)
    if r.get(answer_checks.PAST_MARK):
        count("past_budget", r)


@dataclass(frozen=True)
class Flag:
    check: str
    status: str  # "ok", "check" (something to look at), "problem" (it changes the score)
    finding: str
    meaning: str = ""
    fix: str = ""


def _by_task(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{t} {counts[t]}" for t in in_task_order(counts))


def _group(task: str) -> str:
    """How budgets are said: per family where the family has several registered tasks (they
    share its budget), else per task. Declared tasks neither join a family's group nor make
    one (their budgets may be their own), so the words do not depend on what else this
    process declared."""
    spec = TASKS.get(task)
    if spec is None or is_declared(task) or sum(
            t.family == spec.family and not is_declared(n) for n, t in TASKS.items()) < 2:
        return task
    return spec.family.name


def _capped(caps: Mapping[str, int], tasks: Iterable[str],
            budgets: Mapping[str, int | None] | None = None) -> str:
    """"8 token(s) for a, b (the rows': a 120, b 30)": the caps of `tasks`, grouped,
    beside the budgets they were compared with (`budgets`: the rows' own; None: RULER's)."""
    tasks = in_task_order(t for t in tasks if t in caps)
    by_cap: dict[int, list[str]] = {}
    for t in tasks:
        by_cap.setdefault(caps[t], []).append(t)
    of = budgets if budgets is not None else {t: ruler_budget(t) for t in tasks}
    shown = dict.fromkeys(f"{_group(t)} {of.get(t)}" for t in tasks)
    return ("; ".join(f"{c} token(s) for {', '.join(dict.fromkeys(map(_group, ts)))}"
                      for c, ts in by_cap.items())
            + f" ({_budgets_name(tasks, budgets)}: {', '.join(shown)})" if tasks else "")


def _budgets_name(tasks: Iterable[str], budgets: Mapping[str, int | None] | None) -> str:
    """Whose budgets a cap was compared with: "RULER" where the rows carry RULER's own (or
    the scores record none), else "the rows'" (a build reserving another budget)."""
    if budgets is None or all(budgets.get(t) == ruler_budget(t) for t in tasks):
        return "RULER"
    return "the rows'"


def _total(counts: Mapping[str, int]) -> int:
    return sum(counts.values())


def flags(h: HealthFacts, cells: Mapping[tuple[str, int], CellScore] | None = None,
          serving: list[ServingRecord] | None = None,
          baseline: Mapping[tuple[str, int], float | None] | None = None) -> list[Flag]:
    """Every check of the section, each with its finding; the ones to act on with meaning and
    fix."""
    out: list[Flag] = []
    n = h.rows
    tasks = in_task_order(h.answered)
    cap = h.max_tokens
    caps = {t: c for t in tasks if (c := h.max_tokens_by_task.get(t, cap)) is not None}
    # the caps against the rows' own budgets where the scores record them (a build with
    # --output-budget reserves more than RULER's); older scores: against RULER's
    own = h.answers_checked is not None
    budgets: Mapping[str, int | None] | None = h.row_budget if own else None
    short = in_task_order(h.capped) if own else \
        [t for t, c in caps.items() if (ruler_budget(t) or 0) > c]

    if caps or h.temperature not in (None, 0, 0.0) or h.decoding:
        problems = []
        if short:
            whose = _budgets_name(short, budgets)
            whose = "RULER's" if whose == "RULER" else f"{whose} own"
            problems.append(f"output capped below {whose} budget at "
                            f"{_capped(caps, short, budgets)}")
        if h.temperature not in (None, 0, 0.0):
            problems.append(f"temperature {h.temperature} (RULER decodes greedily)")
        if problems:
            own_budgets = ", ".join(dict.fromkeys(f"{_group(t)} {ruler_budget(t)}"
                                                  for t in tasks))
            out.append(Flag("Generation settings", "problem", "; ".join(problems) + ".",
                            f"RULER generates greedily up to each task's own budget "
                            f"(tokens_to_generate: {own_budgets}); a smaller cap cuts answers "
                            f"that need the room (a list of words or names) and sampling adds "
                            f"noise the published numbers do not have.",
                            "Let each row's tokens_to_generate be the limit (`ruler eval` "
                            "without --max-tokens; lm-eval: no max_gen_toks override; Inspect: "
                            "no --max-tokens) and decode greedily (temperature 0)."))
        elif not caps:  # no cap recorded: each row ran with its own budget as the limit
            out.append(Flag("Generation settings", "ok",
                            f"{h.decoding or 'greedy'}, each row's own output budget."))
        else:
            compared = (f"every answered row's own budget ({h.answers_checked} row(s) "
                        f"compared)" if own else
                        "RULER's budgets (these scores do not record the rows' own: "
                        "re-score to compare with them)")
            out.append(Flag("Generation settings", "ok",
                            f"{h.decoding or 'greedy'}; the output caps recorded are at least "
                            f"{compared}."))
    else:
        out.append(Flag("Generation settings", "check", "not recorded with these predictions.",
                        fix="Check by hand that decoding was greedy and the output limit at "
                            "least the task's tokens_to_generate."))

    cut = h.cut_at_budget
    cut_short = [t for t in short if t in cut]
    if cut:
        worst = [t for t in cut if t in TASKS and TASKS[t].family.list_answer]
        out.append(Flag("Answers cut at the budget", "problem" if short or worst else "check",
                        f"{_total(cut)} of {n} answered row(s) ended with finish_reason "
                        f"`length` ({_by_task(cut)}).",
                        (f"answers cut at {_capped(caps, cut_short, budgets)}: "
                         if cut_short else "")
                        + "the model was still writing when the output limit came; "
                        + (f"list answers ({', '.join(dict.fromkeys(map(_group, worst)))}) "
                           f"need their full budgets (a cut list loses the items after the "
                           f"cut), " if worst else "")
                        + "an answer that rambles usually still holds what it found.",
                        "Restore RULER's budgets (no cap); if the model rambles at RULER's "
                        "budget, check the prompt mode and chat template: a base prompt "
                        "given to a chat model, or the reverse, often does this."))
    elif h.finish_known:
        out.append(Flag("Answers cut at the budget", "ok",
                        f"none of {h.finish_known} row(s) with a finish reason."))
    else:
        out.append(Flag("Answers cut at the budget", "check",
                        "no finish reason recorded with these predictions."))

    if h.budget_exhausted or h.unterminated:
        budget = h.reserved_budget
        out.append(Flag("Reasoning out of budget", "problem",
                        f"{_total(h.budget_exhausted)} row(s) still thinking when the output "
                        f"budget{f' ({budget} tokens)' if budget else ''} ran out"
                        + (f" ({_by_task(h.budget_exhausted)})" if h.budget_exhausted else "")
                        + (f"; {_total(h.unterminated)} stopped inside their reasoning"
                           if h.unterminated else "") + ": scored as empty answers (0).",
                        "a reasoning model thinks before it answers; with too small a "
                        "budget (sieval PR #11 lost 469 of 500 common-words answers this way) "
                        "the score measures the budget, not the model.",
                        "Build the rows with room for the thinking (`ruler build ... "
                        "--output-budget 16384`) or switch thinking off "
                        "(--chat-template-kwargs '{\"enable_thinking\": false}' where the "
                        "template has the switch)."))
    elif h.mode == "reasoning":
        out.append(Flag("Reasoning out of budget", "ok", "every row's reasoning ended."))

    out += _answer_flags(h)

    if h.empty:
        out.append(Flag("Empty answers", "problem" if _total(h.empty) * 10 >= max(n, 1)
                        else "check",
                        f"{_total(h.empty)} of {n} answered row(s) are empty "
                        f"({_by_task(h.empty)}).",
                        "the model ended its turn at once: usually the wrong prompt format "
                        "(a chat model without its template, a template whose pre-filled "
                        "answer prefix the model closes) or a stop string that matches at the "
                        "start.",
                        "Evaluate in the mode the config was built for, with the build "
                        "tokenizer's template; check stop strings."))
    else:
        out.append(Flag("Empty answers", "ok", f"none of {n} answered row(s)."))

    if h.refusals:
        out.append(Flag("Refusals", "check",
                        f"{_total(h.refusals)} answer(s) read as refusals or non-answers "
                        f"({_by_task(h.refusals)}; e.g. "
                        f"{', '.join(h.examples.get('refusals', []))}).",
                        "the model declined or said the answer is not in the text: a "
                        "safety-tuned model on a synthetic prompt, or a context it cannot "
                        "read (cut, or longer than it handles).",
                        "Read these answers; if the context is cut, raise --max-model-len; if "
                        "the model refuses, report it as the model's score, not a set-up "
                        "error."))
    else:
        out.append(Flag("Refusals", "ok", f"none of {n} answer(s) match the refusal phrases."))

    if h.prompt_mismatch:
        out.append(Flag("Prompt counts", "problem",
                        f"{_total(h.prompt_mismatch)} answered row(s) ran on a prompt the "
                        f"server counted otherwise than the build "
                        f"({_by_task(h.prompt_mismatch)}), kept by --allow-prompt-mismatch.",
                        "the server rendered or tokenized the prompt differently: most often "
                        "another chat template (the server's own), an added BOS, or another "
                        "tokenizer; those rows are not RULER's prompts at their length.",
                        "Serve the model with the build tokenizer's chat template (vLLM "
                        "--chat-template, llama-server --jinja --chat-template-file), or send "
                        "token ids (--api completions-ids); then drop "
                        "--allow-prompt-mismatch."))
    if h.prompt_unchecked:
        out.append(Flag("Prompt counts not checked", "check",
                        f"{_total(h.prompt_unchecked)} answered row(s) whose prompt count the "
                        f"server did not report ({_by_task(h.prompt_unchecked)}).",
                        "those rows may have run on another prompt, unseen.",
                        "Use a server that reports usage.prompt_tokens (vLLM, llama-server)."))
    elif not h.prompt_mismatch and serving:
        out.append(Flag("Prompt counts", "ok", "every answered row's count equal to the "
                                               "build's where the server reported one."))

    if h.skipped_context:
        out.append(Flag("Skipped for the context limit", "problem",
                        f"{_total(h.skipped_context)} row(s) never ran: prompt + "
                        f"tokens_to_generate exceeds the context limit "
                        f"({_by_task(h.skipped_context)}).",
                        "the engine's max_model_len is below the length evaluated; the cells "
                        "score only the rows that fit (marked *).",
                        "Raise --max-model-len to at least the length plus the task's "
                        "tokens_to_generate, or evaluate shorter lengths only."))
    if h.failed:
        out.append(Flag("Failed requests", "problem",
                        f"{_total(h.failed)} row(s) have no answer ({_by_task(h.failed)}).",
                        "requests the engine or server failed: the results are partial.",
                        "Re-run the same `ruler eval` command: it retries them."))

    if h.mode == "chat" and h.template_sha256 and h.build_template_sha256:
        if h.template_sha256 != h.build_template_sha256:
            out.append(Flag("Chat template", "problem",
                            f"the prompts were rendered with chat template "
                            f"{h.template_sha256[:12]}, not the build tokenizer's "
                            f"{h.build_template_sha256[:12]}.",
                            "another template changes every prompt and its length: the rows "
                            "no longer hold RULER's prompts at L.",
                            "Render with the tokenizer the config was built for (--model-"
                            "tokenizer), or build a config for this tokenizer."))
        else:
            out.append(Flag("Chat template", "ok",
                            f"the build tokenizer's (sha256 {h.template_sha256[:12]})."))
    elif h.mode == "chat":
        out.append(Flag("Chat template", "check", "not recorded with these predictions."))
    if baseline:
        out.append(_baseline_flag(baseline, cells or {}))
    if h.no_context:
        out.append(Flag("No-context baseline", "check",
                        "this run is on a --no-context config: its scores are what the model "
                        "answers without the haystack.",
                        "a task that scores well here (qa answers a model knows) measures "
                        "knowledge, not context use.",
                        "Read the run on the default config beside it."))
    return out


def _answer_flags(h: HealthFacts) -> list[Flag]:
    """Answers checked against their own row (`eval.metrics.answer_checks`): copies of the prompt,
    and answers far past the row's budget; nothing where the scores record no such check."""
    checked = h.answers_checked
    if not checked:
        return []
    out = []
    if h.copies_prompt:
        out.append(Flag("Answers copying the prompt",
                        "problem" if _total(h.copies_prompt) * 10 >= checked else "check",
                        f"{_total(h.copies_prompt)} of {checked} answered row(s) repeat long "
                        f"stretches of their own prompt ({_by_task(h.copies_prompt)}; e.g. "
                        f"{', '.join(h.examples.get('copies_prompt', []))}).",
                        "a server that echoes its input (a completions endpoint with echo on, "
                        "a proxy returning prompt + answer) or a base model continuing the "
                        "context: the answer holds the needles, so upstream's metrics score it "
                        "as right or partly right though the model answered nothing (the "
                        "score is upstream's all the same).",
                        "Read these answers; make the server return the generated text only, "
                        "and evaluate in the prompt mode the config was built for."))
    else:
        out.append(Flag("Answers copying the prompt", "ok",
                        f"none of {checked} answered row(s) (answers of "
                        f"{answer_checks.COPY_MIN_CHARS}+ characters compared with their "
                        f"prompt)."))
    if h.past_budget:
        out.append(Flag("Answers past their budget", "problem",
                        f"{_total(h.past_budget)} of {checked} answered row(s) are more than "
                        f"{answer_checks.PAST_BUDGET}x their row's output budget "
                        f"({_by_task(h.past_budget)}; e.g. "
                        f"{', '.join(h.examples.get('past_budget', []))}; output tokens where "
                        f"the predictions count them, else characters at "
                        f"{answer_checks.CHARS_PER_TOKEN} a token).",
                        "the generation was not capped at the row's tokens_to_generate (a "
                        "framework's max_gen_toks raised, a server ignoring max_tokens): a long "
                        "answer can hold what a capped one would not, and its score is not "
                        "RULER's.",
                        "Generate with each row's tokens_to_generate as the limit (`ruler "
                        "eval`; lm-eval: no max_gen_toks override)."))
    else:
        out.append(Flag("Answers past their budget", "ok",
                        f"none of {checked} answered row(s), each compared with its own "
                        f"row's budget."))
    return out


def _baseline_flag(baseline: Mapping[tuple[str, int], float | None],
                   cells: Mapping[tuple[str, int], CellScore]) -> Flag:
    """The run's scores beside the same model's scores without the context (a run on the
    config's --no-context variant, `ruler report RUN --no-context BASELINE`)."""
    order = in_task_order({t for t, _ in baseline})
    shared = sorted((k for k in baseline if k in cells and baseline[k] is not None),
                    key=lambda k: (k[1], order.index(k[0])))
    above = [(t, L) for t, L in shared if (baseline[(t, L)] or 0) > 0]
    text = ", ".join(f"{t} @ {L // 1024}K {baseline[(t, L)]:.1f} (run "
                     f"{_score(cells[(t, L)])})" for t, L in above)
    if not shared:
        return Flag("No-context baseline", "check", "the baseline run shares no task and "
                                                    "length with this run.")
    if not above:
        return Flag("No-context baseline", "ok",
                    f"0 on all {len(shared)} task x length cell(s) without the context.")
    return Flag("No-context baseline", "check",
                f"without the context the model scores {text}; 0 on the other "
                f"{len(shared) - len(above)} cell(s).",
                "these answers come from what the model knows, not from the context (qa "
                "questions it can answer closed-book); only the part of the score above the "
                "baseline measures the context.",
                "Read those tasks' scores against the baseline; compare models on the tasks "
                "whose baseline is 0.")


def _score(cell: CellScore) -> str:
    v = cell.score
    return "n/a" if v is None else f"{v:.1f}"


_STATUS = {"ok": "ok", "check": "check", "problem": "**problem**"}


def markdown(h: HealthFacts | None, cells: Mapping[tuple[str, int], CellScore] | None = None,
             serving: list[ServingRecord] | None = None,
             baseline: Mapping[tuple[str, int], float | None] | None = None) -> list[str]:
    """The report's "Set-up health" section."""
    lines = ["## Set-up health", ""]
    if h is None:
        return lines + ["Not recorded: these scores were written by an older `ruler score`; "
                        "re-score the predictions to see it.", ""]
    h, cells, baseline = _shown(h, cells, baseline)
    lines += [f"From the {h.rows} answered row(s) of the predictions ({h.framework}) and the "
              f"run's record. Refusal phrases: `ruler.eval.report_health.REFUSAL_PATTERNS`.",
              "", "| Check | Status | Finding |", "|---|---|---|"]
    found = flags(h, cells, serving, baseline)
    lines += [f"| {f.check} | {_STATUS[f.status]} | {f.finding} |" for f in found]
    to_act = [f for f in found if f.status != "ok" and (f.meaning or f.fix)]
    if to_act:
        lines += [""]
        for f in to_act:
            lines += [f"- **{f.check}**: {f.meaning}" + (f" *What to do*: {f.fix}"
                                                         if f.fix else "")]
    return lines + [""]


def _shown(h: HealthFacts, cells: Mapping[tuple[str, int], CellScore] | None,
           baseline: Mapping[tuple[str, int], float | None] | None) -> tuple[Any, Any, Any]:
    """The facts as the Markdown shows them: every name in them (tasks, row keys, the
    framework, the decoding: a foreign predictions file's text) escaped
    (`ruler.kernel.markup.md_text`), the counts as they are. report.json keeps them raw."""
    changes: dict[str, Any] = {}
    for f in HealthFacts.json_fields():
        value = getattr(h, f.name)
        if isinstance(value, str):
            changes[f.name] = md_text(value)
        elif isinstance(value, dict):
            changes[f.name] = {md_text(k): [md_text(x) for x in v] if isinstance(v, list)
                               else v for k, v in value.items()}
    escaped = {(md_text(t), L): v for (t, L), v in (cells or {}).items()}
    return (replace(h, **changes), escaped if cells is not None else None,
            None if baseline is None else {(md_text(t), L): v for (t, L), v in baseline.items()})


def run_settings(run: RunRecord, variant: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The `HealthFacts` settings of a `ruler eval` run record (run.json) and its config's
    build variant, as `health_facts` takes them (a prediction source's `settings`). Runs
    recorded before these fields existed give what they have."""
    template = run.prompt_template
    variant = variant or {}
    budget = variant.get("output_budget")
    return {"framework": "ruler eval", "mode": run.mode,
            # every `ruler eval` backend decodes greedily (vLLM, transformers, openai, fake)
            "decoding": (template.decoding if template else None) or "greedy",
            "temperature": 0.0, "max_tokens": run.max_tokens,
            "reserved_budget": int(budget) if isinstance(budget, int) else None,
            "template_sha256": template.sha256 if template else None,
            "build_template_sha256": template.build_sha256 if template else None,
            "no_context": bool(variant.get("no_context"))}
