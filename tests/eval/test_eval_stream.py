"""The prompt stream: every pending row rendered exactly, in order, a bounded window ahead;
and `ruler eval` without an inference stack fails in one line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers.builds import build, rows
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.commands.main import main
from ruler.eval import stream as stream_mod
from ruler.eval.records.dataset import open_dataset
from ruler.eval.render import Renderer
from ruler.eval.stream import PromptStream
from ruler.kernel.errors import RulerError

CONFIG = "qwen2.5"
TASKS = ("niah_single_1", "vt")
LENGTHS = (1024, 2048)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("data")
    build(out, CONFIG, TASKS, LENGTHS, samples=4, workers=1)
    return out


def _expected(data: Path, tok, limit=None, done=()):
    out = []
    for L in LENGTHS:  # files come shortest length first, tasks in catalog order
        for t in TASKS:
            for r in rows(data, CONFIG, t, L)[:limit]:
                key = (CONFIG, t, L, r["index"])
                if key not in done:
                    out.append((key, tok.prompt_ids(r["input"], r["answer_prefix"], "chat"),
                                r["tokens_to_generate"], r["length"]))
    return out


@pytest.mark.build
@pytest.mark.subprocess
@pytest.mark.parametrize("workers", [0, 2])
def test_stream_yields_every_pending_row_rendered_exactly_in_order(data, workers):
    tok = load_tokenizer(CONFIG)
    ds = open_dataset(str(data))
    files = ds.files(CONFIG)
    done = {(CONFIG, "vt", 1024, 1), (CONFIG, "niah_single_1", 2048, 0)}
    with PromptStream(ds, files, Renderer(tok, "chat"), done=done, limit=3,
                      workers=workers) as stream:
        assert stream.pending_rows() == 2 * 2 * 3 - 2
        got = [(r.key, list(r.prompt_ids), r.tokens_to_generate, r.length) for r in stream]
        first = next(iter(PromptStream(ds, files, Renderer(tok, "chat"), workers=0)))
    assert got == _expected(data, tok, limit=3, done=done)
    assert first.prompt_ids.itemsize == 4  # compact: 4 bytes per token


@pytest.mark.build
@pytest.mark.subprocess
def test_stream_holds_a_bounded_window(data, monkeypatch):
    """With a small window, the rendered-but-unconsumed tokens stay within one chunk of it."""
    monkeypatch.setattr(stream_mod, "CHUNK_TOKENS", 4096)  # 4 rows at 1K, 2 at 2K per chunk
    tok = load_tokenizer(CONFIG)
    ds = open_dataset(str(data))
    stream = PromptStream(ds, ds.files(CONFIG), Renderer(tok, "chat"), workers=1,
                          ahead_tokens=8192)
    peak, n = 0, 0
    with stream:
        for _ in stream:
            peak = max(peak, stream._ahead)
            n += 1
    assert n == 16 and 0 < peak <= 8192 + 4096


@pytest.mark.slow  # a spawned process loads the tokenizer again (~10 s here)
def test_stream_renders_in_spawned_processes(data):
    tok = load_tokenizer(CONFIG)
    ds = open_dataset(str(data))
    with PromptStream(ds, ds.files(CONFIG, lengths=(1024,)), Renderer(tok, "chat"), limit=2,
                      workers=1, start_method="spawn") as stream:
        got = [(r.key, list(r.prompt_ids), r.tokens_to_generate, r.length) for r in stream]
    assert got == [e for e in _expected(data, tok, limit=2) if e[0][2] == 1024]


@pytest.mark.build
def test_eval_hf_without_torch_says_what_to_install(data, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # what `import torch` sees without torch
    code = main(["eval", "--model", "/models/some-model", "--model-tokenizer", CONFIG, "--data",
                 str(data), "--tokenizer-config", CONFIG, "--backend", "hf", "--out",
                 str(tmp_path / "res"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0 and "pip install torch" in err and "--backend hf" in err
    assert not (tmp_path / "res").exists()


@pytest.mark.build
def test_bad_chat_template_kwargs_are_refused_by_the_cli(data, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["eval", "--model", "m", "--data", str(data), "--tokenizer-config", CONFIG,
              "--chat-template-kwargs", "[1, 2]", "--out", str(tmp_path / "r")])
    assert e.value.code == 2 and "JSON object" in capsys.readouterr().err


def test_many_gpu_flags_reach_the_vllm_engine_unchanged():
    """`--data/--tensor/--pipeline-parallel-size`, `--max-num-seqs`, `--enforce-eager`: the
    multi-GPU commands of docs/evaluating.md become exactly these engine arguments (and vLLM's
    defaults are left alone when the flags are not given)."""
    from ruler.commands.eval import backend_options
    from ruler.commands.main import make_parser
    from ruler.eval.backends.vllm import engine_kwargs

    base = ["eval", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--data", "ruler",
            "--tokenizer-config", "llama-3.1"]
    args = make_parser().parse_args(base + [
        "--tensor-parallel-size", "4", "--pipeline-parallel-size", "2",
        "--data-parallel-size", "1", "--max-num-seqs", "8", "--enforce-eager",
        "--max-model-len", "131072"])
    assert engine_kwargs(backend_options(args)) == dict(
        model="meta-llama/Llama-3.1-70B-Instruct", dtype="auto", seed=0,
        tensor_parallel_size=4, pipeline_parallel_size=2, max_model_len=131072,
        max_num_seqs=8, enforce_eager=True)
    plain = engine_kwargs(backend_options(make_parser().parse_args(
        base + ["--data-parallel-size", "8"])))
    assert plain == dict(model="meta-llama/Llama-3.1-70B-Instruct", dtype="auto", seed=0,
                         tensor_parallel_size=1, data_parallel_size=8)
    with pytest.raises(RulerError, match="--pipeline-parallel-size must be >= 1, got 0"):
        backend_options(make_parser().parse_args(base + ["--pipeline-parallel-size", "0"]))
