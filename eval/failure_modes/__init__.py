"""scores.json's failure labels (`record`): per cell, each wrong row's label and flags, as a
benchmark's labeler made them (`Benchmark.failure_labels`)."""
