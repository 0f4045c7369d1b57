"""The evaluator: `ruler eval` (generate), `ruler score` (RULER's metrics), `ruler report`.

Modules, one job each:
  metrics    upstream's string_match_all / string_match_part and prediction post-processing
  aggregate  per-length means, Avg., wAvg. (inc/dec), effective length (Table 3 math)
  data       the dataset (build folder or Hub id) through its manifest, with content hashes
  backends   vllm / openai / hf generation behind one interface (heavy imports inside)
  predictions  prediction records: append-as-you-go JSONL, reading, key checks
  results_folder  the file names of a results folder (run.json, predictions, scores)
  runner     `ruler eval`: render exactly as counted, skip what does not fit, generate, save
  score      predictions vs the dataset's rows -> scores.json
  report     scores.json -> report.md / .csv / .json and PNG plots
  cli        argparse wiring
  tiny_model a tiny random Llama with a real tokenizer, for smoke tests of engines
  integrations/  other frameworks: `ruler export lm-eval`, the Inspect task, their outputs
                 for `ruler score`
  inspect    the Inspect entry point (`inspect eval ruler/ruler`, `ruler.eval.inspect:ruler`)
"""
