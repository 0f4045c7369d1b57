"""Render `OUT/README.md`, the dataset card, from `OUT/manifest.json`.

The YAML front matter is written with `yaml.safe_dump`, never by string formatting: numeric
split names ('4096') must stay quoted strings, or `datasets` rejects the config. The body is
`cards/template.md` filled by `string.Template`; every fact in it comes from the manifest or
from the modules that own the fact (task catalog, schema, differences, source registry), so the
card cannot drift from the data. Same manifest in, same bytes out: nothing time-dependent.
"""

from __future__ import annotations

import re
from pathlib import Path
from string import Template
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import yaml

from ruler.builder.counting import COUNTING_METHODS
from ruler.builder.manifest import MANIFEST_NAME, BuildEntry, Manifest, manifest_lock
from ruler.builder.schema import ROW_SCHEMA
from ruler.cards.body import CardWords, bodies, present, words
from ruler.cards.declared import declared_section, suites_section
from ruler.cards.repeated import repeated_section
from ruler.cards.sections import USAGE_SECTIONS, CardSection
from ruler.cards.variants import variants_section
from ruler.catalog.benchmarks import BENCHMARK_SPECS, in_task_order
from ruler.catalog.length_rules import RULES, context_text, length_text, rules_of
from ruler.catalog.manifest_records import TokenizerRecord
from ruler.catalog.sources import SOURCES
from ruler.catalog.tasks import TASKS
from ruler.kernel.atomic import remove_stale_temps, temp_prefix, write_text_atomic
from ruler.kernel.errors import RulerError
from ruler.kernel.markup import md_code, md_text
from ruler.kernel.registry import load_target

CARD_NAME = "README.md"
TEMPLATE_PATH = Path(__file__).resolve().parent / "template.md"
#: Placeholder shown in the load examples when the card is rendered without a Hub repo id.
REPO_PLACEHOLDER = "<org>/ruler"
#: The generator's own licence; must equal `license` in pyproject.toml (a test checks).
GENERATOR_LICENSE = "Apache-2.0"

#: What each column means. Types come from ROW_SCHEMA; `schema_rows` refuses to render a card
#: when a column is added to the schema without a description here.
COLUMN_DOCS: Mapping[str, str] = {
    "tokenizer": "dataset config name of the tokenizer the row was counted with",
    "task": "task name (see Tasks)",
    "max_seq_length": "the split's L: the context length the row was built for",
    "index": "sample number 0..N-1 within (task, L)",
    "input": "the raw prompt (task template with its context), no chat template applied",
    "context": "`input` up to the question: instruction, haystack (see below)",
    "question": "the rest of `input`: the task's query text after the context",
    "answer_prefix": "text the assistant turn starts with (pre-filled, not generated)",
    "outputs": "the references the metric looks for in the prediction",
    "length": "exact tokens the model is given (chat template, or BOS + text for base "
              "tokenizers, with `answer_prefix`), plus `tokens_to_generate` where the file's "
              "length rule counts it (Contents: `length`); always <= L",
    "tokens_to_generate": "maximum new tokens ({budget}; in a reserved-output-budget config "
                          "`<tokenizer>--out<N>`, that budget)",
    "metric": "the metric that scores the row (see Tasks)",
    "gold_token_positions": "see below",
    "gold_depths": "see below",
    "haystack_size": "size of the fitted haystack in the task's own units{haystack_units}",
}

#: How `context` and `question` split `input`, below the Row schema: in the benchmark
#: family's words (`CardWords`) where they are its own.
PROMPT_SPLIT_DOC = (
    "context and question: `context + question == input` exactly, for every row. `question` is "
    "the task's text after the context{question}. `context` is everything before it{context}. "
    "So the question is never part of `context`, and a query-agnostic method can compress "
    "`context` before seeing it.{cut}")

#: What `gold_token_positions` / `gold_depths` mean, below the Row schema.
GOLD_POSITION_DOC = (
    "gold_token_positions: index of the first token of each gold item{gold_items} when `input` "
    "is tokenized alone (no chat template, no special tokens); gold_depths: the same position "
    "as a fraction of the haystack's tokens (0 = its start, 1 = its end). Empty for tasks whose "
    "answers are spread through the text.")


# --- YAML front matter -----------------------------------------------------------------------

def _built_configs(manifest: Manifest) -> list[str]:
    """The configs that have split files, by name (a build entry alone shows nothing)."""
    return [c for c in manifest.configs() if manifest.files_of(c)]


def configs_yaml(manifest: Manifest) -> list[dict[str, Any]]:
    """One config per tokenizer (all tasks) and one per tokenizer and task; splits = lengths."""
    configs = []
    for config in _built_configs(manifest):
        configs.append({"config_name": config, "data_files": [
            {"split": str(L), "path": f"data/{config}/*/{L}.parquet"}
            for L in manifest.lengths(config)]})
        for task in manifest.tasks(config):
            configs.append({"config_name": f"{config}--{task}", "data_files": [
                {"split": str(f.max_seq_length), "path": f.path}
                for f in manifest.files_of(config, tasks=[task])]})
    return configs


def _used_sources(manifest: Manifest) -> list[str]:
    ids = {sid for build in manifest.builds.values() for sid in build.sources or {}}
    return [sid for sid in SOURCES if sid in ids] + sorted(ids - set(SOURCES))


def licence_yaml(manifest: Manifest) -> dict[str, str]:
    """The Hub `license` field for what the rows actually contain."""
    used = {SOURCES[sid].card_license for sid in _used_sources(manifest) if sid in SOURCES}
    # text whose terms are others' or not stated sits next to generated text (the card's
    # Licences section is the licence text: `other` needs a name and a link)
    if "other" in used:
        return {"license": "other", "license_name": "ruler-mixed", "license_link": CARD_NAME}
    if "cc-by-sa-4.0" in used:  # rows adapt share-alike text
        return {"license": "cc-by-sa-4.0"}
    return {"license": GENERATOR_LICENSE.lower()}


def _languages(manifest: Manifest) -> list[str]:
    """The languages of the rows, as each config's benchmark says them from its axes
    (`Benchmark.languages`; ISO 639-1 codes, as the Hub's `language` field takes them)."""
    found = {code for c in manifest.configs()
             for code in manifest.builds[c].spec().languages(manifest.builds[c].axis_values())}
    return sorted(found) or ["en"]


def _size_category(rows: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                        (1_000_000, "100K<n<1M")):
        if rows < limit:
            return name
    return "1M<n<10M"


def front_matter(manifest: Manifest) -> dict[str, Any]:
    rows = sum(f.rows for f in manifest.files.values())
    tags = [t for body in bodies(manifest) for t in body.tags]
    return {
        "pretty_name": f"{title(manifest)} (tokenizer-exact builds)",
        "language": _languages(manifest),
        **licence_yaml(manifest),
        "size_categories": [_size_category(rows)],
        "task_categories": ["text-generation", "question-answering"],
        "tags": ["long-context", *tags, "synthetic", "benchmark",
                 *dict.fromkeys(t for b in present(manifest) for t in b.tags)],
        "configs": configs_yaml(manifest),
        # No `dataset_info`: `datasets` requires per-split `num_bytes` (Arrow bytes, which the
        # manifest does not have) and a wrong value is worse than none; row counts are checked
        # by `ruler verify` against the manifest instead.
    }


# --- Markdown helpers ------------------------------------------------------------------------

def _cell(value: Any) -> str:
    """A table cell: Markdown text, its `|` not already escaped escaped (a value that is a
    user's string comes here through `md_text` / `md_code` already)."""
    text = "—" if value is None or value == "" else str(value)
    return _UNESCAPED_PIPE.sub(r"\\|", text).replace("\n", " ")


_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table, its cells escaped (`_cell`)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _code(value: Any) -> str:
    return md_code(value) if value not in (None, "") else "—"


def _yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


# --- body sections ---------------------------------------------------------------------------

def tokenizer_origin(tok: TokenizerRecord) -> str:
    """Where a build's tokenizer comes from, as far as its record knows: `repo@revision`; for a
    registry pin without a recorded Hub commit, that its files are pinned by hash (what makes
    the build official), never an "unrecorded revision" beside "official: yes"."""
    if not tok.repo:
        return tok.kind
    if tok.revision:
        return f"{tok.repo}@{tok.revision}"
    if tok.pinned:
        return f"{tok.repo}, files pinned by sha256; Hub commit not recorded"
    return f"{tok.repo}, revision not recorded"


def contents_table(manifest: Manifest) -> str:
    rows = []
    for config in _built_configs(manifest):
        build = manifest.builds[config]
        tok = build.tokenizer
        origin = tokenizer_origin(tok)
        rows.append([_code(config), f"{md_text(tok.name)} ({md_text(origin)})",
                     build.prompt_mode, _rules_cell(manifest, config),
                     len(manifest.tasks(config)),
                     ", ".join(f"`{L}`" for L in manifest.lengths(config)), build.samples,
                     sum(f.rows for f in manifest.files_of(config)),
                     _yes(bool(build.official))])
    if not rows:
        return "This folder holds no split files yet."
    return table(["config", "tokenizer", "prompt", "length", "tasks", "splits (L)",
                  "samples per task", "rows", "official"], rows)


def _file_rules(manifest: Manifest, config: str) -> list[str | None]:
    """The length rules `config`'s files record (None: a file that records none)."""
    return rules_of(f.length_rule for f in manifest.files_of(config))


def _rules_cell(manifest: Manifest, config: str) -> str:
    """A config's length rule(s) as the Contents table says them: "prompt + tokens_to_generate
    <= L" (`catalog.length_rules`)."""
    return "; ".join(_rule_md(r).replace("its prompt's tokens", "prompt")
                     for r in _file_rules(manifest, config))


def _rule_md(rule: str | None) -> str:
    """`length_text(rule)` in Markdown: ours as written, an unknown rule's id (a newer
    writer's, or a hand edit) escaped."""
    text = length_text(rule)
    return text if rule is None or rule in RULES else md_text(text)


def length_rules_text(manifest: Manifest) -> str:
    """The card's sentence on how `length` is counted, from the rules the files record: one
    rule for the whole folder, or which configs count which way."""
    by_rule: dict[str | None, list[str]] = {}
    for config in _built_configs(manifest):
        for rule in _file_rules(manifest, config):
            by_rule.setdefault(rule, []).append(config)
    if not by_rule:
        return "(no split files yet)."
    parts = []
    for rule, configs in sorted(by_rule.items(), key=lambda kv: (kv[0] is None, kv[0] or "")):
        which = "" if len(by_rule) == 1 else f" (config{'s' * (len(configs) > 1)} " \
            f"{', '.join(map(_code, configs))})"
        if rule is None:
            parts.append(f"not recorded{which}: built before files recorded it")
        else:
            parts.append(f"length = {_rule_md(rule)}{which}, so serve a model with a context "
                         f"(`max_model_len`) of {context_text(rule)}")
        # a rule this version does not know is shown by its id (length_text)
    return "; ".join(parts) + "."


def task_table(manifest: Manifest) -> str:
    """The tasks of the folder's benchmark families (`CardBody.tasks`) and every task it
    holds, in the benchmarks' order."""
    built = {f.task for f in manifest.files.values()}
    listed = {t for body in bodies(manifest) for t in body.tasks(manifest)} | built
    rows = [[_code(spec.name), md_text(spec.family.name),
             md_text(", ".join(f"{k}={v}" for k, v in spec.params.items())),
             spec.tokens_to_generate, _code(spec.metric),
             ", ".join(map(md_text, spec.sources)) or "—", "yes" if spec.name in built else "no"]
            for spec in (TASKS[t] for t in in_task_order(listed) if t in TASKS)]
    return table(["task", "family", "parameters", "tokens_to_generate", "metric",
                  "sources", "in this repo"], rows)


def schema_rows(said: CardWords) -> list[list[str]]:
    """The Row schema table, its meanings in the folder's words (`CardWords`)."""
    missing = [n for n in ROW_SCHEMA.names if n not in COLUMN_DOCS]
    if missing:
        raise RulerError(f"cards.render.COLUMN_DOCS lacks a description of column(s) {missing}")
    return [[_code(f.name), _type_name(f.type), COLUMN_DOCS[f.name].format(**vars(said))]
            for f in ROW_SCHEMA]


def _type_name(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return f"list<{_type_name(t.value_type)}>"
    return {"string": "string", "int64": "int64", "double": "float64"}.get(str(t), str(t))


def packages_table(manifest: Manifest) -> str:
    packages = manifest.packages or {}
    return table(["package", "version"], [[p, v] for p, v in sorted(packages.items())])


def build_section(config: str, build: BuildEntry, manifest: Manifest) -> str:
    tok = build.tokenizer
    rules = _file_rules(manifest, config) if manifest.files_of(config) else \
        rules_of(build.length_rules or [None])
    template = _code(tok.chat_template_sha256) if tok.chat_template_sha256 \
        else "none (base prompt: `input` + `answer_prefix` with the tokenizer's own special " \
        "tokens, e.g. BOS)"
    lines = [
        f"### Config `{config}`", "",
        f"- tokenizer: {_code(tok.name)} ({md_text(tok.kind)}, from {md_text(tok.origin)}); "
        f"repo {_code(tok.repo)}, revision {_revision_text(tok)}; "
        f"files equal the registry's pin: {_yes(tok.pinned)}",
        f"- chat template sha256: {template}",
        f"- prompt mode: `{build.prompt_mode}`; seed: `{build.seed}`; "
        f"samples per task and length: {build.samples}",
        f"- length rule (as its files record it): "
        f"{'; '.join(f'length = {_rule_md(r)}' for r in rules)}",
        *(["- variant: " + ", ".join(f"`{k}={v}`" for k, v in build.variant.items())
           + " (see Variant configs)"] if build.variant else []),
        f"- official build (pinned tokenizer, official sources): "
        f"{_yes(bool(build.official))}",
        f"- lengths counted by: {counting_text(build.counting or [])}",
        f"- package versions that shape the rows: "
        f"{', '.join(f'{p} {v}' for p, v in sorted((build.packages or {}).items())) or '—'}",
        "",
        table(["tokenizer file", "sha256"],
              [[md_text(f), _code(h)] for f, h in sorted(tok.files.items())]), "",
    ]
    sources = build.sources or {}
    if sources:
        lines.append(table(
            ["source", "file", "sha256", "official", "official sha256"],
            [[md_text(sid), _code(s.file), _code(s.sha256), _yes(s.official),
              _code(s.official_sha256)] for sid, s in sorted(sources.items())]))
        lines.extend(f"\n- {_code(sid)} is not the official file: {md_text(s.note)}"
                     for sid, s in sorted(sources.items()) if s.note)
    else:
        lines.append("Sources: none (these tasks read no third-party input).")
    return "\n".join(lines)


def _revision_text(tok: TokenizerRecord) -> str:
    if tok.revision:
        return _code(tok.revision)
    if tok.repo and tok.pinned:
        return "not recorded (the registry pins the files by their sha256, below)"
    return "not recorded" if tok.repo else "—"


def counting_text(methods: Sequence[str]) -> str:
    """How a config's lengths were counted, in words (`COUNTING_METHODS`)."""
    if not methods:
        return "not recorded"
    return "; ".join(f"{COUNTING_METHODS.get(m, m)} (`{m}`)" for m in methods)


def builds_section(manifest: Manifest) -> str:
    return "\n\n".join(build_section(c, manifest.builds[c], manifest)
                       for c in manifest.configs())


def official_note(manifest: Manifest) -> str:
    unofficial = [c for c in manifest.configs() if not manifest.builds[c].official]
    if not unofficial:
        return ""
    names = ", ".join(f"`{c}`" for c in unofficial)
    return (f"\n> **Unofficial build** ({names}): the tokenizer is not the pinned one or a source "
            f"is not the official file (see Provenance), so rows that depend on it differ from "
            f"an official build's.\n")


def licence_list(manifest: Manifest) -> str:
    lines = [f"- The generator (`ruler-bench`) and the rows it synthesises: {GENERATOR_LICENSE}."]
    for sid in _used_sources(manifest):
        spec = SOURCES.get(sid)
        if spec is not None:
            lines.append(f"- {spec.title} (`{sid}`): {spec.license}.")
    notes = [n for n in (*(body.licence_note(manifest) for body in bodies(manifest)),
                         *(SOURCES[sid].card_note for sid in _used_sources(manifest)
                           if sid in SOURCES)) if n]
    lines.append("- Rows that quote a source carry that source's terms"
                 + "".join(f"; {n}" for n in notes) + ".")
    return "\n".join(lines)


# --- the card --------------------------------------------------------------------------------

def _example(manifest: Manifest) -> tuple[str, str, str, list[int]]:
    configs = _built_configs(manifest)
    if not configs:
        return "<tokenizer>", "<task>", "<L>", []
    config = configs[0]
    lengths = manifest.lengths(config)
    return config, manifest.tasks(config)[0], str(lengths[0]), lengths


def benchmark_sections(manifest: Manifest) -> str:
    """Each benchmark's own section (`Benchmark.card_section`: "" for a folder without its
    configs), in the benchmarks' order."""
    return "".join(load_target(b.card_section)(manifest)
                   for b in BENCHMARK_SPECS.values() if b.card_section)


def title(manifest: Manifest) -> str:
    """What the card is of: the folder's benchmark families' titles."""
    return " and ".join(body.title for body in bodies(manifest))


def render_card(manifest: Manifest, repo_id: str | None = None, revision: str | None = None,
                sections: Sequence[CardSection] = USAGE_SECTIONS) -> str:
    """The card's text. `repo_id`/`revision` (set by `ruler release`) fill the load examples;
    `sections` are the usage sections the template shows (`cards.sections`)."""
    front = yaml.safe_dump(front_matter(manifest), sort_keys=False, allow_unicode=True,
                           width=1000)
    config, task, split, lengths = _example(manifest)
    repo = repo_id or REPO_PLACEHOLDER
    revision_arg = f', revision="{revision}"' if revision else ""
    two = (f'ds = load_dataset("{repo}", "{config}", split="{lengths[0]}+{lengths[1]}"'
           f'{revision_arg})\n') if len(lengths) > 1 else ""
    generator = manifest.generator or {}
    said = words(manifest)
    body = Template(TEMPLATE_PATH.read_text(encoding="utf-8")).substitute(
        generator=f"{generator.get('name')} {generator.get('version')}",
        title=md_text(title(manifest)),
        intro="".join(body.intro(manifest) for body in bodies(manifest)),
        official_note=official_note(manifest),
        length_rules=length_rules_text(manifest),
        contents_table=contents_table(manifest),
        task_table=task_table(manifest) + declared_section(manifest)
        + suites_section(manifest),
        metrics_text="".join(body.metrics(manifest) for body in bodies(manifest)),
        repo_id=repo, example_config=config, example_task=task, example_split=split,
        revision_arg=revision_arg, two_splits_line=two,
        revision_example=revision or "<tag>",
        scored_with=said.metrics,
        schema_table=table(["column", "type", "meaning"], schema_rows(said)),
        prompt_split_doc=PROMPT_SPLIT_DOC.format(**vars(said)),
        gold_doc=GOLD_POSITION_DOC.format(**vars(said)),
        repeated_section=repeated_section(manifest),
        packages_table=packages_table(manifest),
        builds_section=builds_section(manifest),
        differences_section="".join(body.differences(manifest) for body in bodies(manifest)),
        variants_section=variants_section(manifest),
        benchmark_sections=benchmark_sections(manifest),
        licence_list=licence_list(manifest),
        citation="".join(body.citation(manifest) for body in bodies(manifest)),
        **{s.key: s.body(manifest, repo_id, revision) for s in sections},
    )
    return f"---\n{front}---\n\n{body}"


def write_card(out_dir: Path) -> Path:
    """Write `OUT/README.md` from `OUT/manifest.json` (after every change of the manifest; the
    caller holds the manifest lock). Atomic: a temporary file, then `os.replace`; temporary
    cards a killed writer left are removed (under the lock no other writer is mid-write)."""
    out_dir = Path(out_dir)
    path = out_dir / CARD_NAME
    text = render_card(Manifest.load(out_dir))
    remove_stale_temps(path)
    write_text_atomic(path, text)  # never a half-written card beside finished data
    return path


def card_is_current(text: str, manifest: Manifest) -> bool:
    """Whether `text` is the card `manifest` renders: locally (no repo), or for the repo and
    tag a card rendered by `ruler release` names in its evaluation example."""
    if text == render_card(manifest):
        return True
    found = _RELEASED.search(text)
    return found is not None and text == render_card(manifest, repo_id=found["repo"],
                                                     revision=found["tag"])


#: The template's `ruler eval` example, which names the repo and tag a card was rendered for.
_RELEASED = re.compile(r"ruler eval --model <model> --data (?P<repo>[\w.-]+/[\w.-]+) "
                       r"--revision (?P<tag>[\w.-]+) ")


def refresh_card(out_dir: Path) -> bool:
    """Re-render `OUT/README.md` if it is not the card the manifest renders (a build or merge
    killed between writing the manifest and the card, a full disk, a hand edit); True when it
    was written. A current card is left untouched, so an up-to-date read-only folder stays
    readable; temporary cards left by a killed writer are removed either way."""
    out_dir = Path(out_dir)
    path = out_dir / CARD_NAME
    if not (out_dir / MANIFEST_NAME).is_file():
        return False  # nothing built here yet: no card to render
    leftovers = any(path.parent.glob(f"{temp_prefix(path)}*tmp"))
    try:
        current = path.is_file() and card_is_current(path.read_text(encoding="utf-8"),
                                                     Manifest.load(out_dir))
    except UnicodeDecodeError:
        current = False
    if current and not leftovers:
        return False
    with manifest_lock(out_dir):
        if current:  # only leftovers to clean
            remove_stale_temps(path)
            return False
        write_card(out_dir)
    return True
