"""A results folder's files (run.json, scores.json, predictions) as typed records, their only
readers and writers; docs/architecture.md ("Layout") names the modules."""
