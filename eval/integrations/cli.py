"""`ruler export lm-eval | kvpress`: the two exporters (`ruler.eval.exporters`), argparse wiring
only (the work is in `lm_eval_export` and `kvpress_export`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ruler.eval.exporters import Exporter
from ruler.eval.integrations.export_folder import RECORD_NAME

#: Both exports' rule for a folder that exists.
REPLACES = (f"An earlier export there is replaced, only while it holds nothing but the files "
            f"it wrote (listed in its {RECORD_NAME}); a folder holding anything else is "
            f"refused, naming it")


LM_EVAL_DESCRIPTION = (
    "Write an lm-evaluation-harness task folder for the build BUILD: one task per "
    "(tokenizer config,\ntask, length), named ruler_<config>_<task>_<L>, with "
    "RULER's prompt fields, greedy\ndecoding up to the task's tokens_to_generate "
    "and RULER's metric (0-100); groups\nruler_<config>_<L>, ruler_<config> and "
    "ruler_all. Then:\n\n  lm_eval --model hf --model_args "
    "pretrained=<model>,max_length=<L> --apply_chat_template \\\n"
    "    --include_path BUILD/lm_eval --tasks ruler_<config>_<L> --log_samples "
    "--output_path results/\n  ruler score --predictions results/ --data BUILD\n\n"
    "--apply_chat_template is for builds counted with a chat template (the "
    "default); max_length\nmust be >= L, or lm-eval left-truncates the prompt.")


def lm_eval_arguments(lm: argparse.ArgumentParser) -> None:
    lm.add_argument("build", type=Path, metavar="BUILD",
                    help="the build folder (with manifest.json)")
    lm.add_argument("--repo", default=None, metavar="ORG/NAME",
                    help="the tasks load this Hub dataset (with --revision) instead of BUILD")
    lm.add_argument("--revision", default=None, metavar="TAG",
                    help="the Hub revision (release tag or commit) the tasks load")
    lm.add_argument("--out", "--to", dest="to", type=Path, default=None, metavar="DIR",
                    help=f"the task folder to write (default: BUILD/lm_eval; --to: the same, the "
                         f"older spelling). {REPLACES}")
    lm.add_argument("--absolute", action="store_true",
                    help="name the build folder by its absolute path (the task folder can then "
                         "move alone); by default it is named relative to the task folder, so "
                         "the two can move together")


KVPRESS_DESCRIPTION = (
    "Write one tokenizer config of SOURCE (a build folder, or a Hub dataset "
    "ORG/NAME at --revision)\nas a dataset folder in the schema of kvpress's "
    "RULER dataset: one data_dir per length, split\ntest, columns context, "
    "question, answer_prefix, answer, task, max_new_tokens (and the\nrow's "
    "ruler key: tokenizer, max_seq_length, index). answer_prefix is rendered so "
    "that\nkvpress's prompt equals ruler's. Then:\n\n"
    "  load_dataset(DIR, data_dir=\"4096\", split=\"test\")   # as kvpress "
    "loads RULER\n\nThe folder's README.md says which build, tokenizer and "
    "revision it came from, and how\nto run kvpress's pipeline and score its "
    "predictions with `ruler score`.")


def kvpress_arguments(kv: argparse.ArgumentParser) -> None:
    kv.add_argument("source", metavar="SOURCE", help="build folder OUT, or a Hub dataset ORG/NAME")
    kv.add_argument("--out", "--to", dest="out", type=Path, required=True, metavar="DIR",
                    help=f"the folder to write (--to: the same; both exports take either "
                         f"spelling). {REPLACES}")
    kv.add_argument("--revision", default=None, help="Hub dataset revision (tag or commit)")
    kv.add_argument("--tokenizer-config", default=None, metavar="CONFIG",
                    help="the config to export (default: the dataset's only one)")
    kv.add_argument("--tasks", default=None, help="comma-separated tasks (default: all)")
    kv.add_argument("--lengths", default=None, help="comma-separated lengths (default: all)")
    kv.add_argument("--limit", type=int, default=None, metavar="N",
                    help="only the first N rows of each task and length (a calibration "
                         "subset: e.g. 4)")
    kv.add_argument("--tokenizer", default=None, metavar="PATH",
                    help="the build's tokenizer, where it is not found as the build found it "
                         "(a folder or registry name; checked against the manifest)")


def run_export_lm_eval(args: argparse.Namespace) -> int:
    from ruler.eval.integrations.lm_eval_export import ALL_GROUP, export_lm_eval

    to = export_lm_eval(args.build, args.to, args.repo, args.revision, args.absolute)
    files = sum(1 for _ in to.glob("*.yaml"))
    print(f"wrote {to}: {files} task and group files and utils.py; e.g.\n"
          f"  lm_eval --include_path {to} --tasks {ALL_GROUP} ... (see {to / 'README.md'})")
    return 0


def run_export_kvpress(args: argparse.Namespace) -> int:
    from ruler.builder.cli_build import parse_lengths, parse_tasks
    from ruler.eval.integrations.kvpress_export import SPLIT, export_kvpress

    done = export_kvpress(args.source, args.out, args.revision, args.tokenizer_config,
                          parse_tasks(args.tasks) if args.tasks else None,
                          parse_lengths(args.lengths) if args.lengths else None,
                          args.limit, args.tokenizer)
    counts = ", ".join(f"{L}: {n}" for L, n in done.lengths.items())
    print(f"wrote {done.out}: config {done.config}, rows per length {counts}; load with\n"
          f"  load_dataset({str(done.out)!r}, data_dir=\"{next(iter(done.lengths))}\", "
          f"split=\"{SPLIT}\")  (see {done.out / 'README.md'})")
    bad = done.tokens.get("mismatched") or []
    if bad:
        print(f"note: kvpress tokenizes context and question apart; on {len(bad)} of "
              f"{done.tokens['checked']} rows checked that differs from ruler's count "
              f"(e.g. {bad[0]}): the card says so")
    return 0


LM_EVAL = Exporter(
    name="lm-eval", help="an lm-evaluation-harness task folder (use with --include_path)",
    description=LM_EVAL_DESCRIPTION, add_arguments=lm_eval_arguments, run=run_export_lm_eval,
    epilog="`ruler release` uploads the same folder (tasks reading the released tag) into the "
           "dataset repo's lm_eval/.")

KVPRESS = Exporter(
    name="kvpress", help="a dataset folder in kvpress's RULER schema (load_dataset(DIR, "
                         "data_dir=L, split='test'))",
    description=KVPRESS_DESCRIPTION, add_arguments=kvpress_arguments, run=run_export_kvpress)
