"""The generator: task catalog, task families, length fitting and counting, tokenizers,
sources, the Parquet writer, manifest, `ruler build`, `ruler sources` and `ruler verify`."""

#: The package's version, recorded in every manifest as the generator's version (and in each
#: file's build key). Code reads it from here, never from `ruler/__init__.py`: see there.
__version__ = "0.1.0"
