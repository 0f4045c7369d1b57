"""Inspect's entry point into ruler: `inspect eval ruler/ruler ...`, or in Python
`from ruler.eval.inspect import ruler`. The task lives in `ruler.eval.integrations.inspect_task`
(this module only names it, for the `inspect_ai` entry point in pyproject.toml)."""

from ruler.eval.integrations.inspect_task import ruler, ruler_scorer

__all__ = ["ruler", "ruler_scorer"]
