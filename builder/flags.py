"""`ruler.builder.flags` moved to `ruler.kernel.flags`;
this path stays importable for plug-ins (docs/extending.md, "Moved modules")."""

from ruler.kernel.flags import *  # noqa: F403
