"""RULER's pinned inputs: the essay haystack (and punkt's English sentence splitter), SQuAD and
HotpotQA, as upstream's scripts download them."""

from __future__ import annotations

from ruler.catalog.essay_fetch import PAGE_CEILING
from ruler.catalog.sources import ArchiveSource, FileSource

#: Its pinned inputs (`Benchmark.sources`), which `ruler sources` lists and fetches.
SOURCES = (
    FileSource(
        id="essays",
        card_license="other",
        title="Paul Graham essays (RULER's essay haystack, PaulGrahamEssays.json)",
        relpath="essays/PaulGrahamEssays.json",
        urls=(),
        size=3_108_596,
        sha256="1af094ff36d47893ea3c09cc570038053b711a9ba728c9d2dca036dbb231fa41",
        license="essays (c) Paul Graham; used as haystack text as in RULER",
        alternatives=("essays/*.json",),
        how_to_get=(
            "run `ruler sources fetch essays` (needs `pip install 'ruler-bench[essays]'`: "
            "it downloads the 218 essays upstream's scraper downloads and converts them as "
            "it does), or put the pinned PaulGrahamEssays.json at "
            "<sources>/essays/PaulGrahamEssays.json, or take it from a release made with "
            "`ruler release --with-sources` (its sources/ folder)"
        ),
        scraper=("RULER's scripts/data/synthetic/json/download_paulgraham_essay.py over its "
                 "PaulGrahamEssays_URLs.txt (catalog/essay_list.json)"),
        ceiling=PAGE_CEILING,
    ),
    FileSource(
        id="squad",
        card_license="cc-by-sa-4.0",
        title="SQuAD v2.0 dev",
        relpath="squad/dev-v2.0.json",
        urls=("https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v2.0.json",),
        size=4_370_528,
        sha256="80a5225e94905956a6446d296ca1093975c4d3b3260f1d6c8f68bc2ab77182d8",
        license="CC BY-SA 4.0",
        alternatives=("squad/*.json",),
    ),
    FileSource(
        id="hotpotqa",
        card_license="cc-by-sa-4.0",
        title="HotpotQA dev (distractor setting) v1",
        relpath="hotpotqa/hotpot_dev_distractor_v1.json",
        urls=(
            "http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json",
            "https://huggingface.co/datasets/namlh2004/hotpotqa/resolve/"
            "7e54db4656209750ff487f6fdf8e39a66dba136b/hotpot_dev_distractor_v1.json",
        ),
        size=46_320_117,
        sha256="4e9ecb5c8d3b719f624d66b60f8d56bf227f03914f5f0753d6fa1b359d7104ea",
        license="CC BY-SA 4.0",
        alternatives=("hotpotqa/*.json",),
    ),
    ArchiveSource(
        id="punkt_tab",
        title="NLTK punkt_tab English sentence-splitter parameters",
        relpath="nltk_data/tokenizers/punkt_tab/english",
        urls=(
            "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/"
            "tokenizers/punkt_tab.zip",
        ),
        sha256={
            "abbrev_types.txt":
                "92a3e070f43d9b4c5534758ca40ad7343b04e7e29bfe0c2eb658a39445a4f779",
            "collocations.tab":
                "8e2da1225e4dd2cc9dba261ee231ccb134859e21b46006e7f472c5ee269af0cf",
            "ortho_context.tab":
                "4bbcca25ed3d3f06c02402abf8419b9f033b8adc06e7b482eca4e45f81a5dc4c",
            "sent_starters.txt":
                "f3f8535483e1dba487241b764945168123bca3209a9645e59acd1225dc76edac",
        },
        license="Apache-2.0 (NLTK data)",
        ceiling=64_000_000,  # the archive of every language's files: its size is unpinned
    ),
)
