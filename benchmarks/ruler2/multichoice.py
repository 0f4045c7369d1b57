"""NeMo-Skills' `multichoice` metric: the letter a generation answers, against the row's letter.

RULERv2's two MMLU solve tasks (mk_niah_medium, mk_niah_hard) run NeMo-Skills' `eval_mcq` with
its defaults (`++eval_type=multichoice`, nothing else). Upstream, read at
`nemo_skills/evaluation/evaluator/mcq.py` commit 511d678edba48899d631a4769d1ce663c7ce52cf and
`nemo_skills/evaluation/math_grader.py` commit a42e28627d640caeb051d723ca0215ecb19ba40a
(the same interface: `relaxed`, `regex_first`):

1. the answer text: the content of the LAST `\\boxed{...}` (braces matched); when that is
   missing or empty, the last match of "The final answer is (.+)$" (the default
   `extract_regex`; `relaxed=True` tries the box first). `search_boxed` returns early when
   the text has no `\\boxed`, so its `\\fbox` branch is never reached: an answer written only
   as `\\fbox{C}` is not read from the box;
2. Arabic, Bengali and full-width letters mapped to A-D, stripped;
3. one character: that character upper-cased; longer: the last standalone capital letter in
   it (`\\b[A-Z]\\b`, none after it);
4. no letter yet: the last `Answer: X` in the whole generation (any case, optional `*`/`_`
   markdown around it), upper-cased;
5. correct when the letter equals the row's reference letter (exact comparison).

Older versions of mcq.py differ: one kept a single character's case (`\\boxed{c}` wrong for
C), one took the regex before the box. The values here are those of the versions above. Plain
functions over the standard library: `ruler export lm-eval` copies their source.
"""

from __future__ import annotations

import re
from typing import Sequence

BOXED = "\\boxed"
FINAL_ANSWER = re.compile(r"The final answer is (.+)$")
LAST_CAPITAL = re.compile(r"\b[A-Z]\b(?!.*\b[A-Z]\b)", re.DOTALL)
ANSWER_LINE = re.compile(r"(?i)[\*\_]{0,2}Answer[\*\_]{0,2}\s*:"
                         r"[\s\*\_]{0,2}\s*([A-Z])(?![a-zA-Z0-9])")
# Letters some languages write for A-D in multiple-choice answers (upstream's table).
LETTER_FORMS = (("أ", " A"), ("ب", " B"), ("ج", " C"), ("د", " D"),
                ("অ", " A"), ("ব", " B"), ("ড", " C"), ("ঢ", " D"),
                ("Ａ", " A"), ("Ｂ", " B"), ("Ｃ", " C"), ("Ｄ", " D"))


def last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{...}`, braces matched from it; None when there is no
    `\\boxed`, its braces never close, or it is not followed by `{` (e.g. `\\boxed C`)."""
    if BOXED not in text:
        return None
    start = text.rfind(BOXED)
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                boxed = text[start:i + 1]
                opening = BOXED + "{"
                return boxed[len(opening):-1] if boxed.startswith(opening) else None
    return None


def final_answer_text(text: str) -> str | None:
    """The last "The final answer is ..." on the generation's last line (`$` without
    MULTILINE), or None."""
    found = FINAL_ANSWER.findall(text)
    return found[-1] if found else None


def answer_letter(text: str) -> str | None:
    """The letter a generation answers (None: none found)."""
    answer = last_boxed(text) or final_answer_text(text)
    letter = None
    if answer is not None:
        for form, plain in LETTER_FORMS:
            answer = answer.replace(form, plain)
        answer = answer.strip()
        if len(answer) == 1:
            letter = answer.upper()
        elif len(answer) > 1:
            found = LAST_CAPITAL.findall(answer)
            if found:
                letter = found[-1].strip().upper()
    if letter is None:
        found = ANSWER_LINE.findall(text)
        if found:
            letter = found[-1].strip().upper()
    return letter


def boxed_answer(references: Sequence[str]) -> str:
    """What a model that is right writes: the letter in a box (the few-shot examples' form)."""
    return "\\boxed{" + references[0] + "}"


def multichoice(prediction: str, references: Sequence[str]) -> float:
    """1.0 when the generation's letter is the row's one reference letter, else 0.0."""
    if len(references) != 1:
        raise ValueError(f"a multichoice row has one reference letter, not {len(references)}")
    return 1.0 if answer_letter(prediction) == references[0] else 0.0
