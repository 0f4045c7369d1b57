"""`ruler.builder.rng` moved to `ruler.kernel.rng`;
this path stays importable for plug-ins (docs/extending.md, "Moved modules")."""

from ruler.kernel.rng import *  # noqa: F403
