"""The card's "Variant configs" section: what each variant config in the folder changes."""

from __future__ import annotations

from typing import Any, Mapping

from ruler.builder.variants import variant_kinds


def variants_section(manifest: Mapping[str, Any]) -> str:
    """One subsection per kind of variant the manifest's builds hold, ending in a blank line;
    "" when none does (the card then reads as it did before variants existed). Each kind's
    heading and explanation are its class's (`title`, `doc`): a registered variant brings its
    own section."""
    builds = manifest.get("builds", {})
    parts = []
    for kind in variant_kinds():
        configs = {c: b["variant"][kind.field] for c, b in sorted(builds.items())
                   if kind.field in (b.get("variant") or {})}
        if configs:
            listed = ", ".join(f"`{c}` ({kind.field} = {v})" for c, v in configs.items())
            parts.append(f"### {kind.title}\n\n{kind.doc}\n\nConfigs here: {listed}.")
    if not parts:
        return ""
    return "## Variant configs\n\n" + "\n\n".join(parts) + "\n\n"
