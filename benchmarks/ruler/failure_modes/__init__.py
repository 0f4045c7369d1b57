"""Why RULER's rows fail: the paper's taxonomy of long-context failure modes, per row.

RULER's Section 5 describes how models fail (non-robustness to needle types, failure to ignore
distractors, incomplete retrieval and duplicated values, copying from context, unreliable
tracking, failure to aggregate, QA hallucination); `paper-analysis.md` §4 makes each an
operational definition, and these modules apply them to every wrong row of a scored run:

  labels    the labels, their sources (the paper's or ours), precedence, thresholds
  text      the matching conventions: items, boundaries, normalisation, common substrings
  base      what a family's labeler is given (`LabelRow`, `Answer`) and fills in (`Found`)
  niah, vt, cwe, fwe, qa  each family's row reader and modes
  labeler   row + prediction -> no label (right) or a primary label and its flags
  (the labels as scores.json keeps them: `ruler.eval.failure_modes.record`)
  cell      labelling a scored cell (`ruler score`, `ruler eval`)
  report    `ruler report`'s failure-mode section, and the no-context coincidence
  report_hooks  RULER's report hooks (the base of RULERv2's and ONERULER's): that section
  fake_answers  the fake backend's purposeful failures (`--fake-answers MODE`), one per mode

Everything is read off the row as built (its input, references and answer prefix) and the
prediction: no column was added to the rows for it.
"""
