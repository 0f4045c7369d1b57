"""`ruler verify`, in one module per concern:

  findings  Problem, FileReport, LoadResult, VerifyReport
  folder    the manifest's structure and build entries, the identity and build keys
            recomputed from them, stray files, the card's configs
  rows      one split file: bytes, schema, content hash, every row's checks, re-tokenizing,
            gold positions re-derived, regenerated rows compared
  regenerate  rows rebuilt from the manifest's record of the build (and QA gold documents)
  tokenizers  the build's tokenizer, checked against the manifest's record
  loading   `datasets.load_dataset` on every config and split
  run       verify(): folder checks, then files in a process pool, then loading
  report    the printed table
  cli       the `ruler verify` command
"""
