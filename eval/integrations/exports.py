"""`ruler export lm-eval | kvpress`: the two exporters (`ruler.eval.integrations.exporters`),
their options and how they run (the work is in `lm_eval_export` and `kvpress_export`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ruler.builder.selection import lengths_value, tasks_value
from ruler.eval.integrations.export_folder import RECORD_NAME
from ruler.eval.integrations.exporters import Exporter
from ruler.kernel.flags import POSITIONAL, SWITCH, check_flags, option

#: Both exports' rule for a folder that exists.
REPLACES = (f"An earlier export there is replaced, only while it holds nothing but the files "
            f"it wrote (listed in its {RECORD_NAME}); a folder holding anything else is "
            f"refused, naming it")


LM_EVAL_DESCRIPTION = (
    "Write an lm-evaluation-harness task folder for the build BUILD: one task per "
    "(tokenizer config,\ntask, length), named ruler_<config>_<task>_<L>, with "
    "the rows' prompt fields, greedy\ndecoding up to the task's tokens_to_generate "
    "and the rows' metric (0-100); groups\nruler_<config>_<L>, ruler_<config> and "
    "ruler_all. Then:\n\n  lm_eval --model hf --model_args "
    "pretrained=<model>,max_length=<L> --apply_chat_template \\\n"
    "    --include_path BUILD/lm_eval --tasks ruler_<config>_<L> --log_samples "
    "--output_path results/\n  ruler score --predictions results/ --data BUILD\n\n"
    "--apply_chat_template is for builds counted with a chat template (the "
    "default); max_length\nmust be >= L, or lm-eval left-truncates the prompt.")


@dataclass(frozen=True)
class LmEvalExport:
    """`ruler export lm-eval`: which build, where, and which dataset the tasks load."""

    build: Path = option(kind=POSITIONAL, type=Path, metavar="BUILD",
                         help="the build folder (with manifest.json)")
    repo: str | None = option(
        "--repo", default=None, metavar="ORG/NAME",
        help="the tasks load this Hub dataset (with --revision) instead of BUILD")
    revision: str | None = option(
        "--revision", default=None, metavar="TAG",
        help="the Hub revision (release tag or commit) the tasks load")
    to: Path | None = option(
        "--out", "--to", default=None, type=Path, metavar="DIR",
        help=f"the task folder to write (default: BUILD/lm_eval; --to: the same, the older "
             f"spelling). {REPLACES}")
    absolute: bool = option(
        "--absolute", kind=SWITCH, default=False,
        help="name the build folder by its absolute path (the task folder can then move "
             "alone); by default it is named relative to the task folder, so the two can move "
             "together")

    def __post_init__(self) -> None:
        check_flags(self)


KVPRESS_DESCRIPTION = (
    "Write one tokenizer config of SOURCE (a build folder, or a Hub dataset "
    "ORG/NAME at --revision)\nas a dataset folder in the schema of kvpress's "
    "`ruler` dataset: one data_dir per length, split\ntest, columns context, "
    "question, answer_prefix, answer, task, max_new_tokens (and the\nrow's "
    "ruler key: tokenizer, max_seq_length, index). answer_prefix is rendered so "
    "that\nkvpress's prompt equals ruler's. Then:\n\n"
    "  load_dataset(DIR, data_dir=\"4096\", split=\"test\")   # as kvpress "
    "loads its datasets\n\nThe folder's README.md says which build, tokenizer and "
    "revision it came from, and how\nto run kvpress's pipeline and score its "
    "predictions with `ruler score`. kvpress's own scorer\npicks a task's metric "
    "by the task's name: a task whose rows record another metric is\nnamed on "
    "the console and in the card.")


@dataclass(frozen=True)
class KvpressExport:
    """`ruler export kvpress`: which dataset config, which rows, and where."""

    source: str = option(kind=POSITIONAL, metavar="SOURCE",
                         help="build folder OUT, or a Hub dataset ORG/NAME")
    out: Path = option(
        "--out", "--to", required=True, type=Path, metavar="DIR",
        help=f"the folder to write (--to: the same; both exports take either spelling). "
             f"{REPLACES}")
    revision: str | None = option("--revision", default=None,
                                  help="Hub dataset revision (tag or commit)")
    tokenizer_config: str | None = option(
        "--tokenizer-config", default=None, metavar="CONFIG",
        help="the config to export (default: the dataset's only one)")
    tasks: tuple[str, ...] = option("--tasks", default=(), parse=tasks_value,
                                    help="comma-separated tasks (default: all)")
    lengths: tuple[int, ...] = option("--lengths", default=(), parse=lengths_value,
                                      help="comma-separated lengths (default: all)")
    limit: int | None = option(
        "--limit", default=None, type=int, metavar="N",
        help="only the first N rows of each task and length (a calibration subset: e.g. 4)")
    tokenizer: str | None = option(
        "--tokenizer", default=None, metavar="PATH",
        help="the build's tokenizer, where it is not found as the build found it (a folder or "
             "registry name; checked against the manifest)")

    def __post_init__(self) -> None:
        check_flags(self)


def run_export_lm_eval(cfg: LmEvalExport) -> int:
    from ruler.eval.integrations.lm_eval_export import ALL_GROUP, export_lm_eval

    to = export_lm_eval(cfg.build, cfg.to, cfg.repo, cfg.revision, cfg.absolute)
    files = sum(1 for _ in to.glob("*.yaml"))
    print(f"wrote {to}: {files} task and group files and utils.py; e.g.\n"
          f"  lm_eval --include_path {to} --tasks {ALL_GROUP} ... (see {to / 'README.md'})")
    return 0


def run_export_kvpress(cfg: KvpressExport) -> int:
    from ruler.eval.integrations.kvpress_export import SPLIT, export_kvpress

    done = export_kvpress(cfg.source, cfg.out, cfg.revision, cfg.tokenizer_config,
                          cfg.tasks or None, cfg.lengths or None, cfg.limit, cfg.tokenizer)
    counts = ", ".join(f"{L}: {n}" for L, n in done.lengths.items())
    print(f"wrote {done.out}: config {done.config}, rows per length {counts}; load with\n"
          f"  load_dataset({str(done.out)!r}, data_dir=\"{next(iter(done.lengths))}\", "
          f"split=\"{SPLIT}\")  (see {done.out / 'README.md'})")
    bad = done.tokens.get("mismatched") or []
    if bad:
        print(f"note: kvpress tokenizes context and question apart; on {len(bad)} of "
              f"{done.tokens['checked']} rows checked that differs from ruler's count "
              f"(e.g. {bad[0]}): the card says so")
    for note in done.kvpress_scoring_notes():
        print(f"note: {note}")
    return 0


LM_EVAL = Exporter(
    name="lm-eval", help="an lm-evaluation-harness task folder (use with --include_path)",
    description=LM_EVAL_DESCRIPTION, options=LmEvalExport, run=run_export_lm_eval,
    epilog="`ruler release` uploads the same folder (tasks reading the released tag) into the "
           "dataset repo's lm_eval/.")

KVPRESS = Exporter(
    name="kvpress", help="a dataset folder in the schema of kvpress's `ruler` dataset "
                         "(load_dataset(DIR, data_dir=L, split='test'))",
    description=KVPRESS_DESCRIPTION, options=KvpressExport, run=run_export_kvpress)
