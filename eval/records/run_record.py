"""run.json: a `ruler eval` results folder's record of its run, as typed records.

`ruler eval` writes it (`eval.runner`) before its first request and again when it ends;
resuming reads it to check the folder holds the same model, settings and rows; `ruler score`
and `ruler report` read the files it covers and its settings, always through `RunRecord`
(`eval.records.results_schema.read_run` checks a file's shape first). Beside it, the parts
scores.json shares: the dataset the rows came from, how the prompts were served, the server's
prompt-count check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from ruler.kernel.json_record import Decode, FrozenRecord, Record, record_list


@dataclass(frozen=True, kw_only=True)
class DatasetRecord(FrozenRecord):
    """The rows a run or its scores cover: the dataset (a build folder or Hub id), the commit
    its files came from (None: a local folder), and each split file's content hash
    ("task/L" -> content_sha256). run.json names the config here too; scores.json beside."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"config"})

    spec: str | None = None
    revision: str | None = None
    config: str | None = None
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ServingRecord(FrozenRecord):
    """How a server was sent the rows (a backend's `prepare`, e.g. `--backend openai`): where,
    through which API, where the answer prefix went, whether its prompt counts were checked,
    its context and concurrency and where they came from, and the model it answered as."""

    backend: str | None = None
    base_url: str | None = None
    endpoint: str | None = None
    api: str | None = None
    prompt: str | None = None  # how the prompt is sent, in words
    answer_prefix: str | None = None
    continue_final_message: Any = None  # the chat fields that continue the prefix turn
    server_repeats_prefix: bool | None = None
    bos_in_text: bool | None = None
    prompt_tokens_checked: bool | None = None
    probe_mismatch: str | None = None
    probe_compared_whole: str | None = None
    probe_note: str | None = None
    allow_prompt_mismatch: bool | None = None
    server: str | None = None
    max_model_len: int | None = None
    max_model_len_source: str | None = None
    concurrency: int | None = None
    concurrency_source: str | None = None
    model: str | None = None
    server_model: str | None = None


@dataclass(kw_only=True)
class PromptCheck(Record):
    """Answered rows by what the engine said of their prompt: counted equal to the build's
    (`checked` less `differ`), counted otherwise (`differ`: flagged `prompt_mismatch`), not
    checked (`unchecked`: `prompt_unchecked` says why); and, by name, the rows a server
    answered as another model than asked (`server_model`). scores.json's `prompt_check`
    (older ones have no `unchecked`); its text is `eval.records.serving`'s."""

    checked: int = 0
    unchecked: int = 0
    differ: int = 0
    answered_as: dict[str, int] = field(default_factory=dict)

    def add(self, record: Mapping[str, Any]) -> None:
        """Count one prediction record (a row that was not answered counts nowhere)."""
        if record.get("status", "ok") != "ok":
            return
        self.checked += record.get("server_prompt_tokens") is not None
        self.unchecked += bool(record.get("prompt_unchecked"))
        self.differ += bool(record.get("prompt_mismatch"))
        model = record.get("server_model")
        if model:
            self.answered_as[str(model)] = self.answered_as.get(str(model), 0) + 1

    @property
    def counted(self) -> bool:
        """Whether any row was counted, unchecked or named another model (engines that
        report nothing have nothing to record)."""
        return bool(self.checked or self.unchecked or self.differ or self.answered_as)

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        if not self.answered_as:
            data.pop("answered_as", None)
        return data

    def counts_text(self, bold: bool = False) -> str:
        """"58 of 60 answered row(s) checked, all equal to the build's; 2 not checked (...)"."""
        mark = "**" if bold else ""
        text = f"{self.checked} of {self.checked + self.unchecked} answered row(s) checked"
        if self.differ:
            text += (f", {mark}{self.differ} differ from the build's prompt{mark} (flagged "
                     f"`prompt_mismatch` in the predictions: the model saw another prompt)")
        elif self.checked:
            text += ", all equal to the build's"
        if self.unchecked:
            text += (f"; {self.unchecked} not checked (the server reported no "
                     f"usage.prompt_tokens, or not as a number: `prompt_unchecked` in the "
                     f"predictions says which)")
        return text

    def models_text(self) -> str:
        """"answers that name another model than asked: 'm' (8 rows)"; "" when none do."""
        if not self.answered_as:
            return ""
        return "answers that name another model than asked: " + ", ".join(
            f"{name!r} ({n} row{'s' if n != 1 else ''})"
            for name, n in sorted(self.answered_as.items(), key=lambda kv: -kv[1]))

    def console_lines(self) -> list[str]:
        """What a run says of its own rows, after the rows."""
        lines = []
        if self.checked or self.unchecked:
            lines.append(f"server prompt counts: {self.counts_text()}")
        if self.answered_as:
            lines.append(self.models_text())
        return lines


@dataclass(frozen=True, kw_only=True)
class MaxModelLen(FrozenRecord):
    """The context limit of the folder's last engine, the one asked for (None: the engine's
    own) and the backend: a later run needs them to know whether skipped rows could fit."""

    used: int | None = None
    requested: int | None = None
    backend: str | None = None


@dataclass(frozen=True, kw_only=True)
class PromptTemplate(FrozenRecord):
    """The prompt mode and the chat template that rendered the prompts beside the build's
    (sha256; None where a tokenizer has none), the tokenizer that rendered them (its identity
    fingerprint, `TokenizerIdentity.fingerprint`: files and chat template; and its name as
    given), and the decoding: the report's health, and part of the run's identity (a resume
    rendering with another tokenizer or template is refused)."""

    mode: str | None = None
    sha256: str | None = None
    build_sha256: str | None = None
    decoding: str | None = None
    tokenizer: str | None = None
    tokenizer_name: str | None = None


@dataclass(frozen=True, kw_only=True)
class ReasoningSetting(FrozenRecord):
    """Reasoning mode: how the answer is cut from the output (a vLLM parser, else the marker
    that ends the reasoning)."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"parser", "end_marker"})

    parser: str | None = None
    end_marker: str | None = None


@dataclass(frozen=True, kw_only=True)
class RunRecord(FrozenRecord):
    """run.json (module docstring). The settings every prediction of the folder shares
    (`settings`) are checked when a run resumes; the backends, the context limit and the
    serving records accumulate over the folder's runs."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({
        "backends", "max_model_len", "serving", "prompt_template", "last_run",
        "prompt_delivery"})
    DECODE: ClassVar[Mapping[str, Decode]] = {
        "dataset": DatasetRecord.from_json, "reasoning": ReasoningSetting.from_json,
        "max_model_len": MaxModelLen.from_json, "prompt_template": PromptTemplate.from_json,
        "serving": record_list(ServingRecord.from_json)}
    #: The fields a resumed run must share with the folder's (besides model and rows),
    #: checked before the engine starts. The rest of the run's identity is checked as soon as
    #: it is known: the tokenizer and chat template that render the prompts
    #: (`prompt_template`, once the tokenizer is loaded) and how the prompts reach the model
    #: (`prompt_delivery`, once the engine has settled it). `eval.runner` refuses a resume
    #: that changes any of them, naming it.
    SETTINGS: ClassVar[tuple[str, ...]] = (
        "mode", "limit", "chat_template_kwargs", "reasoning", "max_tokens")

    dataset: DatasetRecord
    model: str
    backend: str | None = None
    backends: list[str] | None = None
    mode: str | None = None
    limit: int | None = None
    # extra chat template variables (`--chat-template-kwargs`): the user's JSON, given to the
    # template as it is
    chat_template_kwargs: dict[str, Any] | None = None
    reasoning: ReasoningSetting | None = None
    max_tokens: int | None = None
    # How the rendered prompts reached the model (`eval.records.serving.prompt_delivery`):
    # "token ids" (vLLM, transformers, a server's completions-ids), "text", or chat messages
    # with the answer prefix where it went. None: not recorded (older folders).
    prompt_delivery: str | None = None
    max_model_len: MaxModelLen | None = None
    serving: list[ServingRecord] | None = None
    prompt_template: PromptTemplate | None = None
    # The last run's outcome (`runner.EvalOutcome`), for people: no code reads it back.
    last_run: dict[str, Any] | None = None

    @property
    def config(self) -> str:
        """The dataset config the folder holds (run.json always names it)."""
        return str(self.dataset.config)
