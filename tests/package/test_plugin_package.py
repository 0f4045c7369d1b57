"""A pip-installed plug-in package extends the installed `ruler` command: one package, written
here, offers a benchmark, a task family (with its task), a variant, a backend, a metric and an
exporter through ruler's entry point groups; it is installed for real (`pip install --target`,
put on PYTHONPATH, so this environment stays as it was) and the `ruler` console script builds,
verifies, evaluates, scores and exports with it. No product file names any of it.

The toy: task `toy_word` asks for the one secret word hidden among filler lines; its metric
`toy_exact` takes an answer only when it is the word and nothing else (unlike RULER's
substring match); backend `toy-reader` answers by finding the word in the row's text (with
`--toy-hedge`, followed by ", I think", which string matching would still accept); variant
`--toy-budget N` reserves N answer tokens; benchmark `toy` (configs `<tokenizer>--toy`); an
exporter `ruler export toy-list` lists a build's split files.

A fourth benchmark, `lex` (issue 41: the benchmark is the unit, added from outside with no
product file edited), declares everything of its own on its `Benchmark`: its task family
(`lex_word`: the secret word, drawn from its pinned word list), a pinned source (`lex_words`),
a build axis (`--lex-cases upper,lower`: one config per letter case), its own aggregation (a
length scores as its hardest task), a report section, a card body, an lm-eval aggregation and
a release gate (`--acknowledge-lex-terms yes`). It builds (a word list of other bytes than
its pin: marked unofficial), verifies, evaluates with the fake backend, scores, reports,
compares, exports to lm-eval (its aggregation in utils.py) and releases (to a loopback Hub,
through its gate), says nothing of RULER's in its card, report and comparison, and
uninstalled, its folder and results are refused by `ruler verify`, `ruler report` and `ruler
score` in one line naming it and its package. No product file names any of it; docs/
extending.md's "Adding a benchmark" is written from it.

Every test runs the `ruler` command (and the fixtures build); they share one installed plug-in
site and one Lex build and run across the module.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = [pytest.mark.subprocess, pytest.mark.build]

PACKAGE = "ruler_toy_plugin"

PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "ruler-toy-plugin"
version = "1.0"

[tool.setuptools]
packages = ["ruler_toy_plugin"]

[project.entry-points."ruler.benchmarks"]
toy = "ruler_toy_plugin.benchmark:BENCHMARK"
lex = "ruler_toy_plugin.lex:BENCHMARK"

[project.entry-points."ruler.task_families"]
toy = "ruler_toy_plugin.family:register"

[project.entry-points."ruler.variants"]
toy_budget = "ruler_toy_plugin.variant:ToyBudget"

[project.entry-points."ruler.backends"]
toy-reader = "ruler_toy_plugin.backend:SPEC"

[project.entry-points."ruler.metrics"]
toy_exact = "ruler_toy_plugin.metric:SPEC"

[project.entry-points."ruler.exporters"]
toy-list = "ruler_toy_plugin.export:EXPORTER"
"""

#: Lex's pinned source: its word list, at its sha256.
LEX_WORDS = "amber\nbasalt\ncobalt\ndune\nember\nfjord\ngarnet\nheron\n"
LEX_SHA256 = hashlib.sha256(LEX_WORDS.encode()).hexdigest()

MODULES = {
    "__init__.py": '"""A toy ruler plug-in."""\n',
    "lex.py": '''
"""The lex benchmark: the secret word among filler lines, from its pinned word list, in one
letter case per config."""
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from ruler.kernel.errors import RulerError
from ruler.kernel.rng import below
from ruler.catalog.sources import FileSource
from ruler.catalog.base import Draft, TaskGenerator, joined, template_ends
from ruler.catalog.benchmarks import Aggregation, Benchmark, BuildAxis
from ruler.catalog.tasks import FamilySpec, TaskSpec, register_task
from ruler.catalog.family import TaskFamily, register_family
from ruler.eval.metrics.specs import MetricSpec, percent_of_rows, raw_generation

from ruler_toy_plugin.lex_metric import lex_exact

SOURCE = FileSource(id="lex_words", title="Lex's word list", relpath="lex/words.txt", urls=(),
                    size=LEX_SIZE, sha256="LEX_SHA256", license="CC0 (the test's own)")
SPEC = FamilySpec(name="lex_word",
                  template="Find the secret word hidden in the text below.\\n{context}\\n"
                           "What is the secret word?",
                  answer_prefix=" The secret word is", tokens_to_generate=16,
                  metric="lex_exact")
FILLER = "The grass is green and the sky is blue."
FOUND = re.compile(r"The secret word is (\\w+)\\.")


class CaseAxis(BuildAxis):
    name = "case"
    flag = "--lex-cases"
    help = "--benchmark lex: comma-separated letter cases, one config each (upper, lower)"

    def parse(self, text):
        if text.strip() not in ("upper", "lower"):
            raise RulerError(f"lex has no case {text.strip()!r}: upper or lower")
        return text.strip()

    def every(self):
        return ("upper", "lower")

    def record(self, value):
        return value

    def from_record(self, data):
        return self.parse(str(data))

    def code(self, value):
        return value

    def config_suffix(self, value):
        return f"lex-{value}"


class LexGenerator(TaskGenerator):
    unit = "filler lines"
    calibration_step = 25

    def draft(self, index, rng, size):
        words = self.ctx.resource("lex:words", lambda: tuple(
            Path(self.ctx.source("lex_words").path).read_text().split()))
        word = words[below(rng, len(words))]
        word = word.upper() if self.ctx.axes.get("case") == "upper" else word
        slot = below(rng, size + 1)
        lines = [FILLER] * size
        lines.insert(slot, f"The secret word is {word}.")
        head, tail = template_ends(SPEC.template)
        text, pieces = joined(head, lines, "\\n", tail, clean=True)
        start = len(head) + slot * (len(FILLER) + 1)
        return Draft(input=text, answer_prefix=SPEC.answer_prefix, outputs=(word,),
                     gold_spans=((start, start + len(lines[slot])),),
                     context_span=(len(head), len(text) - len(tail)), size=size,
                     pieces=pieces)


def check_row(row):
    found = FOUND.findall(row["input"])
    return None if found == list(row["outputs"]) else f"secret words {found}"


def gold_spans(row, generator=None):
    head, tail = template_ends(SPEC.template)
    text = row["input"]
    end = len(text) - len(tail)
    return [m.start() for m in FOUND.finditer(text, len(head), end)], (len(head), end)


@dataclass(frozen=True)
class Hardest(Aggregation):
    """Lex's own aggregation: a length scores as its hardest task."""

    def per_length(self, scores):
        return min(scores)

    def per_length_text(self, tasks):
        return f"the lowest of the {tasks} task scores"


register_family(TaskFamily(spec=SPEC, generator=LexGenerator, check_row=check_row,
                           gold_spans=gold_spans))
register_task(TaskSpec("lex_word", SPEC, MappingProxyType({}), sources=("lex_words",)))

BENCHMARK = Benchmark(
    id="lex", title="Lex", tasks=("lex_word",), axes=(CaseAxis(),), sources=(SOURCE,),
    variants=("",), metrics={"lex_exact": MetricSpec(lex_exact, raw_generation,
                                                     percent_of_rows, "lex")},
    aggregation=Hardest(text="(Lex's own: the hardest task decides)."),
    card_body="ruler_toy_plugin.lex_hooks:BODY", report="ruler_toy_plugin.lex_hooks:REPORT",
    lm_eval="ruler_toy_plugin.lex_hooks:LM_EVAL",
    release_gates=("ruler_toy_plugin.lex_hooks:GATE",))
'''.replace("LEX_SIZE", str(len(LEX_WORDS))).replace("LEX_SHA256", LEX_SHA256),
    "lex_metric.py": '''
"""Lex's metric: plain functions over the standard library (the lm-eval export copies them)."""
from typing import Sequence


def lex_exact(prediction: str, references: Sequence[str]) -> float:
    return float(prediction.strip().rstrip(".").lower() == references[0].lower())


def aggregate_lex(row_scores: Sequence[float]) -> float:
    """Per Lex task: the share of rows right, in percent."""
    return 100.0 * sum(row_scores) / len(row_scores)
''',
    "lex_hooks.py": '''
"""Lex's card body, report section, lm-eval export and release gate."""
from ruler.kernel.errors import RulerError
from ruler.builder.release_gates import ReleaseGate
from ruler.cards.body import CardBody
from ruler.eval.integrations.lm_eval_export import LmEvalHooks
from ruler.eval.report.run import ReportHooks

from ruler_toy_plugin import lex_metric


class LexBody(CardBody):
    title = "Lex"
    tags = ("lex",)

    def intro(self, manifest):
        return "Lex asks for one secret word, in upper or lower case. "

    def citation(self, manifest):
        return "\\n## Citation\\n\\nLex, the plug-in test's own benchmark."


class LexReport(ReportHooks):
    def sections(self, r):
        worst = min((c.score, t) for (t, L), c in r.cells.items() if c.score is not None)
        return ["## Lex: the hardest task", "", f"{worst[1]} ({worst[0]:.1f})."]

    def json(self, r):
        return {"lex_axes": dict(r.axes)}


def check_terms(manifest, words):
    lex = [c for c in manifest.configs() if manifest.build(c).benchmark == "lex"]
    if lex and tuple(words) != ("yes",):
        raise RulerError(f"configs {', '.join(lex)} are Lex's: read its terms, then pass "
                         f"--acknowledge-lex-terms yes")
    if words and not lex:
        raise RulerError("--acknowledge-lex-terms: no Lex config here; leave it out")


BODY = LexBody()
REPORT = LexReport()
LM_EVAL = LmEvalHooks(code=(lex_metric.lex_exact,), aggregation=lex_metric.aggregate_lex)
GATE = ReleaseGate("--acknowledge-lex-terms", check=check_terms, metavar="yes",
                   help="Lex configs: yes, after reading Lex's terms")
''',
    "benchmark.py": '''
from ruler.catalog.benchmarks import Benchmark

BENCHMARK = Benchmark(id="toy", title="Toy", tasks=("toy_word",), config_suffix="toy",
                      card_section="ruler_toy_plugin.card:section")
''',
    "card.py": '''
def section(manifest):
    configs = [c for c in manifest.configs() if manifest.build(c).benchmark == "toy"]
    return f"## Toy benchmark\\n\\nConfigs: {', '.join(configs)}.\\n\\n" if configs else ""
''',
    "family.py": '''
import re
from types import MappingProxyType

from ruler.kernel.rng import below
from ruler.catalog.base import Draft, TaskGenerator, joined, template_ends
from ruler.catalog.tasks import FamilySpec, TaskSpec, register_task
from ruler.catalog.family import TaskFamily, register_family

SPEC = FamilySpec(name="toy_word",
                  template="Find the secret word hidden in the text below.\\n{context}\\n"
                           "What is the secret word?",
                  answer_prefix=" The secret word is", tokens_to_generate=16,
                  metric="toy_exact")
WORDS = ("amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "heron")
FILLER = "The grass is green and the sky is blue."
NEEDLE = "The secret word is {}."
FOUND = re.compile(r"The secret word is (\\w+)\\.")


class SecretWordGenerator(TaskGenerator):
    unit = "filler lines"
    calibration_step = 25

    def draft(self, index, rng, size):
        word = WORDS[below(rng, len(WORDS))]
        slot = below(rng, size + 1)
        lines = [FILLER] * size
        lines.insert(slot, NEEDLE.format(word))
        head, tail = template_ends(SPEC.template)
        text, pieces = joined(head, lines, "\\n", tail, clean=True)
        start = len(head) + slot * (len(FILLER) + 1)
        return Draft(input=text, answer_prefix=SPEC.answer_prefix, outputs=(word,),
                     gold_spans=((start, start + len(lines[slot])),),
                     context_span=(len(head), len(text) - len(tail)), size=size,
                     pieces=pieces)


def check_row(row):
    found = FOUND.findall(row["input"])
    return None if found == list(row["outputs"]) else f"secret words {found}"


def gold_spans(row, generator=None):
    head, tail = template_ends(SPEC.template)
    text = row["input"]
    end = len(text) - len(tail)
    return [m.start() for m in FOUND.finditer(text, len(head), end)], (len(head), end)


FAMILY = TaskFamily(spec=SPEC, generator=SecretWordGenerator, check_row=check_row,
                    gold_spans=gold_spans)


def register():
    register_family(FAMILY)
    register_task(TaskSpec("toy_word", SPEC, MappingProxyType({})))
''',
    "variant.py": '''
from dataclasses import dataclass

from ruler.kernel.errors import RulerError
from ruler.kernel.flags import option
from ruler.catalog.variants import Variant


@dataclass(frozen=True)
class ToyBudget(Variant):
    budget: int = option("--toy-budget", type=int, metavar="N",
                         help="the toy plug-in's variant: N answer tokens")

    field = "toy_budget"
    title = "Toy: a fixed answer budget (`--toy-budget N`)"
    doc = "Config `<tokenizer>--tb<N>` reserves N tokens for every answer."

    @property
    def value(self):
        return self.budget

    def suffix(self):
        return f"tb{self.budget}"

    def check(self, cfg):
        if self.budget < 4:
            raise RulerError(f"--toy-budget must be >= 4, got {self.budget}")

    def tokens_to_generate(self, spec):
        return self.budget
''',
    "backend.py": '''
import re
from dataclasses import dataclass

from ruler.kernel.flags import SWITCH, option
from ruler.eval.backends import BackendOptions, BackendSpec, GenResult

FOUND = re.compile(r"The secret word is (\\w+)\\.")


@dataclass(frozen=True)
class ReaderOptions(BackendOptions):
    hedge: bool = option("--toy-hedge", kind=SWITCH, default=False,
                         help="add a hedge to each answer")

    @property
    def wants_row_texts(self):
        return True  # it reads the row's text, not token ids


class WordReader:
    """Finds the secret word in the prompt's text: the toy task's perfect model."""

    name = "toy-reader"

    def __init__(self, opts):
        self.opts, self.max_model_len = opts, opts.max_model_len or 1 << 20

    def generate(self, requests):
        for r in requests:
            found = FOUND.findall(r.input_text or "")
            answer = f" {found[0] if found else ''}" + (", I think." if self.opts.hedge else ".")
            yield GenResult(r.key, answer, 2, "stop")

    def close(self):
        pass


SPEC = BackendSpec(name="toy-reader", factory=WordReader, summary="the toy plug-in's reader",
                   options_type=ReaderOptions, runs_a_model=False)
''',
    "metric.py": '''
from ruler.eval.metrics.specs import MetricSpec, percent_of_rows


def exact(prediction, references):
    return float(prediction.strip().rstrip(".").lower() == references[0].lower())


SPEC = MetricSpec(row=exact, prepare=str.strip, aggregate=percent_of_rows, benchmark="toy")
''',
    "export.py": '''
from dataclasses import dataclass
from pathlib import Path

from ruler.kernel.flags import POSITIONAL, option
from ruler.builder.manifest import Manifest
from ruler.eval.integrations.exporters import Exporter


@dataclass(frozen=True)
class ListOptions:
    build: Path = option(kind=POSITIONAL, type=Path)
    out: Path = option("--out", type=Path, required=True)


def _run(args):
    manifest = Manifest.load(args.build)
    args.out.write_text("".join(f"{f.config} {f.task} {f.max_seq_length} {f.rows}\\n"
                                for f in manifest.files.values()))
    return 0


EXPORTER = Exporter(name="toy-list", help="list the split files", options=ListOptions,
                    run=_run)
''',
}

TOK, L, SAMPLES = "gpt-4", 1024, 3


def _ruler_script() -> str:
    """The installed console script (what a user runs), not `python -m ruler`."""
    script = Path(sysconfig.get_path("scripts")) / "ruler"
    assert script.is_file(), script
    return str(script)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The toy package written to a folder and pip-installed into another (its dist-info
    with the entry points, its modules), which the commands below get on PYTHONPATH."""
    root = tmp_path_factory.mktemp("toy_plugin")
    src, site = root / "src", root / "site"
    (src / PACKAGE).mkdir(parents=True)
    (src / "pyproject.toml").write_text(PYPROJECT)
    for name, text in MODULES.items():
        (src / PACKAGE / name).write_text(text.lstrip())
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                           "--no-build-isolation", "--quiet", "--target", str(site), str(src)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (site / "ruler_toy_plugin-1.0.dist-info" / "entry_points.txt").is_file()
    return site


def _ruler(site: Path | None, *argv: str, status: int = 0,
           env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(env_extra or {})
    if site is not None:
        env["PYTHONPATH"] = str(site)
    done = subprocess.run([_ruler_script(), *argv], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == status, f"{argv}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def data(site, tmp_path_factory) -> Path:
    """The toy benchmark built twice, the default config and the toy variant's, by spawned
    workers (which find the plug-in by its entry points, as the command does)."""
    out = tmp_path_factory.mktemp("toy_data") / "data"
    build = ["build", "--benchmark", "toy", "--tokenizer", TOK, "--lengths", str(L),
             "--samples", str(SAMPLES), "--workers", "2", "--start-method", "spawn",
             "--no-progress", "--out", str(out)]
    _ruler(site, *build)
    _ruler(site, *build, "--toy-budget", "8")
    return out


@pytest.mark.slow
def test_the_installed_command_offers_the_plugins_parts(site):
    text = " ".join(_ruler(site, "build", "--help").stdout.split())
    assert "--benchmark {v1,v2,oneruler,lex,toy}" in text and "--toy-budget N" in text
    assert "--lex-cases LEX_CASES" in text
    text = " ".join(_ruler(site, "eval", "--help").stdout.split())
    assert "{vllm,openai,hf,fake,toy-reader}" in text and "--toy-hedge" in text
    assert "toy-list" in _ruler(site, "export", "--help").stdout
    # without the plug-in on the path, none of it is there
    bare = _ruler(None, "build", "--benchmark", "toy", "--tokenizer", TOK, status=2).stderr
    assert "invalid choice: 'toy'" in bare


@pytest.mark.slow
def test_a_plugin_family_and_variant_build_and_verify(site, data):
    manifest = json.loads((data / "manifest.json").read_text())
    assert sorted(manifest["builds"]) == [f"{TOK}--toy", f"{TOK}--toy--tb8"]
    assert manifest["builds"][f"{TOK}--toy"]["benchmark"] == "toy"
    assert manifest["builds"][f"{TOK}--toy--tb8"]["variant"] == {"toy_budget": 8}
    card = (data / "README.md").read_text()
    assert f"## Toy benchmark\n\nConfigs: {TOK}--toy, {TOK}--toy--tb8." in card
    assert "### Toy: a fixed answer budget" in card
    verified = _ruler(site, "verify", str(data), "--regenerate", str(SAMPLES)).stdout
    assert f"data/{TOK}--toy--tb8/toy_word/{L}.parquet" in verified
    # the manifest is unreadable without the plug-in that made it: said in one line
    bare = _ruler(None, "verify", str(data), status=2).stderr.strip()
    assert bare.startswith("ruler: error:") and "Traceback" not in bare


@pytest.mark.slow
def test_a_plugin_backend_evaluates_and_a_plugin_metric_scores(site, data, tmp_path):
    import pyarrow.parquet as pq

    config = f"{TOK}--toy--tb8"
    rows = pq.read_table(data / "data" / config / "toy_word" / f"{L}.parquet").to_pylist()
    assert {r["metric"] for r in rows} == {"toy_exact"}
    assert {r["tokens_to_generate"] for r in rows} == {8}
    for hedge, score in ((False, 100.0), (True, 0.0)):
        out = tmp_path / f"run-{hedge}"
        _ruler(site, "eval", "--backend", "toy-reader", "--model", "toy", "--data", str(data),
               "--tokenizer-config", config, "--out", str(out), "--no-progress",
               "--render-workers", "0", *(["--toy-hedge"] if hedge else []))
        records = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
        assert [r["prediction"] for r in records] == [
            f" {r['outputs'][0]}" + (", I think." if hedge else ".") for r in rows]
        # the hedged answers hold the word (RULER's string match would give 100): the plug-in's
        # exact metric scored them
        _ruler(site, "score", "--predictions", str(out / "predictions.jsonl"), "--data",
               str(data), "--strict")
        scores = json.loads((out / "predictions.jsonl.scores" / "scores.json").read_text())
        assert [(c["task"], c["metric"], c["score"]) for c in scores["cells"]] == [
            ("toy_word", "toy_exact", score)]


@pytest.mark.slow
def test_a_plugin_exporter_runs_as_a_subcommand(site, data, tmp_path):
    listing = tmp_path / "files.txt"
    _ruler(site, "export", "toy-list", str(data), "--out", str(listing))
    assert sorted(listing.read_text().splitlines()) == [
        f"{TOK}--toy toy_word {L} {SAMPLES}", f"{TOK}--toy--tb8 toy_word {L} {SAMPLES}"]
    # lm-eval's exported utils.py copies ruler's own metrics: a plug-in's is refused in one line
    lm = tmp_path / "lm"
    refused = _ruler(site, "export", "lm-eval", str(data), "--out", str(lm), status=2).stderr
    assert refused.strip() == ("ruler: error: task 'toy_word' is scored by metric 'toy_exact', "
                               "which benchmark 'toy' does not export (no lm-eval hooks carry "
                               "its code to utils.py): score lm-eval's samples with `ruler "
                               "score` instead")
    assert not lm.exists()


# --- the fourth benchmark, lex, from outside ----------------------------------------------------

@pytest.fixture(scope="module")
def lex_sources(tmp_path_factory) -> dict:
    """Lex's pinned word list in a sources folder (`$RULER_SOURCES` of its commands)."""
    root = tmp_path_factory.mktemp("lex_sources")
    (root / "lex").mkdir()
    (root / "lex" / "words.txt").write_text(LEX_WORDS)
    return {"RULER_SOURCES": str(root)}


@pytest.fixture(scope="module")
def lex_data(site, lex_sources, tmp_path_factory) -> Path:
    """Lex built for both letter cases (`--lex-cases`, its axis) by spawned workers."""
    out = tmp_path_factory.mktemp("lex_data") / "data"
    _ruler(site, "build", "--benchmark", "lex", "--lex-cases", "upper,lower", "--tokenizer",
           TOK, "--lengths", str(L), "--samples", str(SAMPLES), "--workers", "2",
           "--start-method", "spawn", "--no-progress", "--out", str(out),
           env_extra=lex_sources)
    return out


@pytest.fixture(scope="module")
def lex_run(site, lex_data, lex_sources, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lex_run") / "run"
    _ruler(site, "eval", "--backend", "fake", "--model", "m", "--data", str(lex_data),
           "--tokenizer-config", f"{TOK}--lex-upper", "--out", str(out), "--no-progress",
           "--render-workers", "0", "--no-plots", env_extra=lex_sources)
    return out


def _says_nothing_of_rulers(text: str) -> None:
    """Nothing of RULER's: its name, its tasks and families, its task count, its metrics, its
    weighted averages (their columns, their intervals) and effective length (Lex declares
    none), its paper and data, and what the card's frame used to say in RULER's words: its
    upstream's metrics and budgets, its templates' questions, its gold items, its paper's
    averaging and prompt, kvpress's RULER dataset."""
    import ruler.benchmarks.ruler as ruler_benchmark

    spec = ruler_benchmark.BENCHMARK
    for ruler_only in ("RULER", "niah", "13 tasks", "13 synthetic tasks", "wAvg",
                       "ffective length", "weighted average", "hsieh2024ruler", "Paul Graham",
                       "Checked with a real model", "Differences from upstream", "upstream",
                       "special magic", "needle", "variable line", "gold document",
                       "the paper", "SQuAD", "HotpotQA", *spec.metrics):
        assert ruler_only not in text, ruler_only
    for task in spec.tasks:  # `vt`, `cwe`: as words
        assert not re.search(rf"\b{task}\b", text), task


@pytest.mark.slow
def test_a_plugin_benchmark_builds_its_axis_from_its_pinned_source_and_verifies(
        site, lex_data, lex_sources):
    import pyarrow.parquet as pq

    manifest = json.loads((lex_data / "manifest.json").read_text())
    # its axis: one config per value, each recording its value under the axis's name
    assert sorted(manifest["builds"]) == [f"{TOK}--lex-lower", f"{TOK}--lex-upper"]
    for case in ("lower", "upper"):
        build = manifest["builds"][f"{TOK}--lex-{case}"]
        assert (build["benchmark"], build["benchmark_package"], build["case"]) == (
            "lex", "ruler-toy-plugin", case)
        # its pinned source, found by its relpath and hash-checked
        assert build["sources"]["lex_words"]["sha256"] == LEX_SHA256
        assert build["sources"]["lex_words"]["official"] is True and build["official"] is True
        rows = pq.read_table(lex_data / "data" / f"{TOK}--lex-{case}" / "lex_word" /
                             f"{L}.parquet").to_pylist()
        words = LEX_WORDS.upper() if case == "upper" else LEX_WORDS
        assert {r["outputs"][0] for r in rows} <= set(words.split())
        assert {r["metric"] for r in rows} == {"lex_exact"}
    verified = _ruler(site, "verify", str(lex_data), "--regenerate", str(SAMPLES),
                      env_extra=lex_sources).stdout
    assert f"data/{TOK}--lex-lower/lex_word/{L}.parquet" in verified
    card = (lex_data / "README.md").read_text()
    body = card.split("\n---\n", 1)[1]
    assert body.lstrip().startswith("# Lex, built exactly for each tokenizer")
    assert "Lex asks for one secret word" in card and "Lex, the plug-in test's own" in card
    assert "the metric `score` is Lex's, 0-100" in card
    assert "- Lex's word list (`lex_words`): CC0 (the test's own)." in card
    _says_nothing_of_rulers(card)


@pytest.mark.slow
def test_a_plugin_benchmarks_source_of_other_bytes_is_marked_unofficial(
        site, tmp_path):
    """A word list whose sha256 is not the pinned one builds, as any benchmark's source does:
    the build records the bytes it read and marks itself unofficial."""
    sources = tmp_path / "sources"
    (sources / "lex").mkdir(parents=True)
    (sources / "lex" / "words.txt").write_text(LEX_WORDS.replace("amber", "umber"))
    out = tmp_path / "data"
    _ruler(site, "build", "--benchmark", "lex", "--lex-cases", "lower", "--tokenizer", TOK,
           "--lengths", str(L), "--samples", "1", "--workers", "1", "--no-progress", "--out",
           str(out), env_extra={"RULER_SOURCES": str(sources)})
    build = json.loads((out / "manifest.json").read_text())["builds"][f"{TOK}--lex-lower"]
    record = build["sources"]["lex_words"]
    assert (record["official"], record["official_sha256"], build["official"]) == (
        False, LEX_SHA256, False)
    assert record["sha256"] == hashlib.sha256(
        (sources / "lex" / "words.txt").read_bytes()).hexdigest()
    # `ruler sources list` lists it among the benchmarks' sources, and says so (exit 1: the
    # built-ins' sources are not in this folder)
    listed = _ruler(site, "sources", "list", "--sources", str(sources), status=1).stdout
    (line,) = [x for x in listed.splitlines() if x.startswith("lex_words ")]
    assert "UNOFFICIAL (hash differs: builds are marked unofficial)" in line
    # a case its axis does not have is refused in one line
    err = _ruler(site, "build", "--benchmark", "lex", "--lex-cases", "title", "--tokenizer",
                 TOK, "--out", str(tmp_path / "no"), status=2).stderr.strip()
    assert err == "ruler: error: lex has no case 'title': upper or lower"
    assert not (tmp_path / "no").exists()


@pytest.mark.slow
def test_a_plugin_benchmark_evaluates_scores_and_reports_its_own_way(
        site, lex_data, lex_sources, lex_run, tmp_path):
    scores = json.loads((lex_run / "scores.json").read_text())
    assert (scores["benchmark"], scores["axes"]) == ("lex", {"case": "upper"})
    assert [(c["task"], c["metric"], c["score"]) for c in scores["cells"]] == [
        ("lex_word", "lex_exact", 100.0)]
    report = (lex_run / "report.md").read_text()
    assert report.startswith("# Lex results: m")
    assert "## Lex: the hardest task" in report and "lex_word (100.0)." in report
    assert "Per-length score: the lowest of the 1 task scores (Lex's own: the hardest task " \
           "decides)." in report
    _says_nothing_of_rulers(report)
    data = json.loads((lex_run / "report.json").read_text())
    assert (data["benchmark"], data["lex_axes"], data["wavg_inc"]) == ("lex", {"case": "upper"},
                                                                        None)
    # `ruler score` again, from the predictions: the same cells, by its metric
    _ruler(site, "score", "--predictions", str(lex_run / "predictions.jsonl"), "--data",
           str(lex_data), "--strict", env_extra=lex_sources)
    again = json.loads((lex_run / "predictions.jsonl.scores" / "scores.json").read_text())
    assert [(c["metric"], c["score"]) for c in again["cells"]] == [("lex_exact", 100.0)]
    # and compared with itself: the benchmark's title, no difference
    _ruler(site, "compare", str(lex_run), str(lex_run), "--out", str(tmp_path / "cmp"),
           "--no-plots")
    compare = (tmp_path / "cmp" / "compare.md").read_text()
    assert compare.startswith("# Lex comparison")
    _says_nothing_of_rulers(compare)


@pytest.mark.slow
def test_a_plugin_benchmark_exports_its_lm_eval_aggregation(site, lex_data, tmp_path):
    import pyarrow.parquet as pq
    import yaml

    lm = tmp_path / "lm"
    _ruler(site, "export", "lm-eval", str(lex_data), "--out", str(lm))
    task = yaml.safe_load((lm / f"ruler_{TOK}--lex-upper_lex_word_{L}.yaml").read_text()
                          .replace("!function ", ""))
    assert task["metric_list"][0]["aggregation"] == "utils.aggregate_lex"
    utils = (lm / "utils.py").read_text()
    assert "def aggregate_lex(" in utils and "def lex_exact(" in utils
    rows = pq.read_table(lex_data / "data" / f"{TOK}--lex-upper" / "lex_word" /
                         f"{L}.parquet").to_pylist()
    docs = [{k: r[k] for k in ("task", "tokenizer", "metric", "outputs")} for r in rows]
    # utils.py alone (no ruler, no plug-in: `-I -S`) scores with Lex's metric and aggregation:
    # every word right, then one answered wrongly
    code = (f"import json, sys; sys.path.insert(0, {str(lm)!r}); import utils\n"
            f"docs = json.loads(sys.stdin.read())\n"
            f"answers = [' ' + d['outputs'][0] for d in docs]\n"
            f"print(utils.aggregate_lex([utils.process_results(d, [a])['score'] "
            f"for d, a in zip(docs, answers)]))\n"
            f"answers[0] = ' ' + docs[0]['outputs'][0] + ', I think'\n"
            f"print(utils.aggregate_lex([utils.process_results(d, [a])['score'] "
            f"for d, a in zip(docs, answers)]))")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True,
                          text=True, check=True, input=json.dumps(docs))
    assert [float(x) for x in done.stdout.split()] == [100.0, pytest.approx(200 / 3)]


@pytest.mark.slow
def test_a_plugin_benchmarks_kvpress_export_says_nothing_of_rulers(site, lex_data, tmp_path):
    """`ruler export kvpress` of a Lex config: its card names Lex and kvpress's `ruler`
    dataset schema, never RULER's tasks, metrics or words; the one thing it says of kvpress's
    metrics is kvpress's rule (it would score `lex_word` by its name, with string_match_all,
    not with the rows' `lex_exact`), on the console and in the card."""
    out = tmp_path / "kv"
    printed = _ruler(site, "export", "kvpress", str(lex_data), "--tokenizer-config",
                     f"{TOK}--lex-upper", "--out", str(out)).stdout
    note = ("kvpress would score {0}lex_word{0} with {0}string_match_all{0}; these rows' metric "
            "is {0}lex_exact{0}: score kvpress's predictions with `ruler score`")
    assert [x for x in printed.splitlines() if "kvpress would score" in x] == [
        "note: " + note.format("")]
    card = (out / "README.md").read_text()
    assert f"\n# Lex for kvpress: `{TOK}--lex-upper`, {L}\n" in card
    assert f"- {note.format('`')}.\n" in card
    # kvpress's rule, stated where it is kvpress's (the `task` column, the note): the rest of
    # the card says nothing of RULER's
    kvpress_rule = ("kvpress's scorer picks the task's metric", "kvpress would score")
    _says_nothing_of_rulers("\n".join(line for line in card.splitlines()
                                      if not any(k in line for k in kvpress_rule)))


@pytest.mark.slow
@pytest.mark.network
def test_a_plugin_benchmark_releases_through_its_gate(site, lex_data, lex_sources, tmp_path):
    from helpers.fake_hub import FakeHub

    token = "hf_" + "x" * 34
    with FakeHub(tmp_path / "hub", token=token) as hub:
        env = {**lex_sources, "HF_ENDPOINT": hub.endpoint, "HF_TOKEN": token,
               "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_XET": "1"}
        release = ["release", str(lex_data), "--repo", "org/lex", "--tag", "v1",
                   "--no-progress"]
        # its gate: refused without the flag, or with another word, before anything is sent
        for words in ((), ("--acknowledge-lex-terms", "no")):
            refused = _ruler(site, *release, *words, status=2, env_extra=env).stderr.strip()
            assert refused == (f"ruler: error: configs {TOK}--lex-lower, {TOK}--lex-upper are "
                               f"Lex's: read its terms, then pass --acknowledge-lex-terms yes")
            assert not hub.stored_dir("org/lex").exists()
        _ruler(site, *release, "--acknowledge-lex-terms", "yes", env_extra=env)
        stored = hub.stored_dir("org/lex")
        assert (stored / "manifest.json").is_file() and (stored / "lm_eval" / "utils.py").is_file()
        assert "aggregate_lex" in (stored / "lm_eval" / "utils.py").read_text()
        card = (stored / "README.md").read_text()
        assert 'load_dataset("org/lex", ' in card and "Lex asks for one secret word" in card
        _says_nothing_of_rulers(card)


@pytest.mark.slow
def test_uninstalled_a_plugin_benchmarks_folder_and_results_are_refused(lex_data, lex_run):
    for argv in (["verify", str(lex_data)], ["report", str(lex_run), "--no-plots"],
                 ["score", "--predictions", str(lex_run / "predictions.jsonl"), "--data",
                  str(lex_data)]):
        err = _ruler(None, *argv, status=2).stderr.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert "benchmark 'lex' is not installed" in err and "ruler-toy-plugin" in err, err


#: The unit tests that list a registry (issue 40.27: with any plug-in installed they failed,
#: comparing ruler's own entries with every entry): they compare `builtin_names()` now.
LISTING_TESTS = ("builder/tasks/test_ruler2_catalog.py::test_benchmark_table",
                 "eval/test_metrics.py::test_every_catalog_metric_has_a_function",
                 "eval/backends/test_eval_backends.py::"
                 "test_a_backend_registered_outside_the_package_is_offered_with_its_flags",
                 "eval/test_eval_resume.py::test_eval_help_names_the_backends_and_the_default")


@pytest.mark.slow
def test_the_tests_that_list_registries_pass_with_the_plugin_installed(site):
    """They run in a pytest of their own with the toy plug-in on the path (which offers a
    benchmark, a family, a backend, a metric ...), as in an environment it is installed in; and
    the command-line reference is ruler's own commands whatever is installed."""
    tests = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *LISTING_TESTS], cwd=tests, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"{len(LISTING_TESTS)} passed" in done.stdout
    reference = subprocess.run([sys.executable, str(tests.parent / "docs" / "cli_reference.py"),
                                "--check"], env=env, capture_output=True, text=True, timeout=300)
    assert reference.returncode == 0, reference.stderr[-3000:]
