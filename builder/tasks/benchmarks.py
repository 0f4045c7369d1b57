"""`ruler.builder.tasks.benchmarks` moved to `ruler.catalog.benchmarks`;
this path stays importable for plug-ins (docs/extending.md, "Moved modules")."""

from ruler.catalog.benchmarks import *  # noqa: F403
