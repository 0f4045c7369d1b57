"""One token-counting interface over HF `tokenizers`, tiktoken and SentencePiece.

The builder needs three things from a tokenizer: exact counts (in batch), the character
offset where each token starts (to locate gold needles), and the exact ids of a rendered
prompt. `prompt_ids` is the one function that defines what the model is given; the evaluator
calls the same function, so the stored `length` is what the model sees.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import logging
import sys
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from ruler.catalog.chat_template import ChatTemplate
from ruler.catalog.letter_junction import REVIEWED_PATTERNS, hf_has_letter_junctions
from ruler.catalog.manifest_records import TokenizerRecord
from ruler.kernel.errors import RulerError

#: chat: the chat template, assistant turn pre-filled with the answer prefix; base: input +
#: answer prefix with the tokenizer's special tokens; reasoning: the chat template with a
#: generation prompt and no prefix (a thinking model writes its reasoning, then the answer).
PROMPT_MODES = ("chat", "base", "reasoning")


@dataclass(frozen=True)
class TokenizerIdentity:
    """What a build records about the tokenizer it counted with.

    For a registry name this is the registry's pin (kind, files, chat template), whichever way
    the tokenizer was obtained: a name that another backend also loads (mistral-nemo from the
    mistral-common package) gives the same ids (tested) and so the same identity; `origin`
    alone says where it came from.
    """

    name: str
    kind: str  # hf | tiktoken | sentencepiece: the format of the (pinned) files
    origin: str  # where it came from: tokenizers-dir, cache, package:..., hub, tiktoken, folder
    repo: str | None = None
    revision: str | None = None
    files: dict[str, str] = field(default_factory=dict)  # file name -> sha256
    chat_template_sha256: str | None = None
    pinned: bool = False  # every file hash equals the registry's pin
    #: Other backends that load this same registry name (e.g. "tekken"): rows made through
    #: any of them are this identity's, so their packages' versions are part of it too.
    other_backends: tuple[str, ...] = ()

    @property
    def content_kinds(self) -> tuple[str, ...]:
        """The backends whose packages shape this tokenizer's rows (see
        `ruler.builder.packages.content_packages`)."""
        return (self.kind, *(k for k in self.other_backends if k != self.kind))

    def fingerprint(self) -> str:
        """Hash of everything that can change token counts (for cache keys)."""
        text = "|".join([self.kind, *(f"{k}={v}" for k, v in sorted(self.files.items())),
                         str(self.chat_template_sha256)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def as_manifest(self) -> TokenizerRecord:
        """The manifest's record of this tokenizer (a build entry's `tokenizer`)."""
        return TokenizerRecord(
            name=self.name, kind=self.kind, origin=self.origin, repo=self.repo,
            revision=self.revision, files=dict(sorted(self.files.items())),
            chat_template_sha256=self.chat_template_sha256, pinned=self.pinned)


class ChatTemplateError(RulerError, ValueError):
    """A chat template that cannot render a prompt (a ValueError, as other rendering refusals
    of `prompt_ids` are)."""


class Tokenizer(ABC):
    """A tokenizer as the builder and the evaluator use it."""

    identity: TokenizerIdentity
    #: How to load this tokenizer again in another process, `(function, args)`, set by
    #: `load_tokenizer`. A spawned worker is sent this recipe, never the loaded objects (which
    #: do not all pickle); a forked one inherits the loaded tokenizer and sends nothing.
    reload: tuple[Callable[..., "Tokenizer"], tuple] | None = None

    def __reduce__(self):
        if self.reload is None:
            raise TypeError(f"tokenizer {self.name!r} was not made by load_tokenizer and "
                            f"cannot be sent to another process")
        return self.reload

    @property
    def name(self) -> str:
        return self.identity.name

    @property
    def has_chat_template(self) -> bool:
        return False

    @abstractmethod
    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, no special tokens added (special-token text inside `text` is
        read as the backend reads it: a Hugging Face tokenizer matches its added tokens)."""

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode(t) for t in texts]

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [len(ids) for ids in self.encode_batch(texts)]

    @abstractmethod
    def token_starts(self, text: str) -> list[int]:
        """Character offset in `text` at which each token of `encode(text)` starts."""

    def token_index_at(self, text: str, char_offsets: Sequence[int]) -> list[int]:
        """For each character offset, the index of the token that contains it.

        A token often carries the preceding space (" One"), so a needle starting at "O" starts
        in the token that begins one character earlier. An offset at len(text) maps to the
        token count.
        """
        starts = self.token_starts(text)
        return [len(starts) if c >= len(text) else max(0, bisect.bisect_right(starts, c) - 1)
                for c in char_offsets]

    @property
    def letter_junctions(self) -> bool:
        """Whether text cut after a letter, before a non-ASCII punctuation mark or symbol,
        tokenizes as its parts do (catalog.letter_junction); only where it is read from the
        tokenizer's own definition."""
        return False

    def default_mode(self) -> str:
        return "chat" if self.has_chat_template else "base"

    def prompt_ids(self, input_text: str, answer_prefix: str, mode: str | None = None,
                   template_kwargs: Mapping[str, Any] | None = None) -> list[int]:
        """Exact ids the model is given for a row.

        chat: the tokenizer's chat template with the user turn `input` and the assistant turn
        pre-filled with `answer_prefix` (continued, no new generation prompt); with an empty
        `answer_prefix`, the user turn and the generation prompt (nothing to continue).
        base: `input + answer_prefix` with the special tokens the tokenizer adds (e.g. BOS).
        reasoning: the chat template with the user turn `input` and a generation prompt; no
        answer prefix (the model reasons first, so a pre-filled answer would cut that short).
        `template_kwargs` are extra variables for the chat template (e.g. enable_thinking).
        """
        mode = mode or self.default_mode()
        if mode in ("chat", "reasoning"):
            if not self.has_chat_template:
                raise self._no_chat_template()
            if mode == "reasoning":
                return self._reasoning_ids(input_text, template_kwargs or {})
            return self._chat_ids(input_text, answer_prefix, template_kwargs or {})
        if mode == "base":
            return self._base_ids(input_text + answer_prefix)
        raise ValueError(f"unknown prompt mode {mode!r}; expected one of {PROMPT_MODES}")

    def prompt_length(self, input_text: str, answer_prefix: str, mode: str | None = None,
                      template_kwargs: Mapping[str, Any] | None = None) -> int:
        return len(self.prompt_ids(input_text, answer_prefix, mode, template_kwargs))

    # The prompt as text, which servers that tokenize it themselves are sent (eval/render.py):
    # only a tokenizer with a chat template renders one (HFTokenizer).

    def render_chat(self, input_text: str, answer_prefix: str,
                    template_kwargs: Mapping[str, Any] | None = None) -> str:
        """Chat mode's prompt as text: the user turn `input_text`, the assistant turn
        pre-filled with `answer_prefix` (`prompt_ids` tokenizes it)."""
        raise self._no_chat_template()

    def render_reasoning(self, input_text: str,
                         template_kwargs: Mapping[str, Any] | None = None) -> str:
        """Reasoning mode's prompt as text: the user turn `input_text` and a generation
        prompt."""
        raise self._no_chat_template()

    def _no_chat_template(self) -> ValueError:
        return ValueError(f"tokenizer {self.name!r} has no chat template; use mode='base'")

    def _chat_ids(self, input_text: str, answer_prefix: str,
                  template_kwargs: Mapping[str, Any]) -> list[int]:
        raise NotImplementedError

    def _reasoning_ids(self, input_text: str, template_kwargs: Mapping[str, Any]) -> list[int]:
        raise NotImplementedError

    @abstractmethod
    def _base_ids(self, text: str) -> list[int]:
        ...


#: tokenizer_config.json classes that AutoTokenizer resolves to PreTrainedTokenizerFast itself.
GENERIC_FAST_CLASSES = ("PreTrainedTokenizerFast", "TokenizersBackend")


def load_hf(folder: Path):
    """AutoTokenizer's tokenizer for `folder`. When the folder names the generic fast class,
    that class is loaded directly: the same object, without importing AutoTokenizer's model
    registry (about 3 s of start-up)."""
    config = folder / "tokenizer_config.json"
    name = json.loads(config.read_text()).get("tokenizer_class") if config.is_file() else None
    transformers = _import_transformers()
    if name in GENERIC_FAST_CLASSES:
        return transformers.PreTrainedTokenizerFast.from_pretrained(str(folder))
    return transformers.AutoTokenizer.from_pretrained(str(folder))


class _NoTorchNotice(logging.Filter):
    """Drops the one record transformers logs when imported without torch ("PyTorch was not
    found. Models won't be available..."): tokenizers need no torch, and every build, verify
    or eval with a Hugging Face tokenizer printed it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("PyTorch was not found")


def _import_transformers():
    """`import transformers`, without its notice that torch is missing (only that record:
    its other warnings and every error still show)."""
    if "transformers" in sys.modules:
        return sys.modules["transformers"]
    logger = logging.getLogger("transformers")  # the logger of transformers/__init__.py
    notice = _NoTorchNotice()
    logger.addFilter(notice)
    try:
        import transformers
    finally:
        logger.removeFilter(notice)
    return transformers


class HFTokenizer(Tokenizer):
    """A Hugging Face tokenizer folder (`tokenizer.json` + `tokenizer_config.json`).

    Made from transformers' tokenizer of the folder (its `apply_chat_template` renders the
    prompts), or, with `direct`, from the `tokenizers` backend and the chat template alone:
    the registry does so where its pinned files make transformers' tokenizer the
    tokenizer.json as it is (`tokenizer_registry.direct_files`), and `chat_template`
    renders as transformers does, without importing it (seconds of every start-up).
    transformers' object is then loaded only when something asks for `hf`.
    """

    def __init__(self, folder: Path, identity: TokenizerIdentity, hf: Any = None,
                 direct: tuple[Any, ChatTemplate | None] | None = None,
                 hf_loader: Callable[[], Any] | None = None):
        # `hf`: the transformers tokenizer of `folder`, already loaded (the registry shares
        # one per pinned folder: it is only read, never configured, here). `direct`: the
        # `tokenizers.Tokenizer` of its tokenizer.json and its template, instead; `hf` is then
        # loaded on first use, by `hf_loader` where given (the registry's shared one).
        self.folder = Path(folder)
        self.identity = identity
        self._hf_loader = hf_loader
        if direct is not None:
            self._hf, (self.backend, self._renderer) = hf, direct
            self._template = self._renderer.source if self._renderer is not None else None
            return
        self._hf = hf if hf is not None else load_hf(self.folder)
        self._renderer = None
        self.backend = self._hf.backend_tokenizer
        template = getattr(self._hf, "chat_template", None)
        self._template = template if isinstance(template, str) else None

    @cached_property
    def letter_junctions(self) -> bool:
        return hf_has_letter_junctions(self.backend)

    @property
    def hf(self) -> Any:
        """transformers' tokenizer of the folder (loaded on first use when made `direct`)."""
        if self._hf is None:
            self._hf = self._hf_loader() if self._hf_loader is not None else load_hf(self.folder)
        return self._hf

    @property
    def has_chat_template(self) -> bool:
        return self._template is not None

    @property
    def chat_template(self) -> str | None:
        return self._template

    def _ids(self, texts: Sequence[str], special: bool = False) -> list[list[int]]:
        # encode_batch_fast: encode's ids without the character offsets, which cost a third
        # of the time (25-40 % here on 140K-token prompts); token_starts needs them.
        return [e.ids for e in self.backend.encode_batch_fast(list(texts),
                                                              add_special_tokens=special)]

    def encode(self, text: str) -> list[int]:
        return self._ids([text])[0]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return self._ids(texts)

    def _lengths(self, texts: Sequence[str], special: bool = False) -> list[int]:
        # an encoding's length without its ids as a Python list (8K ints a row at 8K)
        return [len(e) for e in self.backend.encode_batch_fast(list(texts),
                                                               add_special_tokens=special)]

    def count(self, text: str) -> int:
        return self._lengths([text])[0]

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return self._lengths(texts)

    def prompt_length(self, input_text: str, answer_prefix: str, mode: str | None = None,
                      template_kwargs: Mapping[str, Any] | None = None) -> int:
        """`len(prompt_ids(...))` without making the ids a list (the fitter's whole-prompt
        counts); modes and errors as `prompt_ids`."""
        mode = mode or self.default_mode()
        if mode == "base":
            return self._lengths([input_text + answer_prefix], special=True)[0]
        if mode == "chat" and self.has_chat_template:
            return self._lengths([self.render_chat(input_text, answer_prefix,
                                                   template_kwargs or {})])[0]
        return super().prompt_length(input_text, answer_prefix, mode, template_kwargs)

    def token_starts(self, text: str) -> list[int]:
        return [start for start, _ in self.backend.encode(text, add_special_tokens=False).offsets]

    def render_chat(self, input_text: str, answer_prefix: str,
                    template_kwargs: Mapping[str, Any] | None = None) -> str:
        if not answer_prefix:
            # Nothing to pre-fill (no answer prefix): the assistant turn is opened, as a server
            # opens it. Continuing an empty assistant message instead renders whatever the
            # template writes around an empty turn (llama-3.1 drops the "\n\n" after its
            # header, Gemma the "\n"), which no server sends.
            return self.render_reasoning(input_text, template_kwargs)
        messages = [{"role": "user", "content": input_text},
                    {"role": "assistant", "content": answer_prefix}]
        with self._template_errors("a user turn, then the assistant turn pre-filled with the "
                                   "answer prefix"):
            if self._renderer is not None:
                return self._renderer.render(messages, add_generation_prompt=False,
                                             continue_final_message=True,
                                             template_kwargs=template_kwargs)
            return self.hf.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=False,
                continue_final_message=True, **(template_kwargs or {}))

    def render_reasoning(self, input_text: str,
                         template_kwargs: Mapping[str, Any] | None = None) -> str:
        messages = [{"role": "user", "content": input_text}]
        with self._template_errors("a user turn and a generation prompt"):
            if self._renderer is not None:
                return self._renderer.render(messages, add_generation_prompt=True,
                                             template_kwargs=template_kwargs)
            return self.hf.apply_chat_template(messages, tokenize=False,
                                               add_generation_prompt=True,
                                               **(template_kwargs or {}))

    @contextmanager
    def _template_errors(self, what: str) -> Iterator[None]:
        """A template that raises (its own `raise_exception`, a syntax error, a turn it drops,
        which transformers reports as ValueError) is the user's tokenizer, not a bug here:
        one line naming the tokenizer and the error's first line."""
        import jinja2

        try:
            yield
        except (jinja2.TemplateError, ValueError, TypeError, LookupError) as e:
            first = (str(e).strip().splitlines() or [""])[0]
            raise ChatTemplateError(
                f"the chat template of tokenizer {self.name!r} cannot render RULER's prompt "
                f"({what}): {type(e).__name__}: {first}. Fix the template (chat_template in "
                f"tokenizer_config.json, or chat_template.jinja) in {self.folder}") from None

    def _chat_ids(self, input_text: str, answer_prefix: str,
                  template_kwargs: Mapping[str, Any]) -> list[int]:
        # The rendered template already holds BOS etc.; adding special tokens would double them.
        return self.encode(self.render_chat(input_text, answer_prefix, template_kwargs))

    def _reasoning_ids(self, input_text: str, template_kwargs: Mapping[str, Any]) -> list[int]:
        return self.encode(self.render_reasoning(input_text, template_kwargs))

    def _base_ids(self, text: str) -> list[int]:
        return self._ids([text], special=True)[0]


class TiktokenTokenizer(Tokenizer):
    """An OpenAI tiktoken encoding (cl100k_base, o200k_base): no BOS, no chat template."""

    def __init__(self, encoding: Any, identity: TokenizerIdentity):
        self.enc = encoding
        self.identity = identity

    @property
    def letter_junctions(self) -> bool:
        return self.enc._pat_str in REVIEWED_PATTERNS

    def encode(self, text: str) -> list[int]:
        return self.enc.encode_ordinary(text)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return self.enc.encode_ordinary_batch(list(texts), num_threads=1)

    def token_starts(self, text: str) -> list[int]:
        return self.enc.decode_with_offsets(self.encode(text))[1]

    def _base_ids(self, text: str) -> list[int]:
        return self.encode(text)


class SentencePieceTokenizer(Tokenizer):
    """A SentencePiece model (e.g. Llama 2's `tokenizer.model`): BOS added, no chat template."""

    def __init__(self, model_file: Path, identity: TokenizerIdentity, add_bos: bool = True):
        import sentencepiece as spm

        self.sp = spm.SentencePieceProcessor(model_file=str(model_file))
        self.add_bos = add_bos
        self.identity = identity

    def encode(self, text: str) -> list[int]:
        return self.sp.encode(text)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return self.sp.encode(list(texts))

    def token_starts(self, text: str) -> list[int]:
        proto = self.sp.encode(text, return_type="proto")
        # SentencePiece reports byte offsets into the UTF-8 input; map them to characters.
        byte_to_char = [i for i, ch in enumerate(text) for _ in range(len(ch.encode("utf-8")))]
        byte_to_char.append(len(text))
        return [byte_to_char[min(p.begin, len(byte_to_char) - 1)] for p in proto.pieces]

    def _base_ids(self, text: str) -> list[int]:
        ids = self.sp.encode(text)
        return [self.sp.bos_id(), *ids] if self.add_bos else ids
