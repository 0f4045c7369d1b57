"""The tokenizer layer on real tokenizers: registry pins, backends, prompt rendering."""

from __future__ import annotations

import dataclasses
import json

import pytest

from helpers.paths import TOKENIZERS
from ruler.builder.tokenizer_registry import cache_dir, load_tokenizer, registry
from ruler.catalog.tokenizer import HFTokenizer
from ruler.kernel.errors import RulerError

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
        assert entry.files and all(len(h) == 64 for h in entry.files.values()), name


def test_the_registry_is_read_into_typed_records_that_know_every_key():
    """registry.json is read into `RegistryEntry` records: every key of every entry is a
    field (none left in `extra`, where code would have to look it up by name), and each
    record writes back the entry it was read from."""
    from helpers.paths import ROOT

    raw = json.loads((ROOT / "tokenizers_cache" / "registry.json").read_text(encoding="utf-8"))
    reg = registry()
    assert set(reg) == {k for k in raw if not k.startswith("_")}
    for name, entry in reg.items():
        assert entry.extra == {} and (entry.package is None or entry.package.extra == {}), name
        assert entry.to_json() == raw[name], name


def test_a_tokenizer_without_a_chat_template_renders_no_chat_text():
    """Every Tokenizer has `render_chat` and `render_reasoning` (eval/render.py calls them on
    the base type): without a chat template each raises the ValueError `prompt_ids` raises
    for chat and reasoning mode (they were HFTokenizer's alone: an AttributeError)."""
    tok = load_tokenizer("gpt-4")
    assert not tok.has_chat_template
    for render in (lambda: tok.render_chat("input", "prefix"),
                   lambda: tok.render_reasoning("input"),
                   lambda: tok.prompt_ids("input", "prefix", "chat")):
        with pytest.raises(ValueError, match="tokenizer 'gpt-4' has no chat template; use "
                                             "mode='base'"):
            render()


def test_batch_counts_equal_single_counts(tok):
    texts = [TEXT, TEXT[:17], "", "One of the special magic numbers for x is: 1234567."]
    assert tok.count_batch(texts) == [tok.count(t) for t in texts]
    assert tok.count("") == 0


@pytest.mark.parametrize("name", [n for n in ALL if registry()[n].kind == "hf"])
def test_hf_ids_are_the_backends_own_encode(name):
    """HFTokenizer encodes without offsets (`encode_batch_fast`): the ids are `encode`'s, on
    plain text and on a rendered prompt holding the template's special tokens."""
    tok = load_tokenizer(name)
    assert isinstance(tok, HFTokenizer)
    texts = [TEXT, "", " x", "\n\n"]
    if tok.has_chat_template:
        texts.append(tok.render_chat(TEXT, "Answer:"))
    for special in (False, True):
        want = [tok.backend.encode(t, add_special_tokens=special).ids for t in texts]
        assert tok._ids(texts, special) == want
    assert [tok.encode(t) for t in texts] == [e.ids for e in tok.backend.encode_batch(
        texts, add_special_tokens=False)]


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


def test_a_chat_prompt_without_answer_prefix_opens_the_assistant_turn(tok):
    """RULERv2's rows have no answer prefix: their chat prompt is the user turn and the
    generation prompt, as a server renders a chat request (interface: `length` counts "the
    chat template with the generation prompt"). Continuing an empty assistant message would
    end llama-3.1's prompt without the "\n\n" after the assistant header, Gemma's without "\n"."""
    if not tok.has_chat_template:
        assert tok.prompt_ids("Question?", "") == tok.prompt_ids("Question?", "", mode="base")
        return
    assert tok.prompt_ids("Question?", "") == tok.prompt_ids("Question?", "", mode="reasoning")
    if tok.name in ("llama-3.1", "gemma-3"):
        opened = tok.render_chat("Question?", "")
        assert opened.endswith({"llama-3.1": "<|start_header_id|>assistant<|end_header_id|>\n\n",
                                "gemma-3": "<start_of_turn>model\n"}[tok.name])


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


@pytest.mark.network
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


# --- one registry name, one tokenizer, whichever way it is obtained -----------------------

#: Registry names that more than one backend loads (a pinned folder and an installed package).
MULTI_BACKEND = [n for n, e in registry().items() if e.package is not None]


@pytest.fixture()
def without_pinned_folders(monkeypatch, tmp_path):
    """The environment of a machine with only PyPI: no $RULER_TOKENIZERS, an empty cache."""
    monkeypatch.delenv("RULER_TOKENIZERS")
    monkeypatch.setenv("RULER_TOKENIZER_CACHE", str(tmp_path / "empty-cache"))


def _both_loaders(name, monkeypatch, tmp_path):
    folder = load_tokenizer(name)
    with monkeypatch.context() as m:
        m.delenv("RULER_TOKENIZERS")
        m.setenv("RULER_TOKENIZER_CACHE", str(tmp_path / "empty-cache"))
        packaged = load_tokenizer(name)
    assert folder.identity.origin == "tokenizers-dir"
    assert packaged.identity.origin.startswith("package:")
    return folder, packaged


def test_mistral_nemo_is_loaded_by_more_than_one_backend():
    assert MULTI_BACKEND == ["mistral-nemo"]


@pytest.mark.parametrize("name", MULTI_BACKEND)
@pytest.mark.parametrize("drafts", ["one", pytest.param("four", marks=pytest.mark.slow)])
def test_every_task_prompt_gives_the_same_ids_through_every_loader(name, drafts, monkeypatch,
                                                                   tmp_path):
    """issue 21.5: each task's real prompt and answer prefix, drafted as the builder drafts
    them, render to the same ids through the pinned folder and the package: chat (template +
    pre-filled prefix), base (BOS + input + prefix) and reasoning (template + generation
    prompt), and the input's tokens start at the same characters (gold positions). The fast
    tier checks one draft per task (its smallest haystack), the full suite two samples at two
    haystack sizes."""
    from helpers.tasks import SEED, generator
    from ruler.catalog import TASKS
    from ruler.kernel.rng import sample_rng

    folder, packaged = _both_loaders(name, monkeypatch, tmp_path)
    for task in TASKS:
        gen = generator(task, name, 4096)
        assert gen.ctx.tokenizer.identity.origin == "tokenizers-dir"
        # one draft: the smallest haystack (the template, needles, question and prefix whole);
        # four: that and a larger one, two samples each
        sizes = [gen.min_size]
        if drafts == "four":
            sizes.append(gen.min_size + 7 * gen.calibration_step)
        for index in range(1 if drafts == "one" else 2):
            for size in sizes:
                rng = sample_rng(SEED, name, task, 4096, index)
                d = gen.draft(index, rng, size)
                where = (task, index, size, d.answer_prefix[-30:])
                for mode in ("chat", "base", "reasoning"):
                    assert packaged.prompt_ids(d.input, d.answer_prefix, mode) == \
                        folder.prompt_ids(d.input, d.answer_prefix, mode), (*where, mode)
                assert packaged.token_starts(d.input) == folder.token_starts(d.input), where


@pytest.mark.parametrize("name", MULTI_BACKEND)
def test_special_token_text_is_read_alike_by_every_loader(name, monkeypatch, tmp_path):
    """A source text holding a special token's text ("</s>", "[INST]") is read as the folder's
    tokenizer reads it (the control token), by the package too; prompt ids and token starts
    agree around it, multi-byte characters included."""
    folder, packaged = _both_loaders(name, monkeypatch, tmp_path)
    texts = ["a [INST] b </s> c <s>", "x <SPECIAL_20> y", "<<s>>[[/INST]]", "[x <s>] <pad",
             "</s></s>café — 日本語 <unk>", "[INST", "<"]
    for text in texts:
        assert packaged.encode(text) == folder.encode(text), text
        assert packaged.token_starts(text) == folder.token_starts(text), text
        for mode in ("chat", "base", "reasoning"):
            assert packaged.prompt_ids(text, " Answer: </s> ", mode) == \
                folder.prompt_ids(text, " Answer: </s> ", mode), (text, mode)


@pytest.mark.parametrize("name", MULTI_BACKEND)
def test_a_registry_name_has_one_identity_whichever_backend_loads_it(name, monkeypatch,
                                                                     tmp_path):
    from ruler.builder.packages import content_packages

    folder, packaged = _both_loaders(name, monkeypatch, tmp_path)
    record = {k: v for k, v in folder.identity.as_manifest().to_json().items()
              if k != "origin"}
    assert {k: v for k, v in packaged.identity.as_manifest().to_json().items()
            if k != "origin"} == record
    assert packaged.identity.fingerprint() == folder.identity.fingerprint()
    # Both backends' packages shape the rows of this name, whichever one loaded it.
    assert content_packages(*packaged.identity.content_kinds) == \
        content_packages(*folder.identity.content_kinds)
    assert {"mistral-common", "transformers", "tokenizers"} <= \
        set(content_packages(*folder.identity.content_kinds))
    # The package's file is named where the files came from, not in the identity.
    assert "tekken_240718.json" in packaged.identity.origin


@pytest.mark.slow
@pytest.mark.parametrize("name", MULTI_BACKEND)
def test_a_build_is_the_same_bytes_and_verifies_and_evaluates_either_way(name, monkeypatch,
                                                                         tmp_path):
    """issue 21.5: vt's answer prefix ends with a space, which mistral-common strips from an
    assistant turn; built either way, the rows are the same bytes, and a build made one way
    resumes, verifies (rows re-tokenized and rebuilt) and evaluates where the other is set up."""
    from helpers.builds import build
    from ruler.builder.manifest import read_manifest
    from ruler.builder.verify.run import verify
    from ruler.eval.backends.fake import FakeBackend, FakeOptions
    from ruler.eval.runner import EvalConfig, run_eval

    tasks, folder_out, package_out = ("vt",), tmp_path / "folder", tmp_path / "package"
    build(folder_out, name, tasks, [4096], 20, workers=1)
    with monkeypatch.context() as m:
        m.delenv("RULER_TOKENIZERS")
        m.setenv("RULER_TOKENIZER_CACHE", str(tmp_path / "empty-cache"))
        build(package_out, name, tasks, [4096], 20, workers=1)
    a, b = read_manifest(folder_out), read_manifest(package_out)
    assert b["builds"][name]["tokenizer"]["origin"].startswith("package:")
    assert {rel: e["content_sha256"] for rel, e in b["files"].items()} == \
        {rel: e["content_sha256"] for rel, e in a["files"].items()}
    # The same build record (identity, packages, pinned tokenizer, official or not), but
    # for where the tokenizer came from.
    origin_a = a["builds"][name]["tokenizer"].pop("origin")
    assert origin_a == "tokenizers-dir" and b["builds"][name]["tokenizer"].pop("origin")
    assert b["builds"][name] == a["builds"][name] and a["builds"][name]["tokenizer"]["pinned"]

    def cross_check(out, env):
        with monkeypatch.context() as m:
            for k, v in env.items():
                m.setenv(k, v) if v else m.delenv(k)
            again = build(out, name, tasks, [4096], 20, workers=1)  # resumes: nothing to do
            assert all(f.skipped for f in again.files)
            report = verify(out, full=True, regenerate=2, load=False)
            assert report.ok, report.all_problems()
            outcome = run_eval(EvalConfig(
                model="/models/m", data=str(out), tokenizer_config=name,
                out=tmp_path / f"eval-{out.name}", model_tokenizer=name, progress=False,
                render_workers=0), backend=FakeBackend(FakeOptions("m", answers="empty")))
            assert outcome.generated == 20 and outcome.errors == 0

    cross_check(folder_out, {"RULER_TOKENIZERS": None,
                             "RULER_TOKENIZER_CACHE": str(tmp_path / "empty-cache")})
    cross_check(package_out, {"RULER_TOKENIZERS": str(TOKENIZERS)})


def test_the_package_file_is_pinned(monkeypatch, without_pinned_folders):
    """A package that ships other bytes under the pinned file name is refused, naming the
    package and its version, never used as the registry's tokenizer."""
    import ruler.builder.tokenizer_registry as reg

    entry = registry()["mistral-nemo"]
    assert entry.package is not None and len(entry.package.sha256) == 64
    entry = dataclasses.replace(entry, package=dataclasses.replace(entry.package,
                                                                  sha256="0" * 64))
    monkeypatch.setattr(reg, "registry", lambda: {"mistral-nemo": entry})
    with pytest.raises(RulerError, match=r"mistral-common==[\d.]+ .*tekken_240718.json.*"
                                         r"does not match the registry pin"):
        load_tokenizer("mistral-nemo")


def test_identity_differences_name_packages_as_they_are():
    """A package recorded by one identity and not used by the other is 'not recorded', never
    'not installed' (it is: every backend is a dependency)."""
    from ruler.builder.identity import identity_differences
    from ruler.catalog.manifest_records import IdentityRecord

    old = IdentityRecord(packages={"mistral-common": "1.13.1", "numpy": "2.3.5"})
    new = IdentityRecord(packages={"numpy": "2.3.5", "transformers": "5.19.0"})
    (said,) = identity_differences(old, new)
    assert "not installed" not in said
    assert said == ("package versions (mistral-common 1.13.1 -> not recorded, "
                    "transformers not recorded -> 5.19.0)")


@pytest.mark.parametrize("name", [n for n, e in registry().items() if e.kind == "hf"])
def test_the_registry_pins_the_chat_template_each_hf_tokenizer_renders(name):
    tok = load_tokenizer(name)
    assert tok.identity.chat_template_sha256 == registry()[name].chat_template_sha256


def test_a_chat_template_file_beside_the_pinned_files_is_refused(tmp_path, monkeypatch):
    """transformers reads chat_template.jinja over tokenizer_config.json's template: beside
    the pinned files it would change the prompts under the registry's name."""
    folder = tmp_path / "llama-3.1"
    folder.mkdir()
    for f in ("tokenizer.json", "tokenizer_config.json"):
        (folder / f).write_bytes((TOKENIZERS / "llama-3.1" / f).read_bytes())
    (folder / "chat_template.jinja").write_text(
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}")
    monkeypatch.setenv("RULER_TOKENIZERS", str(tmp_path))
    with pytest.raises(RulerError, match="chat template.*registry pin"):
        load_tokenizer("llama-3.1")


@pytest.mark.subprocess
@pytest.mark.parametrize("name", [n for n, e in registry().items() if e.kind == "tiktoken"])
def test_a_tiktoken_encoding_from_tiktokens_own_cache_is_the_pinned_file(name, tmp_path):
    """Without $RULER_TOKENIZERS tiktoken's own cache (or its download) supplies the encoding:
    tiktoken accepts only the file its built-in hash expects, which is the registry's pin, so
    the rows are those of the pinned file. A fresh process: tiktoken keeps encodings per
    process."""
    import hashlib
    import os
    import subprocess
    import sys

    entry = registry()[name]
    (file_name,) = entry.files
    cache = tmp_path / "cache"
    seeded = cache / "tiktoken-cache" / hashlib.sha1(entry.url.encode()).hexdigest()
    seeded.parent.mkdir(parents=True)
    seeded.write_bytes((TOKENIZERS / entry.dir / file_name).read_bytes())
    script = (
        "import json; from ruler.builder.tokenizer_registry import load_tokenizer\n"
        f"t = load_tokenizer({name!r})\n"
        "print(json.dumps([t.identity.as_manifest().to_json(), "
        f"t.prompt_ids({TEXT!r}, ' Answer: ')]))")
    env = {k: v for k, v in os.environ.items()
           if k not in ("RULER_TOKENIZERS", "NO_PROXY", "no_proxy")}
    # A download (the tampered case) fails at once instead of waiting on the network.
    env.update(RULER_TOKENIZER_CACHE=str(cache), HTTPS_PROXY="http://127.0.0.1:9",
               https_proxy="http://127.0.0.1:9")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    record, ids = json.loads(done.stdout.splitlines()[-1])
    folder = load_tokenizer(name)
    assert ids == folder.prompt_ids(TEXT, " Answer: ")
    assert {k: v for k, v in record.items() if k != "origin"} == \
        {k: v for k, v in folder.identity.as_manifest().to_json().items() if k != "origin"}
    # Tampered, the cached file is not accepted (tiktoken would download the real one).
    seeded.write_bytes(seeded.read_bytes().replace(b"IQ==", b"IR==", 1))
    bad = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode != 0 and "could not load the" in bad.stderr


# --- a chat template that cannot render RULER's prompt --------------------------------------

RAISES_FOR_ASSISTANT = (
    "{% for m in messages %}{% if m['role'] == 'assistant' %}"
    "{{ raise_exception('Assistant turns cannot be continued') }}{% endif %}"
    "{{ m['content'] }}{% endfor %}")


@pytest.mark.parametrize("where,template,error", [
    ("tokenizer_config.json", RAISES_FOR_ASSISTANT,
     "TemplateError: Assistant turns cannot be continued"),
    ("chat_template.jinja", "{% for m in messages %}{{ m['content'] }{% endfor %}",
     "TemplateSyntaxError: unexpected '}'"),
    ("tokenizer_config.json", "{% for m in messages %}{% if m['role'] == 'user' %}"
     "{{ m['content'] }}{% endif %}{% endfor %}", "ValueError: continue_final_message"),
], ids=["raise_exception", "syntax-error", "drops-the-answer-prefix"])
def test_a_chat_template_that_fails_is_one_line_from_build(tmp_path, capsys, where, template,
                                                           error):
    """issue 21.12: `ruler build` with a tokenizer whose template raises for RULER's roles
    (user, then the assistant turn pre-filled), or does not compile, or drops the assistant
    turn, says so in one line naming the tokenizer and the error, exits 2, writes nothing."""
    from ruler.commands.main import main

    folder = tmp_path / "my-tok"
    folder.mkdir()
    for f in ("tokenizer.json", "tokenizer_config.json"):
        (folder / f).write_bytes((TOKENIZERS / "llama-3.1" / f).read_bytes())
    if where == "tokenizer_config.json":
        cfg = json.loads((folder / f).read_text())
        cfg["chat_template"] = template
        (folder / f).write_text(json.dumps(cfg))
    else:
        (folder / where).write_text(template)
    out = tmp_path / "out"
    capsys.readouterr()
    code = main(["build", "--tokenizer", str(folder), "--tasks", "vt,niah_single_1",
                 "--lengths", "4096", "--samples", "2", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    # transformers' own start-up notice is issue 21.17's, not this error's
    err = [line for line in err if not line.startswith("[transformers] PyTorch was not found")]
    assert code == 2
    assert len(err) == 1 and err[0].startswith("ruler: error: "), err
    assert "'my-tok'" in err[0] and error in err[0] and "chat template" in err[0], err[0]
    assert not out.exists()
