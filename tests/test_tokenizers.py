"""The tokenizer layer on real tokenizers: registry pins, backends, prompt rendering."""

from __future__ import annotations

import json

import pytest

from ruler.builder.errors import RulerError
from ruler.builder.tokenizer_registry import cache_dir, load_tokenizer, registry
from conftest import TOKENIZERS

TEXT = ("July 2010What hard liquor, cigarettes, heroin, and crack have in common is\n"
        "that they're all more concentrated. Naïve café — 日本語 text, émigré.\tTabs too.")
ALL = ["llama-3.1", "qwen2.5", "mistral-nemo", "gemma-3", "llama-2", "gpt-4", "gpt-4o"]


@pytest.fixture(scope="module", params=ALL)
def tok(request):
    return load_tokenizer(request.param)


def test_registry_lists_the_issue_names_with_hashes():
    reg = registry()
    assert set(ALL) <= set(reg)
    for name, entry in reg.items():
        assert entry["files"] and all(len(h) == 64 for h in entry["files"].values()), name


def test_batch_counts_equal_single_counts(tok):
    texts = [TEXT, TEXT[:17], "", "One of the special magic numbers for x is: 1234567."]
    assert tok.count_batch(texts) == [tok.count(t) for t in texts]
    assert tok.count("") == 0


def test_token_starts_are_monotonic_char_offsets(tok):
    starts = tok.token_starts(TEXT)
    assert len(starts) == tok.count(TEXT)
    assert starts[0] == 0 and starts == sorted(starts) and starts[-1] < len(TEXT)
    # every token boundary splits the text into prefixes that re-tokenize to no fewer tokens
    assert tok.token_index_at(TEXT, [0, len(TEXT)]) == [0, len(starts)]


def test_prompt_ids_add_template_and_special_tokens(tok):
    body = tok.count("Question?") + tok.count(" Answer:")
    ids = tok.prompt_ids("Question?", " Answer:")
    if tok.has_chat_template:
        assert len(ids) > body + 2  # role markers, BOS ...
    else:
        assert tok.prompt_ids("Question?", " Answer:", mode="base") == ids
    with pytest.raises(ValueError):
        tok.prompt_ids("q", "a", mode="nonsense")


def test_llama3_chat_prompt_is_rulers_meta_llama3_template():
    tok = load_tokenizer("llama-3.1")
    text = tok.render_chat("Hello", " The answer is")
    # RULER's 'meta-llama3' template, with the answer prefix continuing the assistant turn.
    assert text == ("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
                    "<|start_header_id|>assistant<|end_header_id|>\n\nThe answer is")
    ids = tok.prompt_ids("Hello", " The answer is")
    assert ids[0] == tok.hf.convert_tokens_to_ids("<|begin_of_text|>")
    assert ids.count(ids[0]) == 1  # no double BOS


@pytest.mark.parametrize("name", ["llama-3.1", pytest.param("mistral-nemo", marks=pytest.mark.slow),
                                  pytest.param("qwen2.5", marks=pytest.mark.slow)])
def test_loading_without_autotokenizer_gives_autotokenizers_tokenizer(name):
    """The generic fast class is loaded directly (faster start-up); others through
    AutoTokenizer. Either way: AutoTokenizer's class, template, special tokens and ids."""
    from transformers import AutoTokenizer

    tok = load_tokenizer(name)
    auto = AutoTokenizer.from_pretrained(str(tok.folder))
    assert type(tok.hf) is type(auto)
    assert tok.hf.chat_template == auto.chat_template
    assert tok.hf.special_tokens_map == auto.special_tokens_map
    assert tok.render_chat(TEXT, "Answer:") == auto.apply_chat_template(
        [{"role": "user", "content": TEXT}, {"role": "assistant", "content": "Answer:"}],
        tokenize=False, add_generation_prompt=False, continue_final_message=True)
    assert tok.prompt_ids(TEXT, "Answer:", "base") == auto(TEXT + "Answer:")["input_ids"]


def test_llama2_base_prompt_starts_with_bos():
    tok = load_tokenizer("llama-2")
    ids = tok.prompt_ids("Hello", " Answer:")
    assert ids[0] == tok.sp.bos_id() and len(ids) == 1 + tok.count("Hello Answer:")


def test_package_tekken_equals_hf_folder(monkeypatch, tmp_path):
    folder = load_tokenizer("mistral-nemo")
    monkeypatch.delenv("RULER_TOKENIZERS")
    monkeypatch.setenv("RULER_TOKENIZER_CACHE", str(tmp_path))  # nothing cached: use package
    packaged = load_tokenizer("mistral-nemo")
    assert packaged.identity.origin.startswith("package:mistral-common")
    assert folder.identity.origin == "tokenizers-dir"
    assert packaged.encode(TEXT) == folder.encode(TEXT)
    assert packaged.token_starts(TEXT) == folder.token_starts(TEXT)
    for prefix in (" The special magic number for x is", " Answer:"):
        assert packaged.prompt_ids(TEXT, prefix) == folder.prompt_ids(TEXT, prefix)
        assert packaged.prompt_ids(TEXT, prefix, "base") == folder.prompt_ids(TEXT, prefix, "base")


def test_hash_mismatch_is_refused(tmp_path, monkeypatch):
    fake = tmp_path / "llama-3.1"
    fake.mkdir()
    for f in ("tokenizer.json", "tokenizer_config.json"):
        (fake / f).write_bytes((TOKENIZERS / "llama-3.1" / f).read_bytes())
    cfg = json.loads((fake / "tokenizer_config.json").read_text())
    cfg["chat_template"] = "{{ messages[0]['content'] }}"
    (fake / "tokenizer_config.json").write_text(json.dumps(cfg))
    monkeypatch.setenv("RULER_TOKENIZERS", str(tmp_path))
    with pytest.raises(RulerError, match="does not match the registry pin"):
        load_tokenizer("llama-3.1")
    # the same folder is usable as an explicit, unregistered tokenizer with its own identity
    tok = load_tokenizer(str(fake))
    assert not tok.identity.pinned and tok.identity.chat_template_sha256


def test_unknown_and_unpinned_tokenizers_are_clear_errors():
    with pytest.raises(RulerError, match="unknown tokenizer"):
        load_tokenizer("no-such-tokenizer")
    with pytest.raises(RulerError, match="pinned revision"):
        load_tokenizer("meta-llama/Llama-3.1-8B-Instruct")


def test_offline_hub_download_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("RULER_TOKENIZERS")
    monkeypatch.setenv("RULER_TOKENIZER_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RulerError, match="could not download tokenizer files"):
        load_tokenizer("qwen2.5")
    assert not any(tmp_path.rglob("*.json"))  # nothing half-downloaded left behind


def test_registry_is_package_data_and_the_cache_is_the_users(monkeypatch, tmp_path):
    import importlib.resources

    assert importlib.resources.files("ruler.tokenizers_cache").joinpath("registry.json").is_file()
    assert "llama-3.1" in registry()
    for var in ("RULER_TOKENIZER_CACHE", "RULER_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "ruler" / "tokenizers"
    monkeypatch.setenv("RULER_CACHE", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine" / "tokenizers"
    monkeypatch.setenv("RULER_TOKENIZER_CACHE", str(tmp_path / "toks"))
    assert cache_dir() == tmp_path / "toks"
