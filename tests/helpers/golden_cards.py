"""Small builds of each benchmark whose dataset cards tests/cards/test_golden_cards.py holds
every later ruler to, byte for byte: RULER v1, RULERv2, ONERULER (en and ko), a folder
holding all three, and v1's with a file whose source repeats (issue 41: moving a benchmark's
text into its card body changes no card).

`python tests/helpers/golden_cards.py` (from the repository root) builds them again and
rewrites the stored manifests and cards; run it only to accept a deliberate change of cards
(`RULER_GOLDEN_CARDS_WRITE=1` re-renders the cards from the stored manifests alone)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "cards" / "golden_cards"
#: The release a card is also rendered for (`ruler release`'s repo and tag), per case.
RELEASE = ("org/ruler", "v1.0")
RELEASED = ("v1",)


def _v1(out: Path) -> None:
    from helpers.builds import build

    build(out, "gpt-4", ("niah_single_1", "vt", "cwe", "qa_1"), (1024,), samples=1)


def _v2(out: Path) -> None:
    from helpers.builds import build

    build(out, "llama-3.1", ("mk_niah_basic", "mk_niah_easy", "qa_basic"), (4096,), samples=1,
          benchmark="ruler2")


def _oneruler(out: Path, codes=("en", "ko"), tasks=("or_niah_single", "or_cwe")) -> None:
    from helpers.builds import build
    from ruler.benchmarks.oneruler.languages import OnerulerLanguage

    for code in codes:
        build(out, "llama-3.1", tasks, (1024,), samples=1,
              axes={"language": OnerulerLanguage.parse(code)}, benchmark="oneruler")


def _qa_repeats(out: Path) -> None:
    """The share of qa_1's contexts that repeats its source, recorded as a build past SQuAD's
    size records it (a build that long is too slow for a test): the card's "Repeated source
    material" section."""
    import json

    path = out / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["files"]["data/gpt-4/qa_1/1024.parquet"]["repeated_share"] = {"mean": 0.8012,
                                                                             "max": 0.8031}
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


CASES = {
    "v1": (_v1,),
    "v1_repeated": (_v1, _qa_repeats),
    "v2": (_v2,),
    "oneruler": (_oneruler,),
    "mixed": (_v1, _v2, lambda out: _oneruler(out, ("ko",), ("or_niah_single",))),
}


def cards(folder: Path, case: str) -> dict[str, str]:
    """The cards a case's manifest renders: local, and for a release where the case has one."""
    from ruler.builder.manifest import Manifest
    from ruler.cards.render import render_card

    manifest = Manifest.load(folder)
    made = {"README.md": render_card(manifest)}
    if case in RELEASED:
        made["README.release.md"] = render_card(manifest, *RELEASE)
    return made


def main() -> None:
    import os

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from helpers.paths import SOURCES, TOKENIZERS

    os.environ.setdefault("RULER_TOKENIZERS", str(TOKENIZERS))
    os.environ.setdefault("RULER_SOURCES", str(SOURCES))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        for case, steps in CASES.items():
            out = Path(tmp) / case
            for step in steps:
                step(out)
            stored = FOLDER / case
            stored.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(out / "manifest.json", stored / "manifest.json")
            for name, text in cards(stored, case).items():
                (stored / name).write_text(text, encoding="utf-8")
            print(f"{case}: {', '.join(sorted(p.name for p in stored.iterdir()))}")


if __name__ == "__main__":
    main()
