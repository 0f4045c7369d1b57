"""The evaluator: `ruler eval` (generate), `ruler score`, `ruler report`, `ruler compare`
(their command modules are in `ruler.commands`).

Modules, one job each:
  config     what each command is asked to do, its fields its flags
  data       the dataset (build folder or Hub id) through its manifest, with content hashes
  render     one row to the exact prompt token ids, stored as a 4-byte array
  stream     the rows rendered by a process pool, a bounded window ahead of the engine
  runner     `ruler eval`: check, stream rows to the backend, skip what does not fit, save
  reasoning  reasoning mode: the answer after the model's thinking, and its state
  engine_env what the inference engines need from the machine
  report_health  the set-up health section of a report (what the run's records show)
  published_results  published results as data, checked against their schema
  exporters  `ruler export FRAMEWORK`: one registered exporter per target
  tiny_model a tiny random Llama with a real tokenizer, for smoke tests of engines
  inspect    the Inspect entry point (`inspect eval ruler/ruler`, `ruler.eval.inspect:ruler`)
Sub-packages, by job:
  backends/  the generation interface, the table of backends and one module per backend
  records/   a results folder's files (run.json, scores.json, predictions) as typed records
  metrics/   the metric specs (`specs`), answer checks, aggregation, intervals, depth
  scoring/   `ruler score`: predictions of any framework against the dataset's rows
  report/    `ruler report` and `ruler compare`: one run's report and its sections, figures
  failure_modes/  why rows fail: each wrong row's failure mode's record
  integrations/   other frameworks: exports, the Inspect task, readers of their outputs
"""
