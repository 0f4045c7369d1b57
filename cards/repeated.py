"""The card's "Repeated source material" section: how much of a long context repeats its
source, where a source ran out before L (manifest field `repeated_share`)."""

from __future__ import annotations

from ruler.builder.manifest import Manifest

INTRO = (
    "Some sources hold less text than a long context needs: SQuAD v2.0 dev has 1,204 distinct "
    "paragraphs (about 200K tokens), the essay corpus about 700K tokens, a partial HotpotQA "
    "copy (100 questions) about 1,000 paragraphs (130K tokens). Past that point the source is "
    "repeated, as "
    "upstream repeats it: the QA tasks take the whole document list again and cut it (then "
    "shuffle as at any length), so a question's gold document occurs several times — every "
    "occurrence is a gold item in `gold_token_positions` and `gold_depths`; the essay "
    "haystacks continue with the corpus from its start. Needle keys stay unique within "
    "a sample, and no other task repeats a source. Share of each row's context (in "
    "characters) that repeats material already in it, per file:"
)


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
    return "## Repeated source material\n\n" + INTRO + "\n\n" + "\n".join(lines) + "\n\n"
