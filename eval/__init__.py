"""The evaluator: `ruler eval` (generate), `ruler score` (RULER's metrics), `ruler report`.

Modules, one job each:
  metrics    upstream's string_match_all / string_match_part and prediction post-processing
  aggregate  per-length means, Avg., wAvg. (inc/dec), effective length (Table 3 math)
  data       the dataset (build folder or Hub id) through its manifest, with content hashes
  render     one row to the exact prompt token ids, stored as a 4-byte array
  stream     the rows rendered by a process pool, a bounded window ahead of the engine
  backends/  the generation interface (streamed, bounded, `base`), the table of backends
             (`registry`: names, requirements, flags) and one module per backend: vllm
             (vLLM's engine: tensor/pipeline/data parallel), openai (completions servers over
             httpx), hf (transformers), fake (no model: the rows' references, for checks)
  reasoning  reasoning mode: the answer after the model's thinking, and its state
  predictions  prediction records: append-as-you-go JSONL, streamed reading, key checks
  results_folder  the file names of a results folder (run.json, predictions, scores), its lock
  strict_json  JSON from users' files: a key twice, NaN, runaway nesting refused in one line
  results_schema  the shape of run.json and scores.json, checked where they are read
  build_tie  whether a prediction was made from the very row it is scored against
  runner     `ruler eval`: check, stream rows to the backend, skip what does not fit, save
  prediction_readers  which reader a `ruler score --predictions` path needs (a registry:
             lm-eval, Inspect, NeMo-Skills in integrations/, or a plug-in's), and
             prediction_source what a reader returns
  score      predictions vs the dataset's rows -> scores.json
  report     scores.json -> report.md / .csv / .json and PNG plots
  failure_modes/  why rows fail: each wrong row's failure mode (the paper's Section 5
             taxonomy), recorded by score, shown by report
  cli        argparse wiring
  tiny_model a tiny random Llama with a real tokenizer, for smoke tests of engines
  exporters  `ruler export FRAMEWORK`: one registered exporter per target
  integrations/  other frameworks: `ruler export lm-eval` and `kvpress`, the Inspect task,
                 the readers of their outputs for `ruler score`
  inspect    the Inspect entry point (`inspect eval ruler/ruler`, `ruler.eval.inspect:ruler`)
"""
