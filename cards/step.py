"""The dataset card as a publish step of the builder (`ruler.builder.publish_steps`): written
when a build's files are recorded and after every other manifest change, re-rendered when a
killed run left it stale, checked by `ruler verify`."""

from __future__ import annotations

from pathlib import Path

import yaml

from ruler.builder.findings import Problem
from ruler.builder.manifest import Manifest
from ruler.builder.publish_steps import PublishStep
from ruler.cards.render import CARD_NAME, card_is_current, configs_yaml, refresh_card, write_card


def card_problems(out: Path, manifest: Manifest) -> list[Problem]:
    """The card's `configs` must be exactly those the manifest implies (load_dataset reads
    them), and the whole card the one the manifest renders (a build killed between writing
    the manifest and the card leaves a stale one; a re-run of the build re-renders it)."""
    path = out / CARD_NAME
    if not path.is_file():
        return [Problem(CARD_NAME, "missing (the dataset card holds the configs)")]
    text = path.read_text(encoding="utf-8")
    parts = text.split("---\n", 2)
    if not text.startswith("---\n") or len(parts) < 3:
        return [Problem(CARD_NAME, "no YAML front matter")]
    try:
        front = yaml.safe_load(parts[1]) or {}
    except yaml.YAMLError as e:
        return [Problem(CARD_NAME, f"YAML front matter does not parse: {e}")]
    if not isinstance(front, dict) or front.get("configs") != configs_yaml(manifest):
        return [Problem(CARD_NAME, "`configs` do not match manifest.json "
                                   "(rewrite the card: it is rendered by `ruler build`)")]
    if not card_is_current(text, manifest):
        return [Problem(CARD_NAME, "stale: it is not the card manifest.json renders (re-run "
                                   "the `ruler build` or `ruler merge` that made the folder: "
                                   "it re-renders the card)")]
    return []


CARD = PublishStep(name="card", write=write_card, refresh=refresh_card, problems=card_problems)
