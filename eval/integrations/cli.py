"""`ruler export lm-eval`: argparse wiring only (the work is in `lm_eval_export`)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export", help="write task files for other evaluation frameworks (lm-eval)",
        description="Write a build's tasks in another framework's format.")
    targets = p.add_subparsers(dest="target", metavar="FRAMEWORK")
    targets.required = True
    lm = targets.add_parser(
        "lm-eval", help="an lm-evaluation-harness task folder (use with --include_path)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Write an lm-evaluation-harness task folder for the build OUT: one task per "
                    "(tokenizer config,\ntask, length), named ruler_<config>_<task>_<L>, with "
                    "RULER's prompt fields, greedy\ndecoding up to the task's tokens_to_generate "
                    "and RULER's metric (0-100); groups\nruler_<config>_<L>, ruler_<config> and "
                    "ruler_all. Then:\n\n  lm_eval --model hf --model_args "
                    "pretrained=<model>,max_length=<L> --apply_chat_template \\\n"
                    "    --include_path OUT/lm_eval --tasks ruler_<config>_<L> --log_samples "
                    "--output_path results/\n  ruler score --predictions results/ --data OUT\n\n"
                    "--apply_chat_template is for builds counted with a chat template (the "
                    "default); max_length\nmust be >= L, or lm-eval left-truncates the prompt.",
        epilog="`ruler release` uploads the same folder (tasks reading the released tag) into "
               "the dataset repo's lm_eval/.")
    lm.add_argument("out", type=Path, metavar="OUT", help="the build folder (with manifest.json)")
    lm.add_argument("--repo", default=None, metavar="ORG/NAME",
                    help="the tasks load this Hub dataset (with --revision) instead of OUT")
    lm.add_argument("--revision", default=None, metavar="TAG",
                    help="the Hub revision (release tag or commit) the tasks load")
    lm.add_argument("--to", type=Path, default=None, metavar="DIR",
                    help="the task folder to write (default: OUT/lm_eval); an earlier export "
                         "there is replaced")
    lm.add_argument("--absolute", action="store_true",
                    help="name the build folder by its absolute path (the task folder can then "
                         "move alone); by default it is named relative to the task folder, so "
                         "the two can move together")
    lm.set_defaults(func=run_export_lm_eval)


def run_export_lm_eval(args: argparse.Namespace) -> int:
    from ruler.eval.integrations.lm_eval_export import ALL_GROUP, export_lm_eval

    to = export_lm_eval(args.out, args.to, args.repo, args.revision, args.absolute)
    files = sum(1 for _ in to.glob("*.yaml"))
    print(f"wrote {to}: {files} task and group files and utils.py; e.g.\n"
          f"  lm_eval --include_path {to} --tasks {ALL_GROUP} ... (see {to / 'README.md'})")
    return 0
