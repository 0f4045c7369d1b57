"""A tiny random Llama saved with a real tokenizer folder: a smoke test of an eval setup.

The tests and benchmarks run real engines (vLLM on CPU, transformers, lm-eval) on it, and a
user can check an installation the same way without downloading a model:

    python -m ruler.eval.tiny_model TOKENIZER OUT_DIR    # needs torch and transformers

TOKENIZER is a Hugging Face tokenizer folder or a registry name with one (e.g. qwen2.5, resolved
as `ruler build --tokenizer` resolves it: $RULER_TOKENIZERS, the cache, the Hub).

Its predictions are noise; what it shows is that prompts render, fit and generate. Why this
shape (vLLM's CPU notes): head_dim must be >= 32 for vLLM's CPU
attention kernel (128 / 4 heads = 32); float32 so vLLM and transformers pick the same argmax
(bfloat16 logits of a random model tie); `vocab_size = len(tokenizer)` so every id the real
tokenizer produces is valid; tied embeddings keep the folder small. The chat template and the
token counts come from the real tokenizer files copied next to the weights.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def build_tiny_llama(tokenizer_dir: Path, out: Path, max_position_embeddings: int = 4096,
                     seed: int = 0) -> Path:
    """Write a random 2-layer Llama (float32) plus the tokenizer files of `tokenizer_dir`."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    out = Path(out)
    if (out / "config.json").is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    eos = tok.convert_tokens_to_ids(tok.eos_token)
    config = LlamaConfig(
        hidden_size=128, num_attention_heads=4, num_key_value_heads=2, intermediate_size=256,
        num_hidden_layers=2, max_position_embeddings=max_position_embeddings,
        vocab_size=len(tok), tie_word_embeddings=True, bos_token_id=tok.bos_token_id,
        eos_token_id=eos, pad_token_id=tok.pad_token_id, torch_dtype="float32",
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.float32)
    # Random init with std 0.02 gives near-flat logits; a larger spread makes argmax margins
    # wide, so float32 rounding differences between engines cannot flip a greedy choice.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.2)
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(str(out), safe_serialization=True)
    for name in TOKENIZER_FILES:
        if (Path(tokenizer_dir) / name).is_file():
            shutil.copyfile(Path(tokenizer_dir) / name, out / name)
    (out / "TINY_MODEL.json").write_text(json.dumps({"seed": seed, "from": str(tokenizer_dir)}))
    return out


def tokenizer_folder(spec: str) -> Path:
    """A Hugging Face tokenizer folder: `spec` itself, or the files of registry name `spec`."""
    from ruler.builder.tokenizer_registry import load_tokenizer, registry
    from ruler.kernel.errors import RulerError

    if spec not in registry():
        return Path(spec)
    folder = getattr(load_tokenizer(spec), "folder", None)
    if folder is None:
        raise RulerError(f"tokenizer {spec!r} is not a Hugging Face tokenizer folder (it is "
                         f"{registry()[spec].kind}): the tiny model needs one, e.g. qwen2.5")
    return Path(folder)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from ruler.eval.backends.engine_env import addon_error
    from ruler.kernel.errors import RulerError

    p = argparse.ArgumentParser(prog="python -m ruler.eval.tiny_model",
                                description="Write a tiny random Llama (float32) with a real "
                                            "tokenizer folder's files, for smoke tests.")
    p.add_argument("tokenizer", metavar="TOKENIZER",
                   help="a Hugging Face tokenizer folder, or a registry name with one "
                        "(e.g. qwen2.5)")
    p.add_argument("out", type=Path, help="where to write the model folder")
    p.add_argument("--max-position-embeddings", type=int, default=4096)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    try:
        out = build_tiny_llama(tokenizer_folder(args.tokenizer), args.out,
                               args.max_position_embeddings, args.seed)
    except RulerError as e:
        p.exit(2, f"{p.prog}: error: {e}\n")
    except Exception as e:  # e.g. a torch add-on built for another torch
        error = addon_error(e, "loading transformers' Llama")
        if error is None:
            raise
        p.exit(2, f"{p.prog}: error: {error}\n")
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
