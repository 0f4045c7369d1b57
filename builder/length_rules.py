"""`ruler.builder.length_rules` moved to `ruler.catalog.length_rules`;
this path stays importable for plug-ins (docs/extending.md, "Moved modules")."""

from ruler.catalog.length_rules import *  # noqa: F403
