"""`ruler.builder.sources` moved to `ruler.catalog.sources`;
this path stays importable for plug-ins (docs/extending.md, "Moved modules")."""

from ruler.catalog.sources import *  # noqa: F403
