"""`ruler.builder.tasks.catalog` moved to `ruler.catalog.tasks`;
this path stays importable for plug-ins (docs/extending.md, "Moved modules")."""

from ruler.catalog.tasks import *  # noqa: F403
