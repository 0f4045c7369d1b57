"""Use a build from other evaluation frameworks, with RULER's prompts and metrics.

Modules, one job each:
  lm_eval_hooks   the lm-evaluation-harness hooks (per-row metric, task score), in the form the
                  export copies into its utils.py
  lm_eval_export  `ruler export lm-eval`: a task folder (one task per tokenizer, task and
                  length, groups per length, tokenizer and all) for a build or a Hub revision
  lm_eval_samples lm-eval's `samples_*.jsonl` (or output folder) -> prediction records
  inspect_task    the Inspect task `ruler` (dataset, prefilled solver, RULER scorer)
  inspect_logs    Inspect `.eval`/`.json` logs -> prediction records
  nemo_skills     NeMo-Skills `output.jsonl` -> prediction records, keyed by prompt
  cli             `ruler export lm-eval` and `ruler export kvpress` (exporters)
  exporters       `ruler export`'s registry of exporters (a plug-in's through entry points)
The three readers are `ruler score`'s plug-ins (`READER` in each module, listed by address in
`ruler.eval.scoring.prediction_readers`), the two exports `ruler export`'s (listed by address
in `exporters`, its registry): scoring depends on no module here, the export command on the
registry alone.
The names and card texts both sides share live below, in `ruler.cards` (`lm_eval_usage`,
`inspect_usage`), so the dataset card never imports this package.
lm_eval and inspect_ai are imported only inside the functions that need them.
"""
