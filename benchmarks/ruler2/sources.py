"""RULERv2's pinned inputs: MMLU and HotpotQA from the Hub at pinned revisions."""

from __future__ import annotations

from ruler.catalog.hub_sources import HubDataset, HubFile, HubSplit
from ruler.catalog.sources import HubSource

#: Its pinned inputs (`Benchmark.sources`), which `ruler sources` lists and fetches.
SOURCES = (
    HubSource(
        id="mmlu",
        title="MMLU (Hub cais/mmlu, config all: test questions, auxiliary_train haystack)",
        relpath="mmlu/hub",
        license="MIT",
        ceiling=1_000_000_000,  # a file whose size is pinned nowhere (auxiliary_train)
        hub=HubDataset(
            repo="cais/mmlu", config="all",
            revision="c30699e8356da336a370243923dbaf21066bb9fe",
            columns=("question", "choices", "answer"),
            splits=(
                HubSplit("test", 14_042, (HubFile(
                    "all/test-00000-of-00001.parquet",
                    "74a41822ce7d3def56e1682f958469c04642a5336a5ce912fa375fdb90fb25d7"),),
                    standin="mmlu/test*.parquet"),
                HubSplit("auxiliary_train", 99_842, (HubFile(
                    "all/auxiliary_train-00000-of-00001.parquet"),),
                    standin="mmlu/auxiliary_train*.parquet"),
            )),
    ),
    HubSource(
        id="hotpotqa_hub",
        card_license="cc-by-sa-4.0",
        title="HotpotQA (Hub hotpotqa/hotpot_qa, config distractor: train paragraphs, "
              "validation questions)",
        relpath="hotpotqa/hub",
        license="CC BY-SA 4.0",
        hub=HubDataset(
            repo="hotpotqa/hotpot_qa", config="distractor",
            revision="1908d6afbbead072334abe2965f91bd2709910ab",
            columns=("question", "answer", "supporting_facts", "context"),
            splits=(
                HubSplit("train", 90_447, (
                    HubFile("distractor/train-00000-of-00002.parquet",
                            "76d3bb3048a7cc73c1958107c0c5872a00d7e7d00c105b81e92f6769e7822e68",
                            165_624_177),
                    HubFile("distractor/train-00001-of-00002.parquet",
                            "713661628434fbb19fff7392e2e321e4ed107e3c7c7784d0690946e5f722763f",
                            166_162_479)),
                    standin="hotpotqa/ruler2.train*.parquet"),
                HubSplit("validation", 7_405, (HubFile(
                    "distractor/validation-00000-of-00001.parquet",
                    "c20b638ca82b21d04fe12e14ff417ad05153d4d215a65de54497fca4e972f7c6",
                    27_452_575),),
                    standin="hotpotqa/ruler2.validation*.parquet"),
            )),
    ),
)
