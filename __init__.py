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

__all__ = ["__version__"]
