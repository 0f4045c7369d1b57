"""`ruler.eval.prediction_readers` moved to `ruler.eval.scoring.prediction_readers`;
this path stays importable for plug-ins (docs/extending.md, "Moved modules")."""

from ruler.eval.scoring.prediction_readers import *  # noqa: F403
