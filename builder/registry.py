"""`ruler.builder.registry` moved to `ruler.kernel.registry`;
this path stays importable for plug-ins (docs/extending.md, "Moved modules")."""

from ruler.kernel.registry import *  # noqa: F403
