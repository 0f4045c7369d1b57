"""`ruler eval` -> `ruler score` -> `ruler report` on real ONERULER rows (llama-3.1, en and ko,
7 tasks x 1024 x 3 samples): the fake backend's gold answers score 100 in both languages, an
answer of the language's none-word scores as upstream scores it (right on niah_none, wrong on
everything else), no answer at all is kept out of the score as upstream drops it (but said),
the openai backend sends ONERULER's prompts and budgets, the corrected metric rescores, and the
languages' runs make the language table. The lm-eval export and Inspect run the same rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.builds import rows
from helpers.fake_openai import MODEL, FakeServer
from ruler.benchmarks.oneruler.metric import NONE_WORDS
from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS
from ruler.catalog.tasks import TASKS
from ruler.commands.main import main
from ruler.eval.backends.base import finished_result
from ruler.eval.backends.fake import FakeBackend, FakeOptions
from ruler.eval.runner import EvalConfig, run_eval

pytestmark = [pytest.mark.build]  # every test reads the session build (conftest)

TOK, L = "llama-3.1", 1024
LANGUAGES = ("en", "ko")


@pytest.fixture(scope="module")
def data(built_llama_oneruler) -> Path:
    return built_llama_oneruler  # conftest: read only


def config(lang: str) -> str:
    return f"{TOK}--oneruler-{lang}"


def _scores(out: Path) -> dict[str, dict]:
    cells = json.loads((out / "scores.json").read_text())["cells"]
    return {c["task"]: c for c in cells}


def _records(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]


def _eval(data: Path, lang: str, out: Path, *extra: str) -> int:
    return main(["eval", "--backend", "fake", "--model", "m", "--data", str(data),
                 "--tokenizer-config", config(lang), "--out", str(out), "--no-progress",
                 "--render-workers", "0", "--no-plots", *extra])


@pytest.fixture(scope="module")
def gold_runs(data, tmp_path_factory) -> dict[str, Path]:
    runs = {}
    for lang in LANGUAGES:
        runs[lang] = tmp_path_factory.mktemp("gold") / lang
        assert _eval(data, lang, runs[lang]) == 0
    return runs


def test_the_rows_carry_onerulers_metric_prefix_and_budgets(data):
    for lang in LANGUAGES:
        for task in ONERULER_TASKS:
            for r in rows(data, config(lang), task, L):
                assert r["metric"] == "oneruler" and r["answer_prefix"] == ""
                assert r["tokens_to_generate"] == TASKS[task].tokens_to_generate
                assert r["length"] <= L
        none_rows = rows(data, config(lang), "or_niah_none", L)
        assert {tuple(r["outputs"]) for r in none_rows} == {(NONE_WORDS[lang][0],)}


def test_gold_answers_score_100_through_eval_score_and_report(gold_runs):
    for lang, out in gold_runs.items():
        cells = _scores(out)
        assert set(cells) == set(ONERULER_TASKS)
        assert all((c["score"], c["scored"], c["metric"]) == (100.0, 3, "oneruler")
                   for c in cells.values())
        # the fake backend's gold answer for a niah_none row is the language's none-word
        answers = {r["prediction"] for r in _records(out) if r["task"] == "or_niah_none"}
        assert answers == {NONE_WORDS[lang][0]}
        report = (out / "report.md").read_text()
        assert report.startswith("# ONERULER results: m\n")
        assert f"Language: `{lang}`." in report and "Metric: `oneruler`:" in report
        assert json.loads((out / "report.json").read_text())["mean_by_length"] == {
            str(L): 100.0}


def test_the_languages_runs_make_the_language_table(gold_runs, tmp_path):
    out = tmp_path / "languages"
    assert main(["report", *(str(gold_runs[g]) for g in LANGUAGES), "--out", str(out),
                 "--no-plots"]) == 0
    table, = json.loads((out / "report_languages.json").read_text())["tables"]
    assert table["model"] == "m" and sorted(table["languages"]) == ["en", "ko"]
    assert {g: v[str(L)]["score"] for g, v in table["language_by_length"].items()} == {
        "en": 100.0, "ko": 100.0}
    assert table["task_micro_accuracy"]["or_cwe"]["all"] == {
        "score": 100.0, "ci95": table["task_micro_accuracy"]["or_cwe"]["all"]["ci95"],
        "rows": 6}


def test_ruler_score_rescores_with_the_corrected_metric(gold_runs, data, tmp_path):
    out = tmp_path / "corrected"
    assert main(["score", "--no-plots", "--predictions", str(gold_runs["ko"] / "predictions.jsonl"),
                 "--data", str(data), "--metric", "oneruler_corrected", "--out",
                 str(out)]) == 0
    scores = json.loads((out / "scores.json").read_text())
    assert scores["metric_asked"] == "oneruler_corrected"
    assert {c["metric"] for c in scores["cells"]} == {"oneruler_corrected"}
    assert {c["score"] for c in scores["cells"]} == {100.0}
    assert "Metric: `oneruler_corrected`:" in (out / "report.md").read_text()


def test_a_metric_that_cannot_score_the_rows_is_one_line(gold_runs, data, tmp_path, capsys):
    predictions = str(gold_runs["en"] / "predictions.jsonl")
    assert main(["score", "--predictions", predictions, "--data", str(data), "--metric",
                 "string_match_all", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "cannot score rows whose metric is 'oneruler'" in err and "Traceback" not in err
    assert main(["score", "--predictions", predictions, "--data", str(data), "--metric",
                 "nope", "--out", str(tmp_path / "b")]) == 2
    assert "--metric nope: unknown metric" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


class NoneWordBackend(FakeBackend):
    """Answers every row with the none-word of its config's language."""

    def answer(self, request):
        lang = request.key[0].rsplit("--oneruler-", 1)[1]
        return finished_result(request.key, NONE_WORDS[lang][0], 0, "stop")


def test_none_word_answers_score_as_upstream_scores_them(data, tmp_path):
    for lang in LANGUAGES:
        out = tmp_path / lang
        run_eval(EvalConfig(model="m", data=str(data), tokenizer_config=config(lang), out=out,
                            backend="fake", progress=False, render_workers=0),
                 backend=NoneWordBackend(FakeOptions("m", data=str(data))))
        cells = _scores(out)
        # niah_none: the none-word is in the answer: right. The number tasks: a none-word
        # fails the answer (and it has no number). cwe: no gold word in it.
        assert {t: c["score"] for t, c in cells.items()} == {
            t: 100.0 if t == "or_niah_none" else 0.0 for t in ONERULER_TASKS}


def test_no_answer_is_kept_out_of_the_score_as_upstream_drops_it(data, tmp_path):
    # upstream skips a response that is None (not scored, not counted); ruler keeps the row
    # out of the score too, and says so: failed rows, a partial run
    out = tmp_path / "none"
    assert _eval(data, "ko", out, "--fake-answers", "none") == 1  # failed requests: exit 1
    cells = _scores(out)
    assert all((c["score"], c["scored"], c["errors"]) == (None, 0, 3) for c in cells.values())
    assert "**Partial results**" in (out / "report.md").read_text()


@pytest.mark.network
def test_the_openai_backend_sends_onerulers_prompts_and_budgets(data, tmp_path):
    """Chat API: one user turn holding the row's input (no answer prefix to pre-fill),
    max_tokens the task's budget (30 NIAH, 50 CWE); the server answers "none" to all."""
    def reply(prompt, attempt):
        return 200, {}, 0.0, {"choices": [{"message": {"role": "assistant", "content": "none"},
                                           "finish_reason": "stop"}],
                              "usage": {"completion_tokens": 1}}

    out = tmp_path / "openai"
    with FakeServer(reply, max_model_len=4096) as server:
        assert main(["eval", "--backend", "openai", "--base-url", server.url, "--api", "chat",
                     "--model", MODEL, "--model-tokenizer", TOK, "--data", str(data),
                     "--tokenizer-config", config("en"), "--out", str(out), "--no-progress",
                     "--render-workers", "0", "--no-plots"]) == 0
    inputs = {r["input"]: r for t in ONERULER_TASKS for r in rows(data, config("en"), t, L)}
    assert len(server.bodies) == len(inputs) == 21
    for body in server.bodies:
        (message,) = body["messages"]
        row = inputs[message["content"]]
        assert message["role"] == "user"
        assert body["max_tokens"] == row["tokens_to_generate"] == (
            50 if "cwe" in row["task"] else 30)
    assert {t: c["score"] for t, c in _scores(out).items()} == {
        t: 100.0 if t == "or_niah_none" else 0.0 for t in ONERULER_TASKS}


@pytest.mark.subprocess
def test_the_lm_eval_export_scores_onerulers_rows(data, tmp_path):
    import subprocess
    import sys

    from ruler.builder.manifest import Manifest
    from ruler.eval.integrations import lm_eval_export as ex

    folder = ex.write_export(ex.export_files(Manifest.load(data), ex.local_source(data)),
                             tmp_path / "tasks")
    import yaml

    for lang in LANGUAGES:
        task = yaml.safe_load((folder / f"ruler_{config(lang)}_or_niah_none_{L}.yaml")
                              .read_text().replace("!function ", ""))
        assert task["metric_list"][0]["aggregation"] == "utils.aggregate_oneruler"
        assert task["generation_kwargs"]["max_gen_toks"] == 30
        assert task["metadata"]["ruler"]["metric"] == "oneruler"
    docs = [r for g in LANGUAGES for t in ONERULER_TASKS for r in rows(data, config(g), t, L)]
    code = (f"import json, sys; sys.path.insert(0, {str(folder)!r}); import utils\n"
            f"docs = json.loads(sys.stdin.read())\n"
            f"print(json.dumps([utils.process_results(d, [' '.join(d['outputs'])])['score']\n"
            f"                  for d in docs]))")
    keep = ("task", "tokenizer", "metric", "outputs")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True,
                          text=True, check=True,
                          input=json.dumps([{k: d[k] for k in keep} for d in docs]))
    assert json.loads(done.stdout) == [1.0] * len(docs)


@pytest.mark.slow
@pytest.mark.engines
def test_inspect_scores_onerulers_rows_as_ruler_score_does(data, tmp_path):
    pytest.importorskip("inspect_ai")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from ruler.eval.inspect import ruler
    from ruler.eval.records.dataset import open_dataset
    from ruler.eval.scoring.score import score_file

    gold = {r["input"]: r for t in ONERULER_TASKS for r in rows(data, config("ko"), t, L)}

    def respond(messages, tools, tool_choice, config):
        row = gold[messages[0].text]
        # the gold answer, but the none-word where a number is asked: niah_none right only
        text = " ".join(row["outputs"]) if "cwe" in row["task"] or \
            row["task"] == "or_niah_none" else NONE_WORDS["ko"][0]
        out = ModelOutput.from_content("mockllm", text)
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    (log,) = inspect_eval(ruler(data=str(data), tokenizer_config=config("ko"), lengths=L),
                          model=get_model("mockllm/model", custom_outputs=respond),
                          log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success"
    (scores,) = log.results.scores
    got = {name: m.value for name, m in scores.metrics.items()}
    expected = {f"{t}/{L}": 100.0 if "cwe" in t or t == "or_niah_none" else 0.0
                for t in ONERULER_TASKS}
    assert got == {**expected, "mean": 300 / 7}
    report = score_file(Path(log.location), open_dataset(str(data)))
    assert {f"{c.task}/{c.max_seq_length}": c.score for c in report.cells} == expected


class NonethelessBackend(FakeBackend):
    """Answers "nonetheless" to every row: upstream finds its none-word in it."""

    def answer(self, request):
        return finished_result(request.key, "Nonetheless, nonetheless.", 0, "stop")


def test_compare_shows_what_the_corrected_metric_changes(data, tmp_path):
    out = tmp_path / "run"
    run_eval(EvalConfig(model="m", data=str(data), tokenizer_config=config("en"), out=out,
                        backend="fake", progress=False, render_workers=0),
             backend=NonethelessBackend(FakeOptions("m", data=str(data))))
    # upstream: "none" is a substring of "nonetheless": niah_none right; corrected: not a word
    assert _scores(out)["or_niah_none"]["score"] == 100.0
    corrected = tmp_path / "corrected"
    assert main(["score", "--predictions", str(out / "predictions.jsonl"), "--data", str(data),
                 "--metric", "oneruler_corrected", "--out", str(corrected), "--no-plots"]) == 0
    assert _scores(corrected)["or_niah_none"]["score"] == 0.0
    assert main(["compare", str(out), str(corrected), "--out", str(tmp_path / "cmp"),
                 "--no-plots"]) == 0
    cmp = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert cmp["metrics"] == {"a": ["oneruler"], "b": ["oneruler_corrected"]}
    diffs = {r["task"]: r["difference"] for r in cmp["by_task"]}
    assert diffs == {t: 100.0 if t == "or_niah_none" else 0.0 for t in ONERULER_TASKS}
    assert "Scored with different metrics: A oneruler; B oneruler_corrected" in \
        (tmp_path / "cmp" / "compare.md").read_text()


def test_the_answer_budget_script_measures_every_config_and_task(data, capsys):
    from perf.oneruler_answer_budget import main as budget

    assert budget([str(data)]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = [line.split() for line in lines if line.startswith(f"{TOK}--oneruler-")]
    assert len(table) == 2 * len(ONERULER_TASKS)
    for _, task, n, over, median, longest, budget_tokens in table:
        assert int(budget_tokens) == TASKS[task].tokens_to_generate and int(n) == 3
        assert (int(over) > 0) == (int(longest) > int(budget_tokens))
        assert 0 < int(median) <= int(longest)
    # a niah_none answer is the none-word: a token or two
    none_en = next(row for row in table if row[:2] == [config("en"), "or_niah_none"])
    assert int(none_en[5]) <= 2
    assert lines[-1].startswith(f"{TOK}: ") and lines[-1].endswith(
        f"of {2 * len(ONERULER_TASKS) * 3} gold answers longer than their budget")
