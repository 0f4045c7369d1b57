"""The kernel: what every area shares and none of it knows of building or evaluating: the
user's errors, configuration as flags, the registry, atomic writes, JSON records, hashing,
per-sample randomness, secrets scrubbed from output, temporary and staged files, file names
from user strings, markup escaping, the user cache and bounded downloads."""
