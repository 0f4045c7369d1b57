"""`ruler.eval.exporters` moved to `ruler.eval.integrations.exporters`;
this path stays importable for plug-ins (docs/extending.md, "Moved modules")."""

from ruler.eval.integrations.exporters import *  # noqa: F403
