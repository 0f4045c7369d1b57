"""`ruler.builder.errors` moved to `ruler.kernel.errors`;
this path stays importable for plug-ins (docs/extending.md, "Moved modules")."""

from ruler.kernel.errors import *  # noqa: F403
