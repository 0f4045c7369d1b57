"""`ruler export kvpress`: a dataset folder in kvpress's RULER schema, loaded as kvpress loads it.

kvpress (evaluation/evaluate.py) reads RULER as `load_dataset(DATASET, data_dir="4096",
split="test")` and uses the columns context, question, answer_prefix, answer (list of strings),
task and max_new_tokens; its pipeline renders the prompt as the chat template of the user turn
`context` (cut where the context ends) + question + the rest of the template + answer_prefix.
These tests load real exports with `datasets` and check every row against its source row, the
answer prefix that makes that prompt ruler's (also for templates that trim it), the
reasoning variant, a calibration subset, keyed predictions scored by `ruler score`, an export
from a Hub revision, and the refusals. kvpress's own pipeline runs in test_kvpress.py.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from datasets import load_dataset

from helpers.builds import build, rows
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.catalog.variants import OutputBudget
from ruler.commands.main import main
from ruler.eval.integrations import kvpress_export as kx
from ruler.eval.integrations.export_folder import RECORD_NAME

TASKS = ("niah_single_1", "vt", "cwe", "fwe", "qa_1")
LENGTHS = (4096, 8192)
SAMPLES = 3


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """qwen2.5 (its template keeps the answer prefix's leading space) and its reasoning
    variant, side by side."""
    out = tmp_path_factory.mktemp("kvpress") / "ruler"
    build(out, "qwen2.5", TASKS, LENGTHS, SAMPLES, workers=1)
    build(out, "qwen2.5", ("niah_single_1", "qa_1"), (4096,), 2, workers=1,
          variant=OutputBudget(256))
    return out


def _load(folder: Path, tmp_path: Path, **kw):
    return load_dataset(str(folder), split="test", cache_dir=str(tmp_path / "hf-cache"), **kw)


def _export(capsys, *argv) -> tuple[int, str]:
    code = main(["export", "kvpress", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.build
def test_the_export_loads_as_kvpress_loads_ruler(data, tmp_path, capsys):
    out = tmp_path / "kv"
    code, text = _export(capsys, data, "--out", out, "--tokenizer-config", "qwen2.5")
    assert code == 0, text
    assert f"load_dataset('{out}', data_dir=\"4096\", split=\"test\")" in text
    for L in LENGTHS:
        ds = _load(out, tmp_path, data_dir=str(L))
        assert ds.column_names == [*kx.KVPRESS_COLUMNS, *kx.KEY_COLUMNS]
        features = {k: str(v) for k, v in ds.features.items()}
        assert features["answer"] == "List(Value('string'))", features
        assert features["max_new_tokens"] == "Value('int64')"
        assert all(features[c] == "Value('string')"
                   for c in ("context", "question", "answer_prefix", "task"))
        got = ds.to_list()
        # tasks in upstream's order, each task's rows by index; only this length
        assert [(r["task"], r["index"]) for r in got] == [(t, i) for t in TASKS
                                                         for i in range(SAMPLES)]
        assert {r["max_seq_length"] for r in got} == {L}
        for r in got:
            src = rows(data, "qwen2.5", r["task"], L)[r["index"]]
            assert r["context"] == src["context"] and r["question"] == src["question"]
            assert r["context"] + r["question"] == src["input"]
            assert r["answer"] == src["outputs"]
            assert r["max_new_tokens"] == src["tokens_to_generate"]
            assert r["answer_prefix"] == src["answer_prefix"]  # qwen2.5 keeps it as it is
            assert r["tokenizer"] == "qwen2.5"
        # one config per length, by name too (the card's YAML)
        assert _load(out, tmp_path, name=str(L)).to_list() == got
    meta = json.loads((out / kx.METADATA_NAME).read_text())
    assert meta["prompt_tokens"] == {"checked": len(TASKS), "mismatched": [],
                                     "template": True}
    assert meta["source"]["dataset"] == str(data.resolve())
    card = (out / "README.md").read_text()
    front = yaml.safe_load(card.split("---\n")[1])
    assert [c["config_name"] for c in front["configs"]] == ["4096", "8192"]
    assert f"- source: the local build `{data.resolve()}`" in card
    assert "token for token on the 5 rows checked (each task's first" in card
    assert kx.PREDICT_SCRIPT in card
    # kvpress's scorer picks each of RULER v1's tasks the metric its rows record: nothing to say
    assert card.startswith("---\n") and "\n# RULER for kvpress: `qwen2.5`, 4096, 8192\n" in card
    assert "kvpress_scores_otherwise" not in meta and "kvpress would score" not in text + card


@pytest.mark.build
@pytest.mark.parametrize("tokenizer, trims", [("llama-3.1", True), ("gemma-3", True),
                                               ("mistral-nemo", False), ("qwen2.5", False)])
def test_the_answer_prefix_makes_kvpress_prompt_the_one_ruler_counted(tokenizer, trims,
                                                                      tmp_path, capsys):
    """Every registry tokenizer with a chat template. Llama 3's and Gemma 3's templates trim
    the assistant turn (its leading space; vt's trailing one too): kvpress, which appends
    answer_prefix after the generation prompt, must get it trimmed. Its prompt text (the
    template of the user turn context + question, the generation prompt, answer_prefix) is
    then ruler's, and so are its tokens (context and question tokenized apart)."""
    data = tmp_path / "ruler"
    build(data, tokenizer, ("niah_single_1", "vt", "qa_1"), (4096,), 2, workers=1)
    code, text = _export(capsys, data, "--out", tmp_path / "kv")
    assert code == 0, text
    tok = load_tokenizer(tokenizer)
    for r in _load(tmp_path / "kv", tmp_path, data_dir="4096").to_list():
        src = rows(data, tokenizer, r["task"], 4096)[r["index"]]
        assert src["answer_prefix"].startswith(" ")
        # (both ends: vt's prefix ends with a space)
        assert r["answer_prefix"] == (src["answer_prefix"].strip() if trims
                                      else src["answer_prefix"])
        kvpress_text = tok.hf.apply_chat_template(
            [{"role": "user", "content": r["context"] + r["question"]}],
            add_generation_prompt=True, tokenize=False) + r["answer_prefix"]
        assert kvpress_text == tok.render_chat(src["input"], src["answer_prefix"])
        assert len(tok.encode(kvpress_text)) == src["length"] - src["tokens_to_generate"]
    meta = json.loads((tmp_path / "kv" / kx.METADATA_NAME).read_text())
    assert meta["prompt_tokens"] == {"checked": 3, "mismatched": [], "template": True}


@pytest.mark.build
def test_a_ruler2_export_says_its_benchmark_and_where_kvpress_would_score_otherwise(tmp_path,
                                                                                capsys):
    """kvpress's scorer picks a task's metric by the first word of its name (`qa`: part, else
    all); RULERv2's rows record their own metrics, so kvpress's scores of them would be wrong:
    the card, ruler_kvpress.json and the console name each task, the card says the build's
    benchmark, and nothing calls the rows RULER's."""
    data = tmp_path / "ruler"
    build(data, "llama-3.1", ("mk_niah_basic", "qa_basic"), (4096,), 1, benchmark="ruler2")
    code, text = _export(capsys, data, "--out", tmp_path / "kv")
    assert code == 0, text
    notes = ["kvpress would score mk_niah_basic with string_match_all; these rows' metric is "
             "ruler2_all: score kvpress's predictions with `ruler score`",
             "kvpress would score qa_basic with string_match_part; these rows' metric is "
             "ruler2_part: score kvpress's predictions with `ruler score`"]
    assert [line for line in text.splitlines() if "kvpress would score" in line] == [
        f"note: {n}" for n in notes]
    meta = json.loads((tmp_path / "kv" / kx.METADATA_NAME).read_text())
    assert meta["kvpress_scores_otherwise"] == {
        "mk_niah_basic": {"kvpress": "string_match_all", "rows": ["ruler2_all"]},
        "qa_basic": {"kvpress": "string_match_part", "rows": ["ruler2_part"]}}
    card = (tmp_path / "kv" / "README.md").read_text()
    assert "\n# RULERv2 for kvpress: `llama-3.1--v2`, 4096\n" in card
    assert "RULERv2 rows in the schema of [kvpress](https://github.com/NVIDIA/kvpress)'s " \
           "`ruler` dataset" in card
    assert ("kvpress's scorer picks a task's metric by its name (the `task` column above), not "
            "as these rows record it:\n\n"
            "- kvpress would score `mk_niah_basic` with `string_match_all`; these rows' metric "
            "is `ruler2_all`: score kvpress's predictions with `ruler score`.\n"
            "- kvpress would score `qa_basic` with `string_match_part`; these rows' metric is "
            "`ruler2_part`: score kvpress's predictions with `ruler score`.\n") in card
    for ruler_only in ("RULER task", "RULER dataset", "RULER rows", "loads RULER",
                       "RULER schema", "needles"):
        assert ruler_only not in card, ruler_only


@pytest.mark.build
def test_a_oneruler_export_names_its_language_configs_tasks_kvpress_would_score_otherwise(
        tmp_path, capsys):
    """ONERULER's rows record their own metric (`oneruler`, keyed by the build's language):
    kvpress would score them with string_match_all, and the export says so for each task."""
    from ruler.benchmarks.oneruler.languages import OnerulerLanguage

    data = tmp_path / "ruler"
    build(data, "llama-3.1", ("or_niah_single", "or_niah_none"), (1024,), 1,
          axes={"language": OnerulerLanguage.parse("ko")}, benchmark="oneruler")
    code, text = _export(capsys, data, "--out", tmp_path / "kv")
    assert code == 0, text
    assert [line for line in text.splitlines() if "kvpress would score" in line] == [
        f"note: kvpress would score {t} with string_match_all; these rows' metric is "
        f"oneruler: score kvpress's predictions with `ruler score`"
        for t in ("or_niah_single", "or_niah_none")]
    card = (tmp_path / "kv" / "README.md").read_text()
    assert "\n# ONERULER for kvpress: `llama-3.1--oneruler-ko`, 1024\n" in card
    assert "- kvpress would score `or_niah_none` with `string_match_all`; these rows' metric is " \
           "`oneruler`" in card
    meta = json.loads((tmp_path / "kv" / kx.METADATA_NAME).read_text())
    assert set(meta["kvpress_scores_otherwise"]) == {"or_niah_single", "or_niah_none"}


def test_kvpress_scoring_is_kvpress_rule_on_the_task_name_against_the_rows_metric():
    """A task named with kvpress's word (`qa`) whose rows record string_match_all, one named
    otherwise whose rows record string_match_part, and one whose rows record two metrics: kvpress
    would score each with another metric; tasks whose rows record kvpress's pick are not named."""
    e = kx.KvpressExport(Path("/kv"), {}, "c", metrics={
        "qa_like": {"string_match_all"}, "quiz_qa": {"string_match_part"},
        "qa": {"string_match_part"}, "mixed": {"string_match_all", "toy_exact"},
        "plain": {"string_match_all"}})
    assert e.kvpress_scores_otherwise() == {
        "qa_like": {"kvpress": "string_match_part", "rows": ["string_match_all"]},
        "quiz_qa": {"kvpress": "string_match_all", "rows": ["string_match_part"]},
        "mixed": {"kvpress": "string_match_all", "rows": ["string_match_all", "toy_exact"]}}
    assert e.kvpress_scoring_notes()[2] == (
        "kvpress would score mixed with string_match_all; these rows' metrics are "
        "string_match_all, toy_exact: score kvpress's predictions with `ruler score`")


@pytest.mark.build
def test_a_base_tokenizer_keeps_the_prefix_and_the_card_names_kvpress_newline(tmp_path,
                                                                            capsys):
    data = tmp_path / "ruler"
    build(data, "gpt-4", ("vt",), (2048,), 2, workers=1)
    code, text = _export(capsys, data, "--out", tmp_path / "kv")
    assert code == 0, text
    got = _load(tmp_path / "kv", tmp_path, data_dir="2048").to_list()
    assert [r["answer_prefix"] for r in got] == [r["answer_prefix"]
                                                 for r in rows(data, "gpt-4", "vt", 2048)]
    card = (tmp_path / "kv" / "README.md").read_text()
    assert "has no chat template: kvpress's prompt is BOS + `context` + `question` + " \
           "\"\\n\" + `answer_prefix`" in card


@pytest.mark.build
def test_the_reasoning_variant_exports_no_prefix_and_its_budget(data, tmp_path, capsys):
    code, text = _export(capsys, data, "--out", tmp_path / "kv", "--tokenizer-config",
                         "qwen2.5--out256")
    assert code == 0, text
    got = _load(tmp_path / "kv", tmp_path, data_dir="4096").to_list()
    assert len(got) == 4 and {r["answer_prefix"] for r in got} == {""}
    assert {r["max_new_tokens"] for r in got} == {256}
    card = (tmp_path / "kv" / "README.md").read_text()
    assert "prompt mode reasoning, output_budget = 256" in card and "enable_thinking=True" in card


@pytest.mark.build
def test_a_calibration_subset_and_predictions_keyed_from_it_score_in_ruler(data, tmp_path,
                                                                          capsys):
    out = tmp_path / "calib"
    code, text = _export(capsys, data, "--out", out, "--tokenizer-config", "qwen2.5",
                         "--tasks", "niah_single_1,cwe", "--lengths", "8192", "--limit", "2")
    assert code == 0, text
    assert sorted(p.name for p in out.iterdir()) == sorted(["8192", "README.md",
                                                           kx.METADATA_NAME, RECORD_NAME])
    got = _load(out, tmp_path, data_dir="8192").to_list()
    assert [(r["task"], r["index"]) for r in got] == [("niah_single_1", 0), ("niah_single_1", 1),
                                                      ("cwe", 0), ("cwe", 1)]
    card = (out / "README.md").read_text()
    score = (f"ruler score --predictions predictions-knorm.jsonl --data {data.resolve()} "
             f"--tokenizer-config qwen2.5 --lengths 8192 --tasks niah_single_1,cwe --limit 2")
    assert score in card and "- rows: the first 2 rows of each task and length" in card
    # predictions keyed by the exported key columns and tied to their rows by the digest of
    # ruler's input (context + question), as the card's script writes them
    preds = tmp_path / "predictions-knorm.jsonl"
    preds.write_text("".join(json.dumps({**{k: r[k] for k in ("tokenizer", "task",
                                                                  "max_seq_length", "index")},
                                         "input_sha256": hashlib.sha256(
                                             (r["context"] + r["question"]).encode()).hexdigest(),
                                         "prediction": " ".join(r["answer"])}) + "\n"
                             for r in got))
    argv = score.split()[1:]
    argv[argv.index("--predictions") + 1] = str(preds)
    assert main([*argv, "--out", str(tmp_path / "scores"), "--strict"]) == 0
    scores = json.loads((tmp_path / "scores" / "scores.json").read_text())
    assert [(c["task"], c["score"], c["scored"]) for c in scores["cells"]] == [
        ("niah_single_1", 100.0, 2), ("cwe", 100.0, 2)]


@pytest.mark.build
@pytest.mark.network
def test_an_export_from_a_hub_revision_names_it(data, tmp_path, capsys, monkeypatch):
    from helpers.fake_hub import hub_for_this_process
    from ruler.release import release

    repo = "ruler-org/kvpress-src"
    with hub_for_this_process(tmp_path, "hf_loopbackSecretToken123", monkeypatch) as hub:
        release(data, repo, tag="v1", allow_unofficial=True, echo=lambda *a: None)
        tagged = hub.repos[repo].head.sha
        hub.apply_commit(hub.repos[repo], "later", {"README.md": b"moved on"}, ["data/"])
        code, text = _export(capsys, repo, "--revision", "v1", "--out", tmp_path / "kv",
                             "--tokenizer-config", "qwen2.5", "--lengths", "4096")
    assert code == 0, text
    card = (tmp_path / "kv" / "README.md").read_text()
    assert f"- source: Hub dataset `{repo}` at commit `{tagged}` (`v1`)" in card
    assert f"--data {repo} --revision v1 --tokenizer-config qwen2.5 --lengths 4096" in card
    got = _load(tmp_path / "kv", tmp_path, data_dir="4096").to_list()
    assert [r["question"] for r in got] == [r["question"] for t in TASKS
                                            for r in rows(data, "qwen2.5", t, 4096)]


@pytest.mark.build
def test_refusals_are_one_line(data, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    code, text = _export(capsys, data, "--out", other, "--tokenizer-config", "qwen2.5")
    assert code == 2 and "is not a kvpress export of ruler" in text
    assert (other / "notes.txt").read_text() == "mine"
    code, text = _export(capsys, data, "--out", tmp_path / "kv")
    assert code == 2 and "choose one with --tokenizer-config" in text
    code, text = _export(capsys, data, "--out", tmp_path / "kv", "--tokenizer-config",
                         "qwen2.5", "--limit", "0")
    assert code == 2 and "--limit must be >= 1" in text
    assert not (tmp_path / "kv").exists()
    # an earlier export is replaced whole
    assert _export(capsys, data, "--out", tmp_path / "kv", "--tokenizer-config", "qwen2.5",
                   "--lengths", "4096")[0] == 0
    assert _export(capsys, data, "--out", tmp_path / "kv", "--tokenizer-config", "qwen2.5",
                   "--lengths", "8192")[0] == 0
    assert sorted(p.name for p in (tmp_path / "kv").iterdir()) == sorted([
        "8192", "README.md", kx.METADATA_NAME, RECORD_NAME])
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".kv")]


@pytest.mark.build
def test_a_build_older_than_the_prompt_parts_says_what_to_do(tmp_path, capsys):

    from ruler.builder.schema import ROW_SCHEMA

    data = tmp_path / "ruler"
    build(data, "gpt-4", ("vt",), (2048,), 2, workers=1)
    path = data / "data/gpt-4/vt/2048.parquet"
    old = pq.read_table(path).drop_columns(["context", "question"])
    pq.write_table(old, path)
    code, text = _export(capsys, data, "--out", tmp_path / "kv")
    assert code == 2 and "rows have no context and question column(s): written by a ruler " \
                         "older than 0.2.0" in text, text
    assert "Traceback" not in text and len(ROW_SCHEMA) == len(old.schema) + 2


@pytest.mark.build
def test_the_build_card_shows_the_kvpress_export(data):
    card = (data / "README.md").read_text()
    assert "## Use with kvpress" in card
    assert "ruler export kvpress OUT --out ruler-kvpress" in card


def test_the_export_command_is_listed(capsys):
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    assert "kvpress" in capsys.readouterr().out


def test_the_card_says_what_is_known_of_a_pinned_tokenizers_revision():
    """A registry pin without a recorded Hub commit (mistral-nemo's): the export's card says
    its files are pinned by hash, never "@None" (issue 30.15g)."""
    tok = {"name": "mistral-nemo", "kind": "hf", "repo": "mistralai/Mistral-Nemo-Instruct-2407",
           "revision": None, "pinned": True}
    source = {"dataset": "/data/ruler", "revision": None, "revision_asked": None,
              "manifest_sha256": "0" * 64, "generator": {"name": "ruler-bench", "version": "1"},
              "config": "mistral-nemo", "tokenizer": tok, "prompt_mode": "chat", "variant": {},
              "seed": 42, "samples": 2, "official": True}
    card = kx.render_card(kx.KvpressExport(
        Path("/data/kv"), source, "mistral-nemo", lengths={4096: 2}, tasks=["vt"],
        build_tasks=["vt"], tokens={"checked": 1, "mismatched": [], "template": True}))
    assert "@None" not in card
    assert ("- tokenizer: `mistral-nemo` (mistralai/Mistral-Nemo-Instruct-2407, files pinned by "
            "sha256; Hub commit not recorded)") in card


def test_the_card_shows_user_supplied_strings_as_themselves():
    """Issue 40 #19: the build's folder (any path), the tokenizer's origin and a mismatched
    row's key show as themselves in the export's card; the score command quotes the folder."""
    from helpers.markdown_check import HOSTILE, check_markdown

    tok = {"name": "my-tok", "kind": "hf", "repo": f"org/{HOSTILE}", "revision": None,
           "pinned": False}
    folder = f"/data/{HOSTILE}"
    source = {"dataset": folder, "revision": None, "revision_asked": None,
              "manifest_sha256": "0" * 64, "generator": {"name": "ruler-bench", "version": "1"},
              "config": "my-tok", "tokenizer": tok, "prompt_mode": "chat", "variant": {},
              "seed": 42, "samples": 2, "official": False}
    card = kx.render_card(kx.KvpressExport(
        Path("/data/kv"), source, "my-tok", lengths={4096: 2}, tasks=["vt"],
        build_tasks=["vt"], tokens={"checked": 1, "mismatched": [f"{HOSTILE}#0"],
                                    "template": True}))
    # the Markdown outside the code blocks (a command in one is the shell's to read)
    body = "".join(card.split("---\n", 2)[2].split("```")[::2])
    check_markdown(body, folder, f"org/{HOSTILE}", f"{HOSTILE}#0")
    assert body.count(HOSTILE) == 0
    import shlex

    assert f"--data {shlex.quote(folder)} --tokenizer-config my-tok" in card
