"""What the lm-evaluation-harness task folder is called, holds and how it runs: the names
and texts `ruler export lm-eval` writes and the dataset card shows. Kept below both (it imports
no `eval` module), so the card renders the same section whoever renders it."""

from __future__ import annotations

from ruler.builder.manifest import FileEntry, Manifest
from ruler.cards.body import bodies, whose, words
from ruler.catalog.variants import reserved_output_budget

#: The folder's name inside a released dataset repo (`ruler release` uploads it there).
EXPORT_DIR = "lm_eval"
#: The metric every task reports and every group averages.
METRIC = "score"
#: The group of every config in a folder.
ALL_GROUP = "ruler_all"


# --- names ---------------------------------------------------------------------------------------

def task_name(config: str, task: str, length: int) -> str:
    """`ruler_<config>_<task>_<L>`: prefixed so it never meets lm-eval's own `ruler` tasks."""
    return f"ruler_{config}_{task}_{length}"


def length_group(config: str, length: int) -> str:
    return f"ruler_{config}_{length}"


def config_group(config: str) -> str:
    return f"ruler_{config}"


# --- what runs, and how -------------------------------------------------------------------------

def reasoning_configs(manifest: Manifest) -> list[str]:
    """Configs with a reserved output budget (`ruler build --output-budget`): not exported.
    Their answer is the text after the model's reasoning, which lm-eval's generation tasks do
    not take apart before the metric; `ruler eval --mode reasoning` evaluates them."""
    return [c for c in manifest.configs()
            if reserved_output_budget(manifest.builds[c].variant) is not None]


def runnable_files(manifest: Manifest) -> dict[str, list[FileEntry]]:
    """config -> its files by length, then in upstream's task order: the configs with files
    lm-eval can run (not `reasoning_configs`)."""
    skip = set(reasoning_configs(manifest))
    by_config = {c: sorted(manifest.files_of(c), key=lambda f: f.max_seq_length)
                 for c in manifest.configs() if c not in skip}
    return {c: files for c, files in by_config.items() if files}


def run_command(config: str, length: int, prompt_mode: str | None, include_path: str,
                model: str = "<model>") -> str:
    """The lm_eval command for one config and length (`max_length` >= L: lm-eval left-truncates
    longer prompts, cutting the instruction and BOS)."""
    chat = " --apply_chat_template" if prompt_mode != "base" else ""
    return (f"lm_eval --model hf --model_args pretrained={model},max_length={length}{chat} \\\n"
            f"  --include_path {include_path} --tasks {length_group(config, length)} \\\n"
            f"  --log_samples --output_path results/")


def example_config(manifest: Manifest) -> tuple[str, int, str | None]:
    config = next(iter(runnable_files(manifest)))
    return config, manifest.lengths(config)[0], manifest.builds[config].prompt_mode


def reasoning_note(manifest: Manifest) -> str:
    """Which configs were left out, and why ("" when none was)."""
    skipped = reasoning_configs(manifest)
    if not skipped:
        return ""
    names = ", ".join(f"`{c}`" for c in skipped)
    return (f"\nNot exported: {names}, built for reasoning models (`--output-budget`): their "
            f"answer is the text after the model's reasoning, which these tasks would not take "
            f"apart before {whose(manifest)} metric. Evaluate them with `ruler eval --mode "
            f"reasoning`.\n")


def chat_note(manifest: Manifest) -> str:
    """When to pass `--apply_chat_template`: for the configs counted with a chat template."""
    modes = {c: manifest.builds[c].prompt_mode for c in runnable_files(manifest)}
    base = sorted(c for c, m in modes.items() if m == "base")
    chat = sorted(c for c in modes if c not in base)
    need = ("`--apply_chat_template` is required{}: the lengths count the chat template, and "
            "without it lm-eval sends a different prompt")
    skip = ("{} count{} base prompts (`input + answer_prefix`, with the tokenizer's BOS): run "
            "{} without `--apply_chat_template`")
    if not base:
        return need.format(" for this build")
    if not chat:
        return skip.format("this build", "s", "it")
    names = ", ".join(f"`{c}`" for c in chat)
    return (need.format(f" for config(s) {names}") + "; " +
            skip.format(", ".join(f"`{c}`" for c in base), "", "those"))


def card_section(manifest: Manifest, repo_id: str | None,
                 revision: str | None) -> str:
    """The card's "Use with lm-evaluation-harness" section (body, after its heading)."""
    if not manifest.files:
        return "Build some splits first; then `ruler export lm-eval OUT` writes the task folder."
    if not runnable_files(manifest):
        return reasoning_note(manifest).strip()
    config, length, mode = example_config(manifest)
    if repo_id and revision:
        fetch = (f"This repository's `{EXPORT_DIR}/` folder holds the tasks; they load the rows "
                 f"of revision `{revision}` from the Hub.\n\n```bash\n"
                 f"pip install \"lm_eval[hf]\"\n"
                 f"hf download {repo_id} --repo-type dataset --revision {revision} "
                 f"--include \"{EXPORT_DIR}/*\" --local-dir ruler-tasks\n"
                 f"{run_command(config, length, mode, f'ruler-tasks/{EXPORT_DIR}')}\n```")
        score = f"--data {repo_id} --revision {revision}"
    else:
        fetch = (f"Write the task folder with `ruler export lm-eval OUT` (tasks that read the "
                 f"local build; `--repo ORG/NAME --revision TAG` for a released one):\n\n"
                 f"```bash\nruler export lm-eval OUT            # writes OUT/{EXPORT_DIR}\n"
                 f"{run_command(config, length, mode, f'OUT/{EXPORT_DIR}')}\n```")
        score = "--data OUT"
    chat = chat_note(manifest)
    notes = [n for body in bodies(manifest) for n in body.lm_eval_notes(manifest)]
    reference = words(manifest).reference
    as_reference = f", as {reference} does" if reference else ""
    return (
        f"{fetch}\n\n"
        f"- Tasks `ruler_<config>_<task>_<L>`, groups `ruler_<config>_<L>` (all tasks at one "
        f"length), `ruler_<config>` (all lengths) and `{ALL_GROUP}`; the metric `{METRIC}` is "
        f"{whose(manifest)}, 0-100, and groups average tasks unweighted{as_reference}.\n"
        f"- {chat}.\n"
        f"- `max_length` (vLLM: `max_model_len`) must be at least L: lm-eval left-truncates "
        f"longer prompts, which cuts the instruction (and BOS).\n"
        f"- The tasks generate greedily up to each task's `tokens_to_generate`; with lm-eval's "
        f"`hf` model the prompts are the token ids `ruler eval` sends, and the completions "
        f"equal `ruler eval --backend hf`'s.\n"
        f"- `ruler score --predictions results/ {score}` reads lm-eval's samples files and "
        f"writes {whose(manifest)} report (the same scores)."
        + "".join(f"\n- {n}" for n in notes)
        + (f"\n- {reasoning_note(manifest).strip()}" if reasoning_configs(manifest) else ""))
