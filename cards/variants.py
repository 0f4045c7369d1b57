"""The card's "Variant configs" section: what each variant config in the folder changes."""

from __future__ import annotations

from ruler.builder.manifest import Manifest
from ruler.catalog.variants import variant_kinds


def variants_section(manifest: Manifest) -> str:
    """One subsection per kind of variant the manifest's builds hold, ending in a blank line;
    "" when none does (the card then reads as it did before variants existed). Each kind's
    heading and explanation are its class's (`title`, `doc`): a registered variant brings its
    own section."""
    variants = {c: manifest.builds[c].variant or {} for c in manifest.configs()}
    parts = []
    for kind in variant_kinds():
        configs = {c: v[kind.field] for c, v in variants.items() if kind.field in v}
        if configs:
            listed = ", ".join(f"`{c}` ({kind.field} = {v})" for c, v in configs.items())
            parts.append(f"### {kind.title}\n\n{kind.doc}\n\nConfigs here: {listed}.")
    if not parts:
        return ""
    return "## Variant configs\n\n" + "\n\n".join(parts) + "\n\n"
