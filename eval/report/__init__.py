"""`ruler report` and `ruler compare`: one run's report (`run`: the frame, with each benchmark's
hooks) and its sections; docs/architecture.md ("Layout") names the modules."""
