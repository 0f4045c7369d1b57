"""`ruler.builder.variants` moved to `ruler.catalog.variants`;
this path stays importable for plug-ins (docs/extending.md, "Moved modules")."""

from ruler.catalog.variants import *  # noqa: F403
