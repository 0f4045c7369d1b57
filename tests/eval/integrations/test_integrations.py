"""Other frameworks, fast tier: the lm-eval export's files, its utils.py, the prompts lm-eval
builds from them, `ruler score` on lm-eval samples and Inspect logs' records, the Inspect
dataset and metric, the card sections. The engines run in test_integrations_lm_eval.py and
test_integrations_inspect.py (slow)."""

from __future__ import annotations

import ast
import hashlib
import inspect as pyinspect
import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from helpers.builds import rows
from ruler.benchmarks.ruler.metrics import row_match_all, row_match_part
from ruler.builder.manifest import Manifest
from ruler.cards.render import render_card
from ruler.catalog.tasks import TASKS
from ruler.commands.main import main
from ruler.eval.integrations import lm_eval_export as ex
from ruler.eval.integrations.export_folder import RECORD_NAME
from ruler.eval.metrics import specs as metrics
from ruler.eval.records.dataset import open_dataset
from ruler.eval.scoring.score import score_file
from ruler.kernel.errors import RulerError

CONFIG = "qwen2.5"
TASKS_BUILT = ("niah_single_1", "vt", "qa_1")
L = 1024


@pytest.fixture(scope="module")
def data(built_qwen_three, tmp_path_factory) -> Path:
    """A copy of CONFIG: TASKS_BUILT x L x 3 samples (conftest): `ruler export lm-eval`
    writes lm_eval/ into the build."""
    folder = tmp_path_factory.mktemp("integrations") / "ruler"
    return Path(shutil.copytree(built_qwen_three, folder))


class _Loader(yaml.SafeLoader):
    """Reads `!function x.y` back as ("!function", "x.y")."""


_Loader.add_constructor("!function", lambda loader, node: ("!function",
                                                           loader.construct_scalar(node)))


def load(text: str) -> dict:
    return yaml.load(text, Loader=_Loader)


# --- the exported files --------------------------------------------------------------------------

@pytest.mark.build
def test_one_task_per_split_file_with_ruler_prompt_fields_and_budget(data):
    manifest = Manifest.load(data)
    files = ex.export_files(manifest, ex.local_source(data))
    assert set(files) == {f"ruler_{CONFIG}_{t}_{L}.yaml" for t in TASKS_BUILT} | {
        f"ruler_{CONFIG}_{L}.yaml", f"ruler_{CONFIG}.yaml", "ruler_all.yaml", "utils.py",
        "ruler_data.py", "README.md"}
    for task in TASKS_BUILT:
        rel = f"data/{CONFIG}/{task}/{L}.parquet"
        text = files[f"ruler_{CONFIG}_{task}_{L}.yaml"]
        cfg = load(text)
        assert cfg["task"] == f"ruler_{CONFIG}_{task}_{L}"
        # the build folder relative to the task folder (OUT/lm_eval), read by ruler_data.py
        assert "dataset_path" not in cfg
        assert cfg["custom_dataset"] == ("!function", "ruler_data.load_split")
        assert cfg["dataset_kwargs"] == {"build": "..", "data_files": {str(L): rel}}
        assert cfg["test_split"] == str(L) and f"test_split: '{L}'" in text  # quoted split
        assert (cfg["output_type"], cfg["doc_to_text"], cfg["gen_prefix"],
                cfg["target_delimiter"]) == ("generate_until", "input", "answer_prefix", "")
        assert cfg["generation_kwargs"] == {
            "until": [], "do_sample": False, "temperature": 0.0,
            "max_gen_toks": TASKS[task].tokens_to_generate}
        assert cfg["process_results"] == ("!function", "utils.process_results")
        assert cfg["metric_list"] == [{"metric": "score", "higher_is_better": True,
                                       "aggregation": ("!function", "utils.aggregate")}]
        meta = cfg["metadata"]["ruler"]
        assert meta["content_sha256"] == manifest.file(rel).content_sha256
        assert (meta["metric"], meta["prompt_mode"]) == (TASKS[task].metric, "chat")
        # the budget every row of the file carries is the task's
        assert {r["tokens_to_generate"] for r in rows(data, CONFIG, task, L)} == {
            cfg["generation_kwargs"]["max_gen_toks"]}


@pytest.mark.build
def test_every_yaml_file_is_a_yaml_dump_never_hand_formatted(data):
    files = ex.export_files(Manifest.load(data), ex.TaskSource("org/ruler", "v1"))
    for name, text in files.items():
        if name.endswith(".yaml"):
            back = {k: (ex.Function(v[1]) if isinstance(v, tuple) else v)
                    for k, v in load(text).items()}
            for m in back.get("metric_list", []):
                m["aggregation"] = ex.Function(m["aggregation"][1])
            assert ex.dump_yaml(back) == text, name


@pytest.mark.build
def test_local_export_names_the_build_relative_to_the_task_folder(data, tmp_path):
    """No absolute path to the build unless asked (`--absolute`): the folder keeps working when
    the build is moved or copied whole (run for real in test_integrations_lm_eval.py)."""
    def builds(folder: Path) -> set:
        texts = {p.name: p.read_text() for p in folder.iterdir()}
        for root in {str(data), str(data.resolve())}:
            assert all(root not in t for n, t in texts.items() if n != "README.md"), root
        return {load(t)["dataset_kwargs"]["build"] for n, t in texts.items()
                if n.startswith(f"ruler_{CONFIG}_") and "dataset_kwargs" in load(t)}

    assert main(["export", "lm-eval", str(data)]) == 0
    assert builds(data / "lm_eval") == {".."}
    elsewhere = tmp_path / "tasks" / "ruler"
    assert main(["export", "lm-eval", str(data), "--to", str(elsewhere)]) == 0
    (rel,) = builds(elsewhere)
    assert (elsewhere / rel).resolve() == data.resolve() and not Path(rel).is_absolute()
    assert main(["export", "lm-eval", str(data), "--to", str(elsewhere), "--absolute"]) == 0
    texts = [p.read_text() for p in elsewhere.glob(f"ruler_{CONFIG}_*_{L}.yaml")]
    assert texts and all(f"build: {data.resolve()}" in t for t in texts)
    assert main(["export", "lm-eval", str(data), "--repo", "org/ruler", "--revision", "v1",
                 "--absolute"]) == 2  # a Hub export names no folder


@pytest.mark.build
def test_hub_export_loads_the_release_revision(data):
    files = ex.export_files(Manifest.load(data), ex.TaskSource("org/ruler", "v1"))
    cfg = load(files[f"ruler_{CONFIG}_vt_{L}.yaml"])
    assert cfg["dataset_path"] == "org/ruler"
    assert cfg["dataset_kwargs"] == {"data_files": {str(L): f"data/{CONFIG}/vt/{L}.parquet"},
                                     "revision": "v1"}
    assert cfg["metadata"]["ruler"]["dataset"] == "org/ruler@v1"


@pytest.mark.build
def test_groups_per_length_per_config_and_all(data):
    manifest = Manifest.load(data)
    manifest.put_build("gpt-4", manifest.build(CONFIG))
    for e in list(manifest.files.values()):  # a second length and a second config
        for config, length in (("qwen2.5", 2048), ("gpt-4", 1024)):
            manifest.put_file(replace(e, config=config, max_seq_length=length))
    files = ex.export_files(manifest, ex.TaskSource("org/ruler", "v1"))
    group = {n: load(t) for n, t in files.items() if n.endswith(".yaml") and "group" in load(t)}
    order = [f"ruler_{CONFIG}_{t}_2048" for t in TASKS_BUILT]  # upstream's task order
    assert group["ruler_qwen2.5_2048.yaml"]["task"] == order
    assert group["ruler_qwen2.5.yaml"]["task"] == ["ruler_qwen2.5_1024", "ruler_qwen2.5_2048"]
    assert group["ruler_gpt-4.yaml"]["task"] == ["ruler_gpt-4_1024"]
    assert group["ruler_all.yaml"]["task"] == ["ruler_gpt-4", "ruler_qwen2.5"]
    for g in group.values():
        assert g["aggregate_metric_list"] == [{"metric": "score", "aggregation": "mean",
                                               "weight_by_size": False}]


# --- utils.py ------------------------------------------------------------------------------------

CASES = [  # upstream's quirks included: substring without word boundaries, duplicate refs
    ("string_match_all", " The party was 42.", ["art", "42", "43"]),
    ("string_match_all", "\x01 ART and art\n", ["art", "art"]),
    ("string_match_all", "nothing", ["x"]),
    ("string_match_all", "", ["a", "b", "c"]),
    ("string_match_part", " Paris, France", ["paris", "Lyon", "France", "Nice"]),
    ("string_match_part", "Lyon", ["Paris"]),
    ("string_match_part", " 1 2 3", ["3", "4", "5", "6"]),
]


@pytest.mark.build
@pytest.mark.subprocess
def test_utils_py_is_ruler_metric_code_and_needs_only_the_standard_library(data, tmp_path):
    folder = ex.write_export(ex.export_files(Manifest.load(data), ex.local_source(data)),
                             tmp_path / "tasks")
    text = (folder / "utils.py").read_text()
    for fn in (metrics.postprocess_pred, row_match_all, row_match_part,
               metrics.score_of_rows):
        assert pyinspect.getsource(fn) in text  # generated from ruler's own code
    imports = {a.name if isinstance(n, ast.Import) else n.module
               for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.Import, ast.ImportFrom))
               for a in n.names}
    # typing: the copied annotations; unicodedata: ONERULER's NFKC and letter classes
    assert imports <= {"__future__", "re", "typing", "unicodedata"}
    # run it with no site-packages at all (-S): no ruler, no lm_eval
    code = (f"import json, sys; sys.path.insert(0, {str(folder)!r}); import utils\n"
            f"cases = json.loads(sys.stdin.read()); out = {{}}\n"
            f"for m in ('string_match_all', 'string_match_part'):\n"
            f"    rows = [utils.process_results({{'metric': m, 'outputs': r}}, [p])['score']\n"
            f"            for mm, p, r in cases if mm == m]\n"
            f"    out[m] = utils.aggregate(rows)\n"
            f"print(json.dumps(out))")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], input=json.dumps(CASES),
                          capture_output=True, text=True, check=True)
    got = json.loads(done.stdout)
    for m in ("string_match_all", "string_match_part"):
        preds = [p for mm, p, _ in CASES if mm == m]
        refs = [r for mm, _, r in CASES if mm == m]
        assert got[m] == metrics.task_score(m, preds, refs)  # the number `ruler score` gives
    assert got == {"string_match_all": 41.67, "string_match_part": 66.67}


# NeMo-Skills' RULERv2 metrics on the raw generation (tests/eval/test_metrics_ruler2.py)
RULER2_CASES = [
    ("ruler2_all", "alpha beta gamma", ["111", "alpha beta gamma delta"]),
    ("ruler2_all", "values: 111, 222 and 333 here", ["111", "222", "333", "444"]),
    ("ruler2_2steps", "Question 1: what is X?\n\nQuestion 1: what is Y?", ["what is X?"]),
    ("ruler2_2steps", "copy\n\nX 1", ["X 1"]),
    ("ruler2_part", "Document 3:\nTitle\nsome text 1975\n\nThe answer is 1976", ["1975"]),
    ("ruler2_part", "Paris France", ["xyz", "Paris, France"]),
    ("multichoice", "First \\boxed{A}, on reflection \\boxed{B}.", ["B"]),
    ("multichoice", "\\fbox{C}", ["C"]),
    ("multichoice", "Answer: A\nNo wait.\n**Answer:** c", ["C"]),
]


@pytest.mark.build
@pytest.mark.subprocess
def test_utils_py_scores_ruler2_rows_as_ruler_score_does(data, tmp_path):
    folder = ex.write_export(ex.export_files(Manifest.load(data), ex.local_source(data)),
                             tmp_path / "tasks")
    code = (f"import json, sys; sys.path.insert(0, {str(folder)!r}); import utils\n"
            f"cases = json.loads(sys.stdin.read()); out = {{}}\n"
            f"for m in sorted({{m for m, _, _ in cases}}):\n"
            f"    rows = [utils.process_results({{'metric': m, 'outputs': r}}, [p])['score']\n"
            f"            for mm, p, r in cases if mm == m]\n"
            f"    out[m] = utils.aggregate_ruler2(rows)\n"
            f"print(json.dumps(out))")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code],
                          input=json.dumps(RULER2_CASES), capture_output=True, text=True,
                          check=True)
    got = json.loads(done.stdout)
    for m in got:
        preds = [p for mm, p, _ in RULER2_CASES if mm == m]
        refs = [r for mm, _, r in RULER2_CASES if mm == m]
        assert got[m] == metrics.task_score(m, preds, refs)
    # the hand-worked values of tests/eval/test_metrics_ruler2.py: (0.375 + 0.75) / 2, (0 + 1)
    # / 2, (0 + 0.5) / 2, (1 + 0 + 1) / 3
    assert got == {"ruler2_all": 56.25, "ruler2_2steps": 50.0, "ruler2_part": 25.0,
                   "multichoice": 100 * 2 / 3}


# ONERULER's metrics (tests/eval/test_metrics_oneruler.py): (metric, task, language, prediction,
# references); a row's task and the language its build records (utils.py's METRIC_KEYS of its
# config: here configs whose names say nothing of it) reach the metric
ONERULER_CASES = [
    ("oneruler", "or_niah_single", "en", "2,867,825", ["2867825"]),
    ("oneruler", "or_niah_single", "ru", "«планета» - это 2867825", ["2867825"]),
    ("oneruler", "or_niah_none", "zh", "无法找到", ["无"]),
    ("oneruler", "or_niah_none", "en-ko", "없음", ["없음"]),
    ("oneruler", "or_cwe", "en", "apple start", ["apple", "art"]),
    ("oneruler_corrected", "or_niah_single", "en", "2,867,825", ["2867825"]),
    ("oneruler_corrected", "or_niah_single", "ru", "«планета» - это 2867825", ["2867825"]),
    ("oneruler_corrected", "or_niah_none", "zh", "无法找到", ["无"]),
    ("oneruler_corrected", "or_niah_none", "en-ko", "없음", ["없음"]),
    ("oneruler_corrected", "or_cwe", "en", "apple start", ["apple", "art"]),
]


@pytest.mark.build
def test_utils_py_scores_oneruler_rows_as_ruler_score_does(data, tmp_path):
    folder = ex.write_export(ex.export_files(Manifest.load(data), ex.local_source(data)),
                             tmp_path / "tasks")
    code = (f"import json, sys; sys.path.insert(0, {str(folder)!r}); import utils\n"
            f"cases = json.loads(sys.stdin.read())\n"
            f"utils.METRIC_KEYS.update({{f'build{{n}}': g for n, (m, t, g, p, r) in "
            f"enumerate(cases)}})\n"
            f"print(json.dumps([utils.process_results({{'metric': m, 'task': t, "
            f"'tokenizer': f'build{{n}}', 'outputs': r}}, [p])['score'] "
            f"for n, (m, t, g, p, r) in enumerate(cases)]))")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code],
                          input=json.dumps(ONERULER_CASES), capture_output=True, text=True,
                          check=True)
    got = json.loads(done.stdout)
    assert got == [metrics.row_score(m, p, r, t, g) for m, t, g, p, r in ONERULER_CASES]
    # upstream: separators split the number, нет inside планета, 无 inside 无法, ko's
    # none-word in an en-ko config, art inside start; corrected: the opposite but for 없음
    assert got == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0]


def _unbound_names(source: str) -> set[str]:
    """Names the module reads (annotations included) that nothing in it binds and that are no
    builtins: pyflakes' "undefined name", over-approximating scopes (any binding anywhere)."""
    import builtins

    tree = ast.parse(source)
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return {n for n in read - bound if not hasattr(builtins, n)}


@pytest.mark.build
@pytest.mark.subprocess
def test_utils_py_imports_every_name_it_uses(data, tmp_path):
    """Every name utils.py reads is defined or imported in it, annotations included: a fresh
    interpreter with no site-packages resolves every function's type hints and runs each one."""
    folder = ex.write_export(ex.export_files(Manifest.load(data), ex.local_source(data)),
                             tmp_path / "tasks")
    text = (folder / "utils.py").read_text()
    assert _unbound_names(text) == set()
    code = (f"import inspect, sys, typing; sys.path.insert(0, {str(folder)!r}); import utils\n"
            f"fns = [f for _, f in inspect.getmembers(utils, inspect.isfunction)\n"
            f"       if f.__module__ == 'utils']\n"
            f"for f in fns:\n"
            f"    typing.get_type_hints(f)\n"
            f"print(json.dumps([utils.postprocess_pred(' a\\x01b '),\n"
            f"    utils.row_match_all('x y', ['x', 'z']), utils.row_match_part('x', ['y', 'X']),\n"
            f"    utils.score_of_rows([1.0, 0.5]), utils.aggregate([0.0, 1.0]),\n"
            f"    utils.process_results({{'metric': 'string_match_part', 'outputs': ['b']}},\n"
            f"                          ['a b']), len(fns)]))")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", "import json\n" + code],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == ["a\nb", 0.5, 1.0, 75.0, 50.0, {"score": 1.0}, 39]


# --- lm-eval reads the folder and builds RULER's prompts -----------------------------------------

@pytest.mark.engines
def test_lm_eval_builds_the_prompts_ruler_eval_counts(data, tmp_path):
    pytest.importorskip("lm_eval")
    """lm-eval's own task loading: the text it sends is the builder's chat rendering (with
    --apply_chat_template) or `input + answer_prefix` (without)."""
    from lm_eval.tasks import TaskManager, get_task_dict

    from ruler.builder.tokenizer_registry import load_tokenizer

    folder = ex.export_lm_eval(data, tmp_path / "tasks")
    tm = TaskManager(include_path=str(folder), include_defaults=False)
    assert {f"ruler_{CONFIG}_{t}_{L}" for t in TASKS_BUILT} | {
        f"ruler_{CONFIG}_{L}", f"ruler_{CONFIG}", "ruler_all"} <= set(tm.all_tasks)
    tok = load_tokenizer(CONFIG)

    def chat_template(history, add_generation_prompt=True):  # what lm-eval's hf model does
        return tok.hf.apply_chat_template(history, tokenize=False,
                                          add_generation_prompt=add_generation_prompt,
                                          continue_final_message=not add_generation_prompt)

    tasks = get_task_dict([f"ruler_{CONFIG}_qa_1_{L}"], tm)
    task = next(iter(tasks.values()))
    docs = list(task.test_docs())
    assert [d["index"] for d in docs] == [0, 1, 2]
    for doc in docs:
        prefix = task.doc_to_prefix(doc)  # lm-eval passes it when it builds the request
        base = task.fewshot_context(doc, 0, gen_prefix=prefix)
        assert base == doc["input"] + doc["answer_prefix"]
        chat = task.fewshot_context(doc, 0, apply_chat_template=True,
                                    chat_template=chat_template, gen_prefix=prefix)
        assert chat == tok.render_chat(doc["input"], doc["answer_prefix"])
        assert len(tok.encode(chat)) + doc["tokens_to_generate"] == doc["length"]
        assert task.process_results(doc, [" " + doc["outputs"][-1]]) == {"score": 1.0}


# --- the CLI -------------------------------------------------------------------------------------

@pytest.mark.build
def test_export_cli_writes_replaces_and_refuses_bad_input(data, tmp_path, capsys):
    to = tmp_path / "tasks"
    assert main(["export", "lm-eval", str(data), "--to", str(to)]) == 0
    assert (to / "utils.py").is_file() and (to / f"ruler_{CONFIG}_{L}.yaml").is_file()
    # a task an earlier export wrote (of a build that had it), recorded as its own file
    stale = to / "ruler_stale_task.yaml"
    stale.write_text("task: stale\n")
    record = json.loads((to / RECORD_NAME).read_text())
    record["files"][stale.name] = hashlib.sha256(stale.read_bytes()).hexdigest()
    (to / RECORD_NAME).write_text(json.dumps(record))
    assert main(["export", "lm-eval", str(data), "--to", str(to), "--repo", "org/ruler",
                 "--revision", "v1"]) == 0
    assert not (to / "ruler_stale_task.yaml").exists()
    assert "revision: v1" in (to / f"ruler_{CONFIG}_vt_{L}.yaml").read_text()
    capsys.readouterr()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    for argv, message in (
            ([str(data), "--repo", "org/ruler"], "--repo and --revision go together"),
            ([str(data), "--repo", "bad repo", "--revision", "v1"], "invalid repo id"),
            ([str(tmp_path), "--to", str(to)], "is not a ruler build"),
            ([str(data), "--to", str(foreign)], "is not an lm-eval export of ruler")):
        assert main(["export", "lm-eval", *argv]) == 2
        assert message in capsys.readouterr().err
    assert (foreign / "notes.txt").read_text() == "keep"
    assert not list(tmp_path.glob(".*"))  # no temporary folder left behind


# --- ruler score on lm-eval samples --------------------------------------------------------------

def _lm_eval_output(folder: Path, data: Path, answer, sha: str | None = None,
                    date: str = "2026-01-02T03-04-05.678901",
                    generation: dict | None = None) -> Path:
    """lm-eval's --log_samples layout: a samples file per task and the run's results file."""
    run = folder / "my__model"
    run.mkdir(parents=True)
    manifest = Manifest.load(data)
    configs = {}
    for task in TASKS_BUILT:
        name = ex.task_name(CONFIG, task, L)
        lines = [{"doc_id": i, "doc": r, "target": str(r["outputs"]), "arguments": {},
                  "resps": [[answer(r)]], "filtered_resps": [answer(r)], "filter": "none",
                  "metrics": ["score"], "score": 0.0}
                 for i, r in enumerate(rows(data, CONFIG, task, L)[:2])]  # --limit 2
        (run / f"samples_{name}_{date}.jsonl").write_text(
            "".join(json.dumps(x) + "\n" for x in lines))
        meta = load(ex.export_files(manifest, ex.local_source(data))[f"{name}.yaml"])["metadata"]
        if sha:
            meta["ruler"]["content_sha256"] = sha
        configs[name] = {"task": name, "metadata": meta}
        if generation is not None:
            configs[name]["generation_kwargs"] = generation
    (run / f"results_{date}.json").write_text(json.dumps({
        "configs": configs, "config": {"model_args": {"pretrained": "my/model"}, "limit": 2.0},
        "model_name": "my/model"}))
    return folder


@pytest.mark.build
def test_score_reads_lm_eval_output_folder_and_samples_files(data, tmp_path):
    ds = open_dataset(str(data))
    out = _lm_eval_output(tmp_path / "lm", data, lambda r: " " + " ".join(r["outputs"]))
    report = score_file(out, ds)
    assert [(c.task, c.score, c.scored, c.rows) for c in report.cells] == [
        (t, 100.0, 2, 2) for t in TASKS_BUILT]  # --limit 2 of the run: 2 rows expected
    assert report.model == "my/model" and report.missing == [] and report.unknown == []
    one = next(out.rglob(f"samples_{ex.task_name(CONFIG, 'vt', L)}_*.jsonl"))
    assert [c.task for c in score_file(one, ds, tasks=("vt",)).cells] == ["vt"]
    # Without --tasks the whole config was asked for: the other tasks are missing, listed.
    whole = score_file(one, ds)
    assert not whole.complete and whole.incomplete_cells == [f"niah_single_1/{L}", f"qa_1/{L}"]
    _lm_eval_output(tmp_path / "lm" / "again", data, lambda r: "x", date="2026-02-03T00-00-00.0")
    with pytest.raises(RulerError, match=f"ran task {ex.task_name(CONFIG, 'niah_single_1', L)} "
                                         f"2 times"):
        score_file(out, ds)


@pytest.mark.build
def test_score_reads_lm_eval_s_generation_settings_into_the_health_section(data, tmp_path):
    """A --gen_kwargs max_gen_toks=8 override, as the results file records it: every task's
    cap below RULER's budget is a problem the health section names."""
    from ruler.eval.metrics.health import flags

    out = _lm_eval_output(tmp_path / "lm", data, lambda r: " " + " ".join(r["outputs"]),
                          generation={"until": [], "do_sample": False, "temperature": 0.0,
                                      "max_gen_toks": 8})
    health = score_file(out, open_dataset(str(data))).health
    assert health.framework == "lm-eval" and health.temperature == 0.0
    assert health.max_tokens_by_task == {t: 8 for t in TASKS_BUILT}
    (settings,) = [f for f in flags(health) if f.check == "Generation settings"]
    assert settings.status == "problem" and settings.finding.startswith(
        "output capped below RULER's budget at 8 token(s) for niah, vt, qa")


@pytest.mark.build
def test_score_refuses_lm_eval_samples_of_another_revision_or_generator(data, tmp_path):
    ds = open_dataset(str(data))
    out = _lm_eval_output(tmp_path / "lm", data, lambda r: "x", sha="0" * 64)
    with pytest.raises(RulerError, match="different revision of the dataset"):
        score_file(out, ds)
    builtin = tmp_path / "builtin" / "m"
    builtin.mkdir(parents=True)
    doc = {"index": 0, "input": "...", "outputs": ["1"], "length": 10, "max_length": 4096,
           "gen_prefix": "The special magic number is"}
    (builtin / "samples_niah_single_1_2026-01-02T03-04-05.678901.jsonl").write_text(
        json.dumps({"doc": doc, "filtered_resps": ["1"], "filter": "none"}) + "\n")
    with pytest.raises(RulerError, match="lm-eval's built-in `ruler` tasks"):
        score_file(builtin.parent, ds)
    (tmp_path / "empty").mkdir()
    with pytest.raises(RulerError, match="without lm-eval samples"):
        score_file(tmp_path / "empty", ds)


@pytest.mark.build
def test_lm_eval_samples_with_a_non_integer_length_are_one_clear_error(data, tmp_path, capsys):
    out = _lm_eval_output(tmp_path / "lm", data, lambda r: " " + " ".join(r["outputs"]))
    samples = next(out.rglob(f"samples_{ex.task_name(CONFIG, 'vt', L)}_*.jsonl"))
    lines = samples.read_text().splitlines()
    for bad in ("1024x", 1024.5, None, True):
        sample = json.loads(lines[1])
        sample["doc"]["max_seq_length"] = bad
        samples.write_text("\n".join([lines[0], json.dumps(sample), *lines[2:]]) + "\n")
        assert main(["score", "--no-plots", "--predictions", str(out), "--data", str(data),
                     "--out", str(tmp_path / "scores")]) == 2
        err = capsys.readouterr().err
        assert f"{samples}:2" in err and f"max_seq_length {bad!r} is not an integer" in err, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    samples.write_text("\n".join(lines) + "\n")
    (results,) = samples.parent.glob("results_*.json")
    run = json.loads(results.read_text())
    next(iter(run["configs"].values()))["metadata"]["ruler"]["max_seq_length"] = "1k"
    results.write_text(json.dumps(run))
    assert main(["score", "--no-plots", "--predictions", str(out), "--data", str(data),
                 "--out", str(tmp_path / "scores")]) == 2
    err = capsys.readouterr().err
    assert f"{results}" in err and "max_seq_length '1k' is not an integer" in err, err
    assert not (tmp_path / "scores").exists()


# --- Inspect: the dataset, the metric, the log reader --------------------------------------------

@pytest.mark.engines
def test_inspect_samples_carry_the_row_key_budget_and_content_hash(data):
    pytest.importorskip("inspect_ai")
    from ruler.eval.integrations.inspect_task import ruler_samples

    samples, prov = ruler_samples(str(data), tasks="vt,qa_1", lengths=L, limit=2)
    assert [s.id for s in samples] == [f"{t}/{L}/{i}" for t in ("vt", "qa_1") for i in (0, 1)]
    files = Manifest.load(data).files
    for s in samples:
        row = rows(data, CONFIG, s.metadata["task"], L)[s.metadata["index"]]
        assert s.input[0].role == "user" and s.input[0].content == row["input"]
        assert s.target == row["outputs"]
        assert s.metadata["answer_prefix"] == row["answer_prefix"]
        assert s.metadata["tokens_to_generate"] == TASKS[row["task"]].tokens_to_generate
        assert s.metadata["data_sha256"] == files[
            f"data/{CONFIG}/{row['task']}/{L}.parquet"].content_sha256
    assert prov["tokenizer_config"] == CONFIG and prov["prompt_mode"] == "chat"
    for bad, message in (({"tasks": "vt,nope"}, "unknown task"),
                         ({"lengths": "2048"}, "has no length 2048"),
                         ({"tokenizer_config": "llama-3.1"}, "no tokenizer config")):
        with pytest.raises(RulerError, match=message):
            ruler_samples(str(data), **bad)


@pytest.mark.engines
def test_inspect_metric_is_rulers_task_score():
    pytest.importorskip("inspect_ai")
    from inspect_ai.scorer import SampleScore, Score

    from ruler.eval.integrations.inspect_task import row_score, ruler_score

    for m in ("string_match_all", "string_match_part"):
        cases = [(p, r) for mm, p, r in CASES if mm == m]
        scores = [SampleScore(score=Score(value=row_score(p, m, r)), sample_id=n)
                  for n, (p, r) in enumerate(cases)]
        assert ruler_score()(scores) == metrics.task_score(m, *zip(*cases))


@pytest.mark.engines  # Inspect is stage 2's: unmarked, it skipped in stage 1 and never ran
def test_inspect_metric_aggregates_ruler2_rows_as_nemo_skills():
    """The scorer names each row's metric; RULERv2 cells are the unrounded mean in percent."""
    pytest.importorskip("inspect_ai")
    from inspect_ai.scorer import SampleScore, Score

    from ruler.eval.integrations.inspect_task import row_score, ruler_score

    for m in ("ruler2_all", "ruler2_2steps", "ruler2_part", "multichoice"):
        cases = [(p, r) for mm, p, r in RULER2_CASES if mm == m]
        scores = [SampleScore(score=Score(value=row_score(p, m, r), metadata={"metric": m}),
                              sample_id=n) for n, (p, r) in enumerate(cases)]
        assert ruler_score()(scores) == metrics.task_score(m, *zip(*cases))


# --- the card ------------------------------------------------------------------------------------

@pytest.mark.build
def test_card_says_how_to_run_with_lm_eval_and_inspect(data):
    manifest = Manifest.load(data)
    card = render_card(manifest, repo_id="org/ruler", revision="v1")
    assert ('hf download org/ruler --repo-type dataset --revision v1 --include "lm_eval/*" '
            '--local-dir ruler-tasks') in card
    assert (f"--model_args pretrained=<model>,max_length={L} --apply_chat_template" in card
            and f"--include_path ruler-tasks/lm_eval --tasks ruler_{CONFIG}_{L}" in card)
    assert "assgined" in card and "worked example" in card and "0.75" in card
    assert (f"inspect eval ruler/ruler --model vllm/<model> \\\n  -T data=org/ruler "
            f"-T revision=v1 -T tokenizer_config={CONFIG} -T lengths={L}") in card
    assert "ruler score --predictions logs/ --data org/ruler --revision v1" in card
    assert "temperature 0; top_k 1 on `hf`, `nnterp`" in card  # greedy on every provider
    local = render_card(manifest)
    assert "ruler export lm-eval OUT" in local and "--include_path OUT/lm_eval" in local
    manifest.put_build(CONFIG, replace(manifest.build(CONFIG), prompt_mode="base"))
    text = render_card(manifest)
    assert "--apply_chat_template \\" not in text and "without `--apply_chat_template`" in text
