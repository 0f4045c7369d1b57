"""The card's "Repeated source material" section: how much of a long context repeats its
source, where a source ran out before L (manifest field `repeated_share`)."""

from __future__ import annotations

from ruler.builder.manifest import Manifest
from ruler.cards.body import words

#: The section's paragraph, what the sources hold and how they repeat in the benchmark
#: family's words (`CardWords.repeated`).
INTRO = ("Some sources hold less text than a long context needs{repeated}. Share of each row's "
         "context (in characters) that repeats material already in it, per file:")


def repeated_section(manifest: Manifest) -> str:
    """The section, ending in a blank line; "" when no file repeats its source."""
    rows = sorted(((f.config, f.task, f.max_seq_length, f.repeated_share)
                   for f in manifest.files.values() if f.repeated_share),
                  key=lambda r: (r[0], r[2], r[1]))
    if not rows:
        return ""
    lines = ["| config | task | L | mean | max |", "|---|---|---|---|---|"]
    lines += [f"| `{c}` | `{t}` | {L} | {r['mean']:.1%} | {r['max']:.1%} |"
              for c, t, L, r in rows]
    intro = INTRO.format(repeated=words(manifest).repeated)
    return "## Repeated source material\n\n" + intro + "\n\n" + "\n".join(lines) + "\n\n"
