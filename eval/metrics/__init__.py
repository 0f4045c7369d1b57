"""How rows and cells are scored: the metric specs (`specs`), answer checks, aggregation,
intervals and depth. `ruler.eval.metrics`, the module the metric specs were in, moved to
`ruler.eval.metrics.specs`; this package gives its names to plug-ins (docs/extending.md,
"Moved modules")."""

from ruler.eval.metrics.specs import *  # noqa: F403
