"""A results folder's files and their typed records, their only readers and writers: run.json
(`run_record`), scores.json (`scores_record`, `health_record`), their shapes checked where
they are read (`results_schema`), the folder's file names (`results_folder`), the predictions
(`predictions`, a secret in an answer kept out of them: `redaction`), a skipped row's kind
(`skip_reasons`), a prediction tied to its row (`build_tie`) and how the prompts reached the
model (`serving`)."""
