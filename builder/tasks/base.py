"""`ruler.builder.tasks.base` moved to `ruler.catalog.base`;
this path stays importable for plug-ins (docs/extending.md, "Moved modules")."""

from ruler.catalog.base import *  # noqa: F403
