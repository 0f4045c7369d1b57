"""The files of a `ruler eval` results folder, named once for the runner, scorer and report."""

PREDICTIONS_NAME = "predictions.jsonl"  # one record per row, appended as each one finishes
RUN_NAME = "run.json"  # the run: model, prompt mode, dataset revision and its files' hashes
SCORES_NAME = "scores.json"  # `ruler score`'s output, which `ruler report` reads
