"""The tokenizer registry, `registry.json` (package data). Downloaded tokenizer files are not
kept here but in the user cache (`ruler.builder.tokenizer_registry.cache_dir`)."""
