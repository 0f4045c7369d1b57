"""`--backend hf`: transformers `generate`, one prompt at a time, the reference in tests."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Container, Iterable, Iterator

from ruler.eval.backends.base import (
    BackendOptions,
    GenRequest,
    GenResult,
    context_limit,
    dtype_option,
    finished_result,
    missing_requirement_error,
    options_as,
    prompt_list,
)
from ruler.eval.backends.engine_env import addon_error
from ruler.eval.backends.registry import BackendSpec
from ruler.kernel.errors import RulerError

INSTALL_HINT = ("--backend hf needs PyTorch, which is not installed: pip install torch (pick the "
                "build for your machine at https://pytorch.org/get-started)")


@dataclass(frozen=True)
class HFOptions(BackendOptions):
    dtype: str = dtype_option()


def generation_result(key: Any, new: list[int], eos_ids: Container[int],
                      decode: Callable[..., str], skip_special_tokens: bool,
                      seconds: float) -> GenResult:
    """The tokens `generate` added after the prompt as this row's result. Generation ends at
    an end-of-sequence token ("stop") or at the budget ("length"): an empty text is a real
    answer either way (e.g. the model stopped at once). Same detokenization as vLLM: special
    tokens skipped unless asked for, the end-of-sequence token that stopped generation never
    part of the text."""
    stopped = bool(new) and new[-1] in eos_ids
    text = decode(new[:-1] if stopped else new, skip_special_tokens=skip_special_tokens)
    return finished_result(key, text, len(new), "stop" if stopped else "length", seconds)


class HFBackend:
    name = "hf"

    def __init__(self, opts: BackendOptions):
        opts = options_as(opts, HFOptions)
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            raise missing_requirement_error(INSTALL_HINT, e) from None

        dtype = {"auto": "auto", "float32": torch.float32, "bfloat16": torch.bfloat16,
                 "float16": torch.float16}.get(opts.dtype)
        if dtype is None:
            raise RulerError(f"--dtype {opts.dtype!r} is not one of auto, float32, bfloat16, "
                             f"float16")
        try:
            self.model = AutoModelForCausalLM.from_pretrained(opts.model, dtype=dtype)
            self.tokenizer = AutoTokenizer.from_pretrained(opts.model)
        except Exception as e:
            raise (addon_error(e, f"loading {opts.model!r} with transformers")
                   or RulerError(f"transformers could not load {opts.model!r}: "
                                 f"{type(e).__name__}: {e}")) from None
        self.model.eval()
        self.torch = torch
        limit = getattr(self.model.config, "max_position_embeddings", None)
        self.max_model_len = context_limit(
            opts.max_model_len, limit, f"cannot tell the context length of {opts.model!r}",
            f"the model's max_position_embeddings {limit}")

    def generate(self, requests: Iterable[GenRequest]) -> Iterator[GenResult]:
        torch = self.torch
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        for r in requests:
            start = time.perf_counter()
            ids = torch.tensor([prompt_list(r.prompt_ids)], dtype=torch.long)
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=r.max_tokens,
                    do_sample=False, temperature=None, top_p=None, top_k=None,
                    pad_token_id=self.tokenizer.pad_token_id or next(iter(eos_ids), 0))
            yield generation_result(r.key, out[0][ids.shape[1]:].tolist(), eos_ids,
                                    self.tokenizer.decode, r.skip_special_tokens,
                                    time.perf_counter() - start)

    def close(self) -> None:
        self.model = None


SPEC = BackendSpec(
    name="hf", factory=HFBackend, requirement="torch", install_hint=INSTALL_HINT,
    summary="transformers generate, one prompt at a time (a reference, slow)",
    options_type=HFOptions)
