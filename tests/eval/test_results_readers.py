"""Issue 30.4 (first half) and 30.11: every reader of predictions and of a results folder's files
refuses damage in one line naming the file (and line), exit 2, nothing written.

- A key twice in one JSON object (`"prediction"` twice) is refused by every reader: predictions
  (`ruler score`, `ruler eval` resuming), lm-eval samples and results files, run.json,
  scores.json (the JSON module would keep the last silently).
- A damaged scores.json (truncated, BOM, NaN, missing keys, wrong types) for `ruler report` and
  `ruler compare`; a damaged run.json for `ruler eval` resuming, `ruler score` of the
  predictions beside it and `ruler report`; a 100,000-deep nested line for `ruler score`.
- Fuzzed: any value of scores.json or run.json replaced by one of another shape gives a result
  or one clear line, never a traceback (as the manifest readers, tests/builder/verify).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from helpers.builds import rows
from ruler.commands.main import main
from ruler.eval.integrations import lm_eval_export as ex

pytestmark = [pytest.mark.build]

CONFIG = "qwen2.5"
TASKS = ("niah_single_1", "vt")
L = 1024
DEEP = 100_000


@pytest.fixture(scope="module")
def data(built_qwen_niah_vt) -> Path:
    return built_qwen_niah_vt  # CONFIG: TASKS x L x 4 samples (conftest; read only)


def _eval_args(data: Path, out: Path) -> list[str]:
    return ["eval", "--backend", "fake", "--model", "m", "--model-tokenizer", CONFIG,
            "--data", str(data), "--out", str(out), "--no-progress", "--no-report",
            "--render-workers", "0"]


@pytest.fixture(scope="module")
def pristine(data, tmp_path_factory) -> Path:
    """A finished `ruler eval` results folder (fake backend: gold answers)."""
    out = tmp_path_factory.mktemp("results") / "run"
    assert main(_eval_args(data, out)) == 0
    return out


@pytest.fixture
def results(pristine, tmp_path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / "run"))


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def _one_line(capsys, code: int, *named: str) -> str:
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("ruler: error: ") and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and all(n in err for n in named), (named, err)
    return err


def _deep(value: str = "1") -> str:
    return "[" * DEEP + value + "]" * DEEP


# --- 30.4: a key twice, in every reader -------------------------------------------------------

def _twice(line: str, key: str, value: Any) -> str:
    """A JSON object's text with `key` given once more, first, with `value`."""
    assert line.startswith("{")
    return "{" + json.dumps(key) + ": " + json.dumps(value) + ", " + line[1:]


def _key_twice_in_predictions(data: Path, results: Path, tmp_path: Path):
    path = tmp_path / "p.jsonl"
    lines = (results / "predictions.jsonl").read_text().splitlines()
    lines[1] = _twice(lines[1], "prediction", "not the model's answer")
    path.write_text("\n".join(lines) + "\n")
    return (["score", "--no-plots", "--predictions", str(path), "--data", str(data), "--out",
             str(tmp_path / "s")], f"{path}:2: the key 'prediction' appears twice")


def _key_twice_on_resume(data: Path, results: Path, tmp_path: Path):
    path = results / "predictions.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = _twice(lines[2], "status", "error")
    path.write_text("\n".join(lines) + "\n")
    return _eval_args(data, results), f"{path}:3: the key 'status' appears twice"


def _lm_eval_folder(data: Path, tmp_path: Path) -> Path:
    run = tmp_path / "lm" / "m"
    run.mkdir(parents=True)
    for task in TASKS:
        lines = [json.dumps({"doc": r, "filtered_resps": [" ".join(r["outputs"])],
                             "filter": "none"}) for r in rows(data, CONFIG, task, L)]
        (run / f"samples_{ex.task_name(CONFIG, task, L)}_2026-01-02T03-04-05.0.jsonl"
         ).write_text("\n".join(lines) + "\n")
    (run / "results_2026-01-02T03-04-05.0.json").write_text(json.dumps({"configs": {}}))
    return tmp_path / "lm"


def _key_twice_in_lm_eval_samples(data: Path, results: Path, tmp_path: Path):
    folder = _lm_eval_folder(data, tmp_path)
    path = next(folder.rglob("samples_*vt*.jsonl"))
    lines = path.read_text().splitlines()
    lines[0] = _twice(lines[0], "filtered_resps", ["another answer"])
    path.write_text("\n".join(lines) + "\n")
    return (["score", "--no-plots", "--predictions", str(folder), "--data", str(data), "--out",
             str(tmp_path / "s")], f"{path}:1: the key 'filtered_resps' appears twice")


def _key_twice_in_lm_eval_results(data: Path, results: Path, tmp_path: Path):
    folder = _lm_eval_folder(data, tmp_path)
    path = next(folder.rglob("results_*.json"))
    path.write_text(_twice(path.read_text(), "configs", {}))
    return (["score", "--no-plots", "--predictions", str(folder), "--data", str(data), "--out",
             str(tmp_path / "s")], f"{path}: the key 'configs' appears twice")


def _key_twice_in_run_json_on_resume(data: Path, results: Path, tmp_path: Path):
    path = results / "run.json"
    path.write_text(_twice(path.read_text(), "model", "another-model"))
    return _eval_args(data, results), f"{path}: the key 'model' appears twice"


def _key_twice_in_run_json_for_score(data: Path, results: Path, tmp_path: Path):
    path = results / "run.json"
    path.write_text(_twice(path.read_text(), "limit", 1))
    return (["score", "--predictions", str(results / "predictions.jsonl"), "--data", str(data),
             "--out", str(tmp_path / "s")], f"{path}: the key 'limit' appears twice")


def _key_twice_in_scores_for_report(data: Path, results: Path, tmp_path: Path):
    path = results / "scores.json"
    path.write_text(_twice(path.read_text(), "cells", []))
    return ["report", str(results), "--no-plots"], f"{path}: the key 'cells' appears twice"


def _key_twice_in_scores_for_compare(data: Path, results: Path, tmp_path: Path):
    other = shutil.copytree(results, tmp_path / "other")
    path = results / "scores.json"
    path.write_text(_twice(path.read_text(), "config", "llama-3.1"))
    return ["compare", str(other), str(results)], f"{path}: the key 'config' appears twice"


KEY_TWICE: dict[str, Callable] = {
    "predictions for score": _key_twice_in_predictions,
    "predictions on resume": _key_twice_on_resume,
    "lm-eval samples": _key_twice_in_lm_eval_samples,
    "lm-eval results": _key_twice_in_lm_eval_results,
    "run.json on resume": _key_twice_in_run_json_on_resume,
    "run.json for score": _key_twice_in_run_json_for_score,
    "scores.json for report": _key_twice_in_scores_for_report,
    "scores.json for compare": _key_twice_in_scores_for_compare,
}


@pytest.mark.parametrize("reader", list(KEY_TWICE))
def test_a_key_twice_in_one_object_is_refused_by_every_reader(data, results, tmp_path, capsys,
                                                              reader):
    args, message = KEY_TWICE[reader](data, results, tmp_path)
    before = _files(results)
    _one_line(capsys, main(args), message)
    assert _files(results) == before  # nothing rewritten
    assert not (tmp_path / "s").exists()


# --- 30.11: a damaged scores.json for report and compare ---------------------------------------

def _text(change: Callable[[str], str]) -> Callable[[Path], None]:
    return lambda path: path.write_text(change(path.read_text(encoding="utf-8")),
                                        encoding="utf-8")


def _json(change: Callable[[dict], Any]) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        doc = json.loads(path.read_text())
        out = change(doc)
        path.write_text(json.dumps(doc if out is None else out, indent=2))
    return apply


def _set(*keys_and_value) -> Callable[[dict], None]:
    *keys, value = keys_and_value

    def change(doc: dict) -> None:
        for k in keys[:-1]:
            doc = doc[k]
        doc[keys[-1]] = value
    return change


def _drop(*keys) -> Callable[[dict], None]:
    def change(doc: dict) -> None:
        for k in keys[:-1]:
            doc = doc[k]
        del doc[keys[-1]]
    return change


TEXT_DAMAGE = {  # name -> (damage, what the one line says)
    "truncated": (_text(lambda t: t[: len(t) // 2]), "not valid JSON"),
    "empty": (_text(lambda t: ""), "not valid JSON"),
    "a byte-order mark": (_text(lambda t: "\ufeff" + t), "BOM"),
    "not UTF-8": (lambda p: p.write_bytes(b"\xff\xfe" + p.read_bytes()), "not UTF-8"),
    "a key twice": (_text(lambda t: _twice(t, "dataset", {})), "appears twice"),
    "100,000-deep nesting": (_text(lambda t: '{"deep": ' + _deep() + ", " + t[1:]),
                             "nested too deeply"),
    "a list": (_text(lambda t: "[" + t + "]"), ""),
}
SCORES_DAMAGE = {
    **TEXT_DAMAGE,
    "NaN": (_json(_set("cells", 0, "score", float("nan"))), "NaN is not a JSON value"),
    "Infinity": (_json(_set("cells", 0, "ci95", [0, float("inf")])), "Infinity"),
    "another format": (_json(_set("format", "ruler-scores/9")), "not a ruler scores file"),
    "no cells": (_json(_drop("cells")), "cells"),
    "cells an object": (_json(_set("cells", {})), "cells"),
    "a cell a list": (_json(_set("cells", 0, [])), "cells"),
    "a cell without rows": (_json(_drop("cells", 0, "rows")), "cell 1 has missing or "
                                                                  "malformed rows"),
    "a score a string": (_json(_set("cells", 1, "score", "100")), "cell 2"),
    "a score above 100": (_json(_set("cells", 0, "score", 1000.0)), "score"),
    "a length a string": (_json(_set("cells", 0, "max_seq_length", "1k")), "max_seq_length"),
    "a missing count null": (_json(_set("cells", 0, "missing", None)), "missing"),
    "row scores not pairs": (_json(_set("cells", 0, "row_scores", [[0]])), "row_scores"),
    "a row score above 1": (_json(_set("cells", 0, "row_scores", [[0, 2]])), "row_scores"),
    "ci95 one number": (_json(_set("cells", 0, "ci95", [1])), "ci95"),
    "a cell twice": (_json(lambda d: d["cells"].append(dict(d["cells"][0]))), "appears twice"),
    "no config": (_json(_drop("config")), "config"),
    "config a number": (_json(_set("config", 5)), "config"),
    "dataset null": (_json(_set("dataset", None)), "dataset"),
    "files a list": (_json(_set("dataset", "files", [])), "dataset"),
    "a file key without length": (_json(_set("dataset", "files", {"vt": "x"})), "dataset"),
    "depth items a number": (_json(_set("depth_items", 3)), "depth_items"),
    "depth items not pairs": (_json(_set("depth_items", {f"vt/{L}": [[0.5]]})), "depth_items"),
    "depth bins zero": (_json(_set("depth_bins", 0)), "depth_bins"),
    "selection a list": (_json(_set("selection", [])), "selection"),
    "prompt check a string": (_json(_set("prompt_check", "all")), "prompt_check"),
    "prompt check unchecked a word": (
        _json(_set("prompt_check", {"checked": 1, "differ": 0, "unchecked": "x"})),
        "prompt_check"),
    "prompt check answered_as a list": (
        _json(_set("prompt_check", {"checked": 1, "differ": 0, "answered_as": ["m"]})),
        "prompt_check"),
    "health counts a number": (_json(_set("health", {"answered": 3})), "health"),
    "an unknown variant": (_json(_set("variant", {"foo": 1})), "variant"),
    "serving an object": (_json(_set("serving", {"backend": "x"})), "serving"),
    "unverified a string": (_json(_set("cells", 0, "unverified", "3")), "unverified"),
}


@pytest.mark.parametrize("damage", list(SCORES_DAMAGE))
def test_a_damaged_scores_json_is_one_clear_line_in_report_and_compare(
        pristine, results, tmp_path, capsys, damage):
    change, named = SCORES_DAMAGE[damage]
    scores = results / "scores.json"
    change(scores)
    before = _files(results)
    _one_line(capsys, main(["report", str(results), "--no-plots"]), str(scores), named)
    _one_line(capsys, main(["report", str(scores), str(pristine)]), str(scores), named)
    _one_line(capsys, main(["compare", str(pristine), str(results)]), str(scores), named)
    assert _files(results) == before  # no report written from it


# --- 30.11: a damaged run.json for eval (resuming), score and report ---------------------------

RUN_DAMAGE = {
    **TEXT_DAMAGE,
    "NaN": (_json(_set("limit", float("nan"))), "NaN is not a JSON value"),
    "no dataset": (_json(_drop("dataset")), "dataset"),
    "dataset a string": (_json(_set("dataset", CONFIG)), "dataset"),
    "no config": (_json(_drop("dataset", "config")), "dataset"),
    "config a number": (_json(_set("dataset", "config", 5)), "dataset"),
    "files a list": (_json(_set("dataset", "files", [])), "dataset"),
    "a file key without length": (_json(_set("dataset", "files", {"vt": "x"})), "dataset"),
    "no model": (_json(_drop("model")), "model"),
    "limit a string": (_json(_set("limit", "2")), "limit"),
    "limit zero": (_json(_set("limit", 0)), "limit"),
    "max_model_len a string": (_json(_set("max_model_len", "4096")), "max_model_len"),
    "max_model_len used a string": (_json(_set("max_model_len", "used", "x")), "max_model_len"),
    "backends a string": (_json(_set("backends", "fake")), "backends"),
    "serving an object": (_json(_set("serving", {"backend": "x"})), "serving"),
    "a serving entry a string": (_json(_set("serving", ["x"])), "serving"),
    "chat template variables a list": (_json(_set("chat_template_kwargs", [])),
                                       "chat_template_kwargs"),
}


@pytest.mark.parametrize("damage", list(RUN_DAMAGE))
def test_a_damaged_run_json_is_one_clear_line_in_eval_score_and_report(
        data, results, tmp_path, capsys, damage):
    change, named = RUN_DAMAGE[damage]
    run = results / "run.json"
    change(run)
    before = _files(results)
    _one_line(capsys, main(_eval_args(data, results)), str(run), named)
    _one_line(capsys, main(["score", "--predictions", str(results / "predictions.jsonl"),
                            "--data", str(data), "--out", str(tmp_path / "s")]), str(run), named)
    _one_line(capsys, main(["report", str(results), "--no-plots"]), str(run), named)
    assert _files(results) == before  # resume, score and report wrote nothing
    assert not (tmp_path / "s").exists()


# --- 30.11: a 100,000-deep line in ruler score -------------------------------------------------

def test_a_deeply_nested_prediction_line_is_one_clear_line(data, results, tmp_path, capsys):
    lines = (results / "predictions.jsonl").read_text().splitlines()
    for n, line in ((1, '{"prediction": ' + _deep() + "}"), (3, _deep("{}"))):
        path = tmp_path / f"p{n}.jsonl"
        path.write_text("\n".join(lines[:n - 1] + [line] + lines[n - 1:]) + "\n")
        code = main(["score", "--no-plots", "--predictions", str(path), "--data", str(data),
                     "--out", str(tmp_path / "s")])
        _one_line(capsys, code, f"{path}:{n}: nested too deeply")
    assert not (tmp_path / "s").exists()


# --- fuzzed: any value replaced by one of another shape ----------------------------------------

WRONG_VALUES = (None, True, -1, 0, 1.5, "", "x", [], [1], [[0, 2]], {}, {"x": 1}, "../..")


def _paths(value, prefix=()):
    """Every key path of a JSON document."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _fuzz(path: Path, rng: random.Random) -> tuple:
    doc = json.loads(path.read_text())
    where, value = rng.choice([p for p in _paths(doc) if p]), rng.choice(WRONG_VALUES)
    _set(*where, value)(doc)
    path.write_text(json.dumps(doc))
    return where, value


def _verdict_or_one_line(capsys, code: int, allowed: tuple[int, ...], case) -> None:
    captured = capsys.readouterr()
    assert code in allowed, (case, captured.err)
    if code == 2:
        assert captured.err.startswith("ruler: error: ") and \
            len(captured.err.strip().splitlines()) == 1, (case, captured.err)


def test_fuzzed_scores_json_never_gives_a_traceback(pristine, tmp_path, capsys):
    rng = random.Random(3011)
    for trial in range(150):
        folder = Path(shutil.copytree(pristine, tmp_path / f"t{trial}"))
        case = _fuzz(folder / "scores.json", rng)
        _verdict_or_one_line(capsys, main(["report", str(folder), "--no-plots"]), (0, 2), case)
        _verdict_or_one_line(capsys, main(["compare", str(pristine), str(folder)]), (0, 2),
                             case)


@pytest.mark.slow
def test_fuzzed_run_json_never_gives_a_traceback(data, pristine, tmp_path, capsys):
    rng = random.Random(3012)
    for trial in range(30):
        folder = Path(shutil.copytree(pristine, tmp_path / f"t{trial}"))
        case = _fuzz(folder / "run.json", rng)
        _verdict_or_one_line(capsys, main(_eval_args(data, folder)), (0, 2), case)
        _verdict_or_one_line(capsys, main(["score", "--no-plots", "--predictions",
                                           str(folder / "predictions.jsonl"), "--data",
                                           str(data), "--out", str(folder / "s")]), (0, 2), case)
        _verdict_or_one_line(capsys, main(["report", str(folder), "--no-plots"]), (0, 2), case)
