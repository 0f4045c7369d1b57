"""`ruler.cli` moved to `ruler.commands.main`;
this path stays importable for plug-ins (docs/extending.md, "Moved modules")."""

from ruler.commands.main import *  # noqa: F403
