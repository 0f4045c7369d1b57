"""`ruler.eval.report_health` moved to `ruler.eval.metrics.health`; this path stays
importable, as reports name `ruler.eval.report_health.REFUSAL_PATTERNS` (the report's set-up
health section) and plug-ins may import it (docs/extending.md, "Moved modules")."""

from ruler.eval.metrics.health import *  # noqa: F403
