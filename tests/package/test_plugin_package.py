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
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

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

MODULES = {
    "__init__.py": '"""A toy ruler plug-in."""\n',
    "benchmark.py": '''
from ruler.builder.tasks.benchmarks import Benchmark

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
from ruler.builder.tasks.base import Draft, TaskGenerator, joined, template_ends
from ruler.builder.tasks.catalog import FamilySpec, TaskSpec, register_task
from ruler.builder.tasks.family import TaskFamily, register_family

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
from ruler.builder.variants import Variant


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
from ruler.eval.exporters import Exporter


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


def _ruler(site: Path | None, *argv: str, status: int = 0) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
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
    assert "--benchmark {v1,v2,oneruler,toy}" in text and "--toy-budget N" in text
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
