"""A sources folder whose HotpotQA copy has enough questions to time qa_2 at 500 samples.

Machines without the full HotpotQA dev file (46 MB) may hold only a partial copy (the pinned
one has 100 questions), which caps qa_2 at that many samples. For timing only, this writes
`<out>/hotpotqa/hotpot_dev_distractor_v1.timing-proxy.json`: the copy's questions repeated
until there are `--questions`, every repetition's titles, sentences and question marked
" (k)" so that no document text recurs (the builder's piece cache must not see repeats the
real file would not have). The other sources are linked from `--sources`. The builder marks
the file unofficial (its hash differs), so nothing built from it can pass as RULER data.

    python -m perf.hotpotqa_proxy --sources ../shared/sources --out /tmp/sources-500
    RULER_SOURCES=/tmp/sources-500 python -m perf.build --lengths paper --samples 500
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ruler.catalog.sources import SOURCES, resolve


def proxy_questions(questions: list[dict], total: int) -> list[dict]:
    out = []
    for i in range(total):
        k, q = divmod(i, len(questions))
        q = json.loads(json.dumps(questions[q]))
        if k:
            mark = f" ({k})"
            q["_id"] = f"{q.get('_id')}{mark}"
            q["question"] += mark
            q["context"] = [[title + mark, [s + mark for s in sents]]
                            for title, sents in q["context"]]
            q["supporting_facts"] = [[title + mark, j] for title, j in q["supporting_facts"]]
        out.append(q)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sources", type=Path, required=True, help="sources folder to copy from")
    p.add_argument("--out", type=Path, required=True, help="new sources folder")
    p.add_argument("--questions", type=int, default=500)
    args = p.parse_args(argv)
    hotpot = resolve("hotpotqa", args.sources)
    args.out.mkdir(parents=True, exist_ok=True)
    for child in args.sources.iterdir():
        link = args.out / child.name
        if child.name != "hotpotqa" and not link.exists():
            link.symlink_to(child.resolve())
    questions = json.loads(Path(hotpot.path).read_text("utf-8"))
    dest = args.out / Path(SOURCES["hotpotqa"].relpath).parent
    dest.mkdir(exist_ok=True)
    path = dest / "hotpot_dev_distractor_v1.timing-proxy.json"
    path.write_text(json.dumps(proxy_questions(questions, args.questions)), "utf-8")
    print(f"{path}: {args.questions} questions from {len(questions)} in {hotpot.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
