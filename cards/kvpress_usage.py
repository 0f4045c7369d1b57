"""The card's "Use with kvpress" section: how `ruler export kvpress` turns a build into a
dataset folder in the schema kvpress loads, named in the benchmark family's words
(`CardWords.kvpress_dataset`; the export itself is
`ruler.eval.integrations.kvpress_export`, which takes its split name from here)."""

from __future__ import annotations

from ruler.builder.manifest import Manifest
from ruler.cards.body import words

#: The split kvpress loads (`load_dataset(DATASET, data_dir=L, split="test")`).
SPLIT = "test"


def card_section(manifest: Manifest, repo_id: str | None, revision: str | None) -> str:
    """The build card's "Use with kvpress" section (body, after its heading)."""
    source = f"{repo_id} --revision {revision}" if repo_id and revision else "OUT"
    return (
        f"`ruler export kvpress` writes a config's rows in the schema of "
        f"{words(manifest).kvpress_dataset} (`context`, `question`, `answer_prefix`, "
        f"`answer`, `task`, "
        f"`max_new_tokens`; one `data_dir` per length, split `{SPLIT}`), with an "
        f"`answer_prefix` that makes kvpress's prompt equal ruler's:\n\n"
        f"```bash\nruler export kvpress {source} --out ruler-kvpress   # --tokenizer-config C "
        f"with several configs; --limit 4 for a calibration subset\n```\n\n"
        f"```python\nds = load_dataset(\"ruler-kvpress\", data_dir=\"4096\", split=\"{SPLIT}\")"
        f"\n```\n\nIts card shows how to run kvpress's pipeline on it and score the "
        f"predictions with `ruler score`.")
