"""Plain helper modules for the tests, imported as `helpers.<module>` (pyproject's pytest
`pythonpath` puts tests/ on the path, from any working folder); tests never import conftest."""
