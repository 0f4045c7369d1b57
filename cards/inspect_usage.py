"""What the Inspect task `ruler` is called, takes and does, for the task and the dataset card.

Kept apart from `inspect_task` (which imports inspect_ai) so the card renders without Inspect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ruler.cards.body import whose, words

if TYPE_CHECKING:
    from ruler.builder.manifest import Manifest

#: `inspect eval <TASK_NAME>`: the entry point `inspect_ai: ruler = ruler.eval.inspect`.
TASK_NAME = "ruler/ruler"
#: Python import of the same task.
TASK_IMPORT = "ruler.eval.inspect:ruler"
#: Inspect providers that continue a final assistant message (Inspect renders it with
#: `continue_final_message`); others would answer it anew, so the prefix is not sent there
#: unless `-T prefill=true`. mockllm: Inspect's offline test double.
PREFILL_PROVIDERS = ("vllm", "sglang", "mockllm")
#: Greedy decoding, per provider. Temperature 0 is greedy on the OpenAI-style, vLLM and SGLang
#: providers. Inspect's transformers providers (`hf`, `nnterp`) sample (`do_sample=True`) and
#: transformers refuses temperature 0 when sampling; keeping only the most likely token
#: (top_k 1) makes their sampling the argmax, whatever the temperature.
GREEDY_BY_PROVIDER: dict[str, dict[str, Any]] = {
    "hf": {"top_k": 1},
    "nnterp": {"top_k": 1},
}
GREEDY_DEFAULT: dict[str, Any] = {"temperature": 0.0}


def greedy_settings(provider: str) -> dict[str, Any]:
    """The GenerateConfig fields that make `provider` decode greedily."""
    return dict(GREEDY_BY_PROVIDER.get(provider, GREEDY_DEFAULT))


#: The metadata key the metrics group by (`<task>/<L>`), and the label of the cells' mean.
CELL_KEY = "cell"
MEAN_LABEL = "mean"
#: The task parameters (`-T name=value`), with what each does.
PARAMETERS = (
    ("data", "build folder or Hub dataset ORG/NAME"),
    ("revision", "Hub revision, a release tag or commit"),
    ("tokenizer_config", "the config built for the model's tokenizer, default the only one"),
    ("tasks", "comma-separated tasks, default all"),
    ("lengths", "comma-separated lengths such as 4096,8192, default all (Inspect holds the "
                "selected rows in memory: take long lengths one at a time)"),
    ("limit", "first N samples of each task and length"),
    ("prefill", "pre-fill the assistant turn with answer_prefix, default true for "
                + ", ".join(p for p in PREFILL_PROVIDERS if p != "mockllm")),
)


def command(data: str, revision: str | None, config: str, length: int,
            model: str = "vllm/<model>") -> str:
    rev = f" -T revision={revision}" if revision else ""
    return (f"inspect eval {TASK_NAME} --model {model} \\\n"
            f"  -T data={data}{rev} -T tokenizer_config={config} -T lengths={length}")


def card_section(manifest: Manifest, repo_id: str | None, revision: str | None) -> str:
    """The card's "Use with Inspect" section (body, after its heading)."""
    configs = [c for c in manifest.configs() if manifest.files_of(c)]
    if not configs:
        return "Build some splits first."
    config = configs[0]
    length = manifest.lengths(config)[0]
    data = repo_id or "OUT"
    rev = revision if repo_id else None
    score = f"--data {data}" + (f" --revision {rev}" if rev else "")
    params = "; ".join(f"`{name}`: {what}" for name, what in PARAMETERS)
    prefill = ", ".join(p for p in PREFILL_PROVIDERS if p != "mockllm")
    reference = words(manifest).reference or "the build"
    return (
        f"Installing ruler-bench registers the [Inspect](https://inspect.aisi.org.uk/) task "
        f"`{TASK_NAME}` (in Python: `{TASK_IMPORT}`):\n\n```bash\n"
        f"pip install inspect-ai   # next to ruler-bench\n"
        f"{command(data, rev, config, length)}\n"
        f"ruler score --predictions logs/ {score}   # {whose(manifest)} report from the "
        f"Inspect log(s)\n"
        f"```\n\n"
        f"- Parameters: {params}.\n"
        f"- The user turn is `input`; the assistant turn is pre-filled with `answer_prefix` on "
        f"providers that continue a final assistant message ({prefill}); elsewhere pass "
        f"`-T prefill=true` if the provider supports prefill, else the model answers without "
        f"the prefix (a different prompt from {reference}'s).\n"
        f"- Greedy decoding of at most the row's `tokens_to_generate` tokens (temperature 0; "
        f"top_k 1 on {', '.join(f'`{p}`' for p in GREEDY_BY_PROVIDER)}, Inspect's transformers "
        f"providers, which sample and refuse temperature 0); the scorer applies "
        f"the row's `metric` and reports {whose(manifest)} score (0-100) per `<task>/<L>` and "
        f"their `{MEAN_LABEL}`.\n"
        f"- The provider renders the model's own chat template, so prompts match the build's "
        f"token counts when that is the template the config was built with.")
