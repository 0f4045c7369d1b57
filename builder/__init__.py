"""The generator: task catalog, task families, length fitting and counting, tokenizers,
sources, the Parquet writer, manifest, `ruler build`, `ruler sources` and `ruler verify`."""

#: The package's version, recorded in every manifest as the generator's version (and in each
#: file's build key). Code reads it from here, never from `ruler/__init__.py`: see there.
#: Raised when generated rows change shape or content, so that a build folder of an older
#: version is refused (build, merge) instead of mixed with new files: 0.2.0 added the
#: `context` and `question` columns (`builder.schema.PROMPT_PARTS_SINCE`); 0.2.1 cut
#: a benchmark's over-long book sentences (cut where their sentences end), which changes rows of 15
#: of its 26 languages wherever a row reaches such a sentence.
__version__ = "0.2.1"
