"""ruler: deterministic, tokenizer-exact builds of the RULER long-context benchmark.

Installed, the project is this one package: `ruler.builder` (generate), `ruler.cards` (the
dataset card), `ruler.release` (the Hub release), `ruler.eval` (evaluate, score, report) and
`ruler.tokenizers_cache` (the tokenizer registry). The command line is `ruler` or
`python -m ruler`. Importing the package imports nothing heavy.

The default `ruler build` output is `./ruler-data`, not `./ruler`: in an editable install a
folder named `ruler` in the working directory is imported as a namespace package in this one's
place (sub-modules are still found, but this file is not run).
"""

from ruler.builder import __version__

#: The Python API (`ruler.api`): one function per command, imported on first use so that
#: `import ruler` stays light.
__all__ = ["build", "load", "verify", "evaluate", "score", "__version__"]
_API = frozenset(__all__) - {"__version__"}


def __getattr__(name: str):
    if name in _API:
        from ruler import api

        return getattr(api, name)
    raise AttributeError(f"module 'ruler' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
