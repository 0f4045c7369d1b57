"""`ruler score` reads NeMo-Skills' own output (`ns eval`'s output.jsonl), matching each record
to our row by its prompt text, and refuses records made from other rows, naming them.

The files are written here in NeMo-Skills' format from our rows, as a NeMo-Skills user gets
them after running our rows as a benchmark: per record the input row's fields (`index`,
`question` = our `input`, `expected_answer` = our `outputs`, `length`) plus `generation` and
the statistics generate.py adds (`num_generated_tokens`, `generation_time`, ...), in
`eval-results/<benchmark>/output.jsonl` (nemo_skills/inference/generate.py @01462f39,
`postprocess_single_output`; nemo_skills/dataset/ruler/prepare.py for v1's fields).
This module covers v1's `ruler` benchmark on a v1 build; the RULERv2 end-to-end test covers
`ruler2`.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from helpers.builds import rows
from ruler.commands.main import main
from ruler.eval.records.dataset import open_dataset
from ruler.eval.scoring.score import score_file
from ruler.kernel.errors import RulerError

pytestmark = [pytest.mark.build]

CONFIG = "qwen2.5"
TASKS = ("niah_single_1", "vt", "qa_1")


def nemo_record(row: dict, generation: str | None, chat_completions: bool = False) -> dict:
    """One line of NeMo-Skills' output for one of our rows."""
    question = row["input"] + (row["answer_prefix"].strip() if chat_completions else "")
    return {"generation": generation, "num_generated_tokens": 7, "generation_start_time": 1.0,
            "generation_end_time": 2.0, "generation_time": 1.0, "index": row["index"],
            "question": question, "expected_answer": list(row["outputs"]),
            "length": row["length"], "is_correct": 1.0, "predicted_answer": generation}


def write_output(folder: Path, records: list[dict], name: str = "output.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _all_rows(data: Path) -> list[tuple[str, dict]]:
    return [(t, r) for t in TASKS for r in rows(data, CONFIG, t, 1024)]


def test_a_nemo_skills_output_scores_against_our_rows(built_qwen_three, tmp_path):
    data = built_qwen_three
    records = [nemo_record(r, "no idea" if (t, r["index"]) == ("vt", 1)
                           else " ".join(r["outputs"])) for t, r in _all_rows(data)]
    random.Random(0).shuffle(records)  # NeMo-Skills keeps its input order, which need not be ours
    path = write_output(tmp_path / "eval-results" / "ruler.qwen_1k.all", records)
    report = score_file(path, open_dataset(str(data)))
    assert [(c.task, c.score, c.scored) for c in report.cells] == [
        ("niah_single_1", 100.0, 3), ("vt", 66.67, 3), ("qa_1", 100.0, 3)]
    assert report.unknown == [] and report.missing == []
    # The cells the records were found in are what was asked for.
    assert report.selection.by == "run"


def test_the_chat_completions_variant_appends_the_answer_prefix(built_qwen_three, tmp_path):
    data = built_qwen_three
    qa = rows(data, CONFIG, "qa_1", 1024)
    records = [nemo_record(r, r["outputs"][0], chat_completions=True) for r in qa]
    assert records[0]["question"].endswith("Answer:")
    report = score_file(write_output(tmp_path, records), open_dataset(str(data)))
    assert [(c.task, c.score, c.scored) for c in report.cells] == [("qa_1", 100.0, 3)]


def test_a_folder_of_benchmarks_and_the_command_line(built_qwen_three, tmp_path, capsys):
    data = built_qwen_three
    for task in TASKS:
        write_output(tmp_path / "eval-results" / f"ruler.qwen_1k.{task}",
                     [nemo_record(r, " ".join(r["outputs"]))
                      for r in rows(data, CONFIG, task, 1024)])
    assert main(["score", "--no-plots", "--predictions", str(tmp_path / "eval-results"), "--data",
                 str(data)]) == 0
    scores = json.loads((tmp_path / "eval-results" / "scores.json").read_text())
    assert [c["score"] for c in scores["cells"]] == [100.0] * 3
    assert scores["coverage"]["complete"]


def test_records_made_from_other_rows_are_refused_by_name(built_qwen_three, tmp_path, capsys):
    data = built_qwen_three
    niah = rows(data, CONFIG, "niah_single_1", 1024)
    records = [nemo_record(r, "x") for r in niah]
    records[1]["question"] = records[1]["question"].replace("special", "secret", 1)
    path = write_output(tmp_path, records)
    with pytest.raises(RulerError, match=r"1 NeMo-Skills record\(s\) match no row .*"
                                         r"output\.jsonl:2 \(index 1, "):
        score_file(path, open_dataset(str(data)))
    assert main(["score", "--no-plots", "--predictions", str(path), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert "output.jsonl:2" in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err and not (tmp_path / "output.jsonl.scores").exists()


def test_a_record_whose_expected_answer_differs_is_refused(built_qwen_three, tmp_path):
    data = built_qwen_three
    records = [nemo_record(r, "x") for r in rows(data, CONFIG, "vt", 1024)]
    records[2]["expected_answer"] = ["SOMETHING ELSE"]
    with pytest.raises(RulerError, match=r"output\.jsonl:3"):
        score_file(write_output(tmp_path, records), open_dataset(str(data)))


def test_a_missing_generation_is_a_failed_row(built_qwen_three, tmp_path):
    data = built_qwen_three
    records = [nemo_record(r, " ".join(r["outputs"])) for r in rows(data, CONFIG, "vt", 1024)]
    records[0]["generation"] = None
    report = score_file(write_output(tmp_path, records), open_dataset(str(data)))
    (cell,) = report.cells
    assert (cell.score, cell.scored, cell.errors) == (100.0, 2, 1)
    assert not report.complete


def test_several_random_seeds_of_one_benchmark_are_refused(built_qwen_three, tmp_path):
    data = built_qwen_three
    records = [nemo_record(r, "x") for r in rows(data, CONFIG, "vt", 1024)]
    folder = tmp_path / "eval-results" / "ruler.qwen_1k.vt"
    write_output(folder, records, "output-rs0.jsonl")
    write_output(folder, records, "output-rs1.jsonl")
    with pytest.raises(RulerError, match="pass one file"):
        score_file(tmp_path / "eval-results", open_dataset(str(data)))
    # One seed's file is fine.
    report = score_file(folder / "output-rs1.jsonl", open_dataset(str(data)))
    assert report.cells[0].scored == 3


# --- recognised by content; a mismatch names no config it is not (issue 40 item 22) ------------

@pytest.mark.parametrize("name", ["my-run.jsonl", "nemo_output_copy.jsonl", "out.txt"])
def test_nemo_skills_output_under_another_name_is_read_by_its_content(built_qwen_three,
                                                                       tmp_path, name):
    data = built_qwen_three
    records = [nemo_record(r, " ".join(r["outputs"])) for r in rows(data, CONFIG, "vt", 1024)]
    path = write_output(tmp_path / "copies", records, name)
    report = score_file(path, open_dataset(str(data)))
    assert [(c.task, c.score) for c in report.cells] == [("vt", 100.0)]
    # in a folder too, whatever its JSON-lines files are called
    if name.endswith(".jsonl"):
        assert [c.score for c in score_file(tmp_path / "copies", open_dataset(
            str(data))).cells] == [100.0]


@pytest.fixture(scope="module")
def two_configs(built_qwen_three, tmp_path_factory) -> Path:
    import shutil

    from helpers.builds import build

    folder = tmp_path_factory.mktemp("two") / "data"
    shutil.copytree(built_qwen_three, folder)
    build(folder, "llama-3.1", ("vt",), (1024,), samples=3, workers=1)
    return folder


def test_records_of_no_config_name_none_and_a_near_miss_names_its_own(two_configs, tmp_path):
    ds = open_dataset(str(two_configs))
    assert ds.configs == ["llama-3.1", CONFIG]
    # prompts of none of the folder's rows: no config is named as theirs
    foreign = [nemo_record(dict(r, input="Another generator's prompt " + r["input"]), "x")
               for r in rows(two_configs, CONFIG, "vt", 1024)]
    with pytest.raises(RulerError) as e:
        score_file(write_output(tmp_path / "a", foreign), ds)
    assert "3 NeMo-Skills record(s) match no row of dataset" in str(e.value)
    assert "in any of its 2 configs (llama-3.1, qwen2.5)" in str(e.value)
    # qwen2.5's rows but one: qwen2.5 is named, with the counts
    near = [nemo_record(r, "x") for r in rows(two_configs, CONFIG, "vt", 1024)]
    near[0]["question"] = "changed " + near[0]["question"]
    with pytest.raises(RulerError) as e:
        score_file(write_output(tmp_path / "b", near), ds)
    assert "1 NeMo-Skills record(s) match no row of dataset" in str(e.value)
    assert "config 'qwen2.5' (whose rows 2 of the 3 match; llama-3.1: 0)" in str(e.value)
