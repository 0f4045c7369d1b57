"""Registry tokenizers loaded without transformers (`tokenizer_registry.direct_files`): the
`tokenizers` backend of the pinned tokenizer.json and the template rendered by
`catalog.chat_template` give what transformers' tokenizer of the same folder gives, on every
task's prompts and in every prompt mode."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from helpers.paths import TOKENIZERS
from ruler.builder.tokenizer_registry import direct_files, load_tokenizer, registry
from ruler.catalog.chat_template import ChatTemplate, special_tokens
from ruler.catalog.tokenizer import ChatTemplateError, HFTokenizer

HF_NAMES = [n for n, e in registry().items() if e.kind == "hf"]
DIRECT = [n for n in HF_NAMES if direct_files(TOKENIZERS / registry()[n].dir, registry()[n])]


def test_the_generic_class_tokenizers_are_loaded_directly():
    assert DIRECT == ["llama-3.1", "mistral-nemo"]


@pytest.mark.slow  # loads qwen2.5 and gemma-3 through transformers
def test_the_others_are_loaded_through_transformers_which_changes_their_backend():
    """Qwen2Tokenizer and GemmaTokenizer rebuild the backend (qwen2.5's pre-tokenizer and
    decoder, gemma-3's added tokens differ from their tokenizer.json)."""
    for name in set(HF_NAMES) - set(DIRECT):
        tok = load_tokenizer(name)
        assert tok.backend.to_str() != _raw_backend(name).to_str()


def _raw_backend(name):
    import tokenizers

    return tokenizers.Tokenizer.from_file(str(TOKENIZERS / name / "tokenizer.json"))


@pytest.fixture(scope="module", params=DIRECT)
def both(request):
    """(loaded directly, through transformers) for one registry name."""
    direct = load_tokenizer(request.param)
    assert direct._hf is None and direct._renderer is not None
    # transformers' tokenizer of the folder: the registry's, loaded by load_hf once a process
    return direct, HFTokenizer(direct.folder, direct.identity, hf=direct.hf)


def test_the_backend_special_tokens_and_template_are_transformers(both):
    direct, via = both
    assert direct.backend.to_str() == via.backend.to_str()
    assert direct.backend.encode_special_tokens == via.backend.encode_special_tokens
    config = json.loads((direct.folder / "tokenizer_config.json").read_text())
    assert special_tokens(config) == via.hf.special_tokens_map
    assert direct.chat_template == via.chat_template == via.hf.chat_template


EDGES = [("Question?", " Answer:"), ("Question?", "The answer is "), ("Question?", ""),
         ("  spaced input \n", " prefix with a trailing space "),
         ("a <|eot_id|> b </s> [INST] c", " Answer: </s> "), ("Naïve café — 日本語", "答え:")]


def _prompts(name: str, samples: int):
    """Every task's drafts (RULER and RULERv2) as the builder drafts them, then edge cases."""
    from helpers.tasks import SEED, generator
    from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
    from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS
    from ruler.kernel.rng import sample_rng

    for task in (*STANDARD_TASKS, *RULER2_TASKS):
        gen = generator(task, name, 4096)
        for index in range(samples):
            d = gen.draft(index, sample_rng(SEED, name, task, 4096, index),
                          gen.min_size + index * gen.calibration_step)
            yield task, d.input, d.answer_prefix
    for text, prefix in EDGES:
        yield "edge", text, prefix


@pytest.mark.parametrize("samples", [1, pytest.param(3, marks=pytest.mark.slow)])
def test_every_tasks_prompt_renders_and_counts_as_transformers_renders_it(both, samples):
    direct, via = both
    for task, text, prefix in _prompts(direct.name, samples):
        where = (direct.name, task, prefix[-30:])
        assert direct.render_chat(text, prefix) == via.render_chat(text, prefix), where
        assert direct.render_reasoning(text) == via.render_reasoning(text), where
        for mode in ("chat", "base", "reasoning"):
            assert direct.prompt_ids(text, prefix, mode) == via.prompt_ids(text, prefix, mode), \
                (*where, mode)
        assert direct.token_starts(text) == via.token_starts(text), where


def test_template_variables_reach_the_template_as_in_transformers(both):
    direct, via = both
    for kwargs in ({"enable_thinking": False}, {"date_string": "01 Jan 2000"},
                   {"bos_token": "<BOS>"}):  # a variable given overrides a special token
        assert direct.render_reasoning("Q?", kwargs) == via.render_reasoning("Q?", kwargs)
        assert direct.render_chat("Q?", " A:", kwargs) == via.render_chat("Q?", " A:", kwargs)


RAISES_FOR_ASSISTANT = (
    "{% for m in messages %}{% if m['role'] == 'assistant' %}"
    "{{ raise_exception('Assistant turns cannot be continued') }}{% endif %}"
    "{{ m['content'] }}{% endfor %}")


@pytest.mark.parametrize("template", [
    RAISES_FOR_ASSISTANT, "{% for m in messages %}{{ m['content'] }{% endfor %}",
    "{% for m in messages %}{% if m['role'] == 'user' %}{{ m['content'] }}{% endif %}"
    "{% endfor %}", "{{ messages[0]['role'] }}: no message text"],
    ids=["raise_exception", "syntax-error", "drops-the-answer-prefix", "no-content"])
def test_a_template_that_fails_fails_alike_both_ways(template):
    # llama-3.1 with `template` instead of its own: transformers' tokenizer (a copy of the
    # registry's, loaded once: seconds a load) and the backend with our renderer
    tok = load_tokenizer("llama-3.1")
    hf = copy.copy(tok.hf)
    hf.chat_template = template
    via = HFTokenizer(tok.folder, tok.identity, hf=hf)
    config = json.loads((tok.folder / "tokenizer_config.json").read_text())
    direct = HFTokenizer(tok.folder, tok.identity,
                         direct=(tok.backend, ChatTemplate(template, special_tokens(config))))
    assert via.chat_template == direct.chat_template == template != tok.chat_template
    with pytest.raises(ChatTemplateError) as through_transformers:
        via.render_chat("Q?", " A:")
    with pytest.raises(ChatTemplateError) as here:
        direct.render_chat("Q?", " A:")
    assert str(here.value) == str(through_transformers.value)


def test_a_file_transformers_would_read_beside_the_pinned_ones_means_transformers(tmp_path):
    folder = tmp_path / "llama-3.1"
    folder.mkdir()
    for f in ("tokenizer.json", "tokenizer_config.json", "LICENSE"):
        (folder / f).write_bytes((TOKENIZERS / "llama-3.1" / f).read_bytes())
    entry = registry()["llama-3.1"]
    assert direct_files(folder, entry)
    (folder / "README.md").write_text("notes")
    assert direct_files(folder, entry)
    for name in ("special_tokens_map.json", "added_tokens.json", "chat_template.jinja"):
        (folder / name).write_text("{}")
        assert not direct_files(folder, entry), name
        (folder / name).unlink()


@pytest.mark.subprocess
@pytest.mark.build
def test_a_build_with_a_direct_tokenizer_never_imports_transformers(tmp_path):
    """The point of it: `ruler build` with llama-3.1 starts without transformers."""
    code = ("import sys; from ruler.commands.main import main; "
            f"main(['build', '--benchmark', 'v2', '--tokenizer', 'llama-3.1', '--tasks', "
            f"'mk_niah_basic', '--lengths', '1024', '--samples', '1', '--workers', '1', "
            f"'--no-progress', '--out', {str(tmp_path / 'out')!r}]); "
            "print('transformers' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize("name", DIRECT)
def test_a_direct_tokenizers_transformers_object_is_loaded_once_a_process(name):
    """Asked for (the kvpress export's template check, the tests), transformers' object of a
    directly loaded registry tokenizer is the registry's shared one, as for the others: each
    load took seconds."""
    a, b = load_tokenizer(name), load_tokenizer(name)
    assert a is not b and a._hf is None and b._hf is None
    assert a.hf is b.hf and a.hf.chat_template == a.chat_template
