"""`ruler.builder.tasks.family` moved to `ruler.catalog.family`;
this path stays importable for plug-ins (docs/extending.md, "Moved modules")."""

from ruler.catalog.family import *  # noqa: F403
