"""The arguments of RULER's five generators, as a user declares a task with them: upstream's
schema (NVIDIA/RULER `scripts/synthetic.yaml`: `name: {task: <generator>, args: {...}}`), every
argument its generators take (`scripts/data/synthetic/*.py`), each checked against its domain
when the task is declared (`FamilySpec.configure`, `ruler.catalog.declared`).

A family's arguments read into the parameters its generator takes. Those the 13 tasks spell
out are always present (with upstream's default when not given), every other one only when it
is given a value other than its default; so a declaration of one of the 13 with its own
arguments (upstream's file declares all 13) is that task, and its rows are the same.

Where upstream's generator cannot build an argument's value correctly, the domain says so in
one line naming the argument (`../shared/notes/paper-analysis.md` §1.6); where ours builds it
and upstream's does not, or does otherwise, `DIFFERENCES` says how (the card repeats it).
Output budgets [ours]: upstream keeps each family's budget whatever the answer's size; a
declared task whose gold answer cannot fit it gets a larger one (`_niah_budget`,
`_vt_budget`), and `tokens_to_generate` sets one explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ruler.benchmarks.ruler.niah_params import HAYSTACKS, NEEDLE_TYPES, niah_params_problem
from ruler.catalog.tasks import Configured
from ruler.kernel.errors import RulerError

#: Arguments every upstream generator takes that a build sets for all its tasks at once (or
#: that do not exist here): a task file naming one is told where it goes.
BUILD_WIDE = {
    "random_seed": "the build's --seed (each sample's seed is derived from it)",
    "num_samples": "the build's --samples",
    "max_seq_length": "the build's --lengths",
    "tokenizer_path": "the build's --tokenizer",
    "tokenizer_type": "the build's --tokenizer",
    "save_dir": "the build's --out",
    "save_name": "the build's --out",
    "subset": "the build (every split is upstream's validation subset)",
    "template": "the family (the template is upstream's, per family)",
    "remove_newline_tab": "nothing here (rows keep upstream's text as the model template "
                          "receives it)",
    "model_template_token": "the build's prompt mode (the chat template is counted exactly)",
    "pre_samples": "nothing here (sample i is question i of the dataset)",
}

#: The most tokens a declared task may reserve for its answer.
MAX_BUDGET = 65536
#: The most needles, keys or values of one kind, and the most repeats of a word.
MAX_COUNT = 1000


@dataclass(frozen=True)
class Arg:
    """One argument: its default (upstream's), how a value is read and checked (`read`: the
    value or ValueError saying why not), and whether the 13 tasks spell it out."""

    name: str
    default: Any
    read: Callable[[Any], Any]
    spelled: bool = True


def _int(lo: int, hi: int | None = None) -> Callable[[Any], int]:
    def read(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
            raise ValueError(f"must be a whole number {_range(lo, hi)}, got {v!r}")
        return v
    return read


def _range(lo: float, hi: float | None, open_lo: bool = False) -> str:
    low = f"> {lo:g}" if open_lo else f">= {lo:g}"
    return f"{low} and <= {hi:g}" if hi is not None else low


def _choice(*values: str, aliases: Mapping[str, str] | None = None) -> Callable[[Any], str]:
    def read(v: Any) -> str:
        v = (aliases or {}).get(v, v) if isinstance(v, str) else v
        if v not in values:
            raise ValueError(f"{v!r} is none of {', '.join(values)}")
        return v
    return read


def _only(value: Any, why: str) -> Callable[[Any], Any]:
    def read(v: Any) -> Any:
        if v != value or type(v) is not type(value):
            raise ValueError(f"only {value!r} is built: {why}; got {v!r}")
        return v
    return read


def _float(lo: float, hi: float) -> Callable[[Any], float]:
    def read(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo < v <= hi:
            raise ValueError(f"must be a number {_range(lo, hi, open_lo=True)}, got {v!r}")
        return float(v)
    return read


def _read_all(family: str, args: Mapping[str, Any], schema: tuple[Arg, ...]
              ) -> tuple[dict[str, Any], dict[str, Any], int | None]:
    """(every argument's value, the generator's parameters, an explicit output budget)."""
    known = {a.name: a for a in schema}
    for name in args:
        if name in BUILD_WIDE:
            raise RulerError(f"argument {name} is not a task's: it is set by {BUILD_WIDE[name]}")
        if name not in known and name != "tokens_to_generate":
            raise RulerError(f"unknown argument {name!r} of {family} (its arguments: "
                             f"{', '.join(known)}, tokens_to_generate)")
    values: dict[str, Any] = {}
    for a in (*schema, Arg("tokens_to_generate", None, _int(1, MAX_BUDGET))):
        try:
            values[a.name] = a.read(args[a.name]) if a.name in args else a.default
        except ValueError as e:
            raise RulerError(f"argument {a.name}: {e}") from None
    budget = values.pop("tokens_to_generate")
    params = {a.name: values[a.name] for a in schema
              if a.spelled or values[a.name] != a.default}
    return values, params, budget


# --- niah -----------------------------------------------------------------------------------

NIAH_ARGS = (
    # `repeat` is the paper's (and upstream's until 2025-05) name of the noise haystack.
    Arg("type_haystack", "essay", _choice(*HAYSTACKS, aliases={"repeat": "noise"})),
    Arg("type_needle_k", "words", _choice(*NEEDLE_TYPES)),
    Arg("type_needle_v", "numbers", _choice(*NEEDLE_TYPES)),
    # Bounded so a typo fails here, not after minutes of drafting (a needle takes 15-60
    # tokens: 1,000 of them fill 64K).
    Arg("num_needle_k", 1, _int(1, MAX_COUNT)),
    Arg("num_needle_v", 1, _int(1, MAX_COUNT)),
    Arg("num_needle_q", 1, _int(1, MAX_COUNT)),
)
NIAH_BUDGET = 128
#: Tokens a gold value may take in an answer [ours]: a UUID is 25-35 tokens with the
#: registry's tokenizers, a 7-digit number or an adjective-noun pair under 8.
TOKENS_PER_VALUE = {"uuids": 40, "numbers": 16, "words": 16}


def _niah_budget(values: Mapping[str, Any]) -> int:
    """Upstream's 128 tokens, or room for every gold value where they need more (8 UUIDs
    take 176-282 tokens: paper-analysis §1.6 item 10)."""
    answers = values["num_needle_q"] * values["num_needle_v"]  # all values of the keys asked
    return max(NIAH_BUDGET, TOKENS_PER_VALUE[values["type_needle_v"]] * answers)


def configure_niah(args: Mapping[str, Any]) -> Configured:
    values, params, budget = _read_all("niah", args, NIAH_ARGS)
    if problem := niah_params_problem(params):
        raise RulerError(problem)
    sources = ("essays", "punkt_tab") if params["type_haystack"] == "essay" else ()
    return Configured(params, sources, budget or _niah_budget(values))


# --- variable_tracking ----------------------------------------------------------------------

VT_ARGS = (
    Arg("type_haystack", "noise", _choice("noise", aliases={"repeat": "noise"})),
    Arg("num_chains", 1, _int(1, 100)),
    # Upstream caps its example at 10 hops and renames the last hops+1 words of it: beyond
    # 10 it rewrites words that are not names (paper-analysis §1.6 item 3).
    Arg("num_hops", 4, _int(1, 10)),
    # Upstream's flag is unused: its one-shot example is always on.
    Arg("add_fewshot", True, _only(True, "upstream's vt always shows its one-shot example"),
        spelled=False),
)
VT_BUDGET = 30
#: The most names upstream's 30 tokens hold [measured]: 7 names (hop 6) take 18-26 tokens
#: with the registry's tokenizers, 11 (hop 10) 30-40 (paper-analysis §1.6 item 5).
VT_BUDGET_NAMES = 7
#: Tokens per answer name beyond that [ours]: upstream's 30 tokens for its 5 names.
TOKENS_PER_NAME = 6


def _vt_budget(values: Mapping[str, Any]) -> int:
    """Upstream's 30 tokens where they hold the answer (up to 7 names), else 6 a name."""
    names = values["num_hops"] + 1
    return VT_BUDGET if names <= VT_BUDGET_NAMES else TOKENS_PER_NAME * names


def configure_vt(args: Mapping[str, Any]) -> Configured:
    if args.get("type_haystack") == "essay":
        raise RulerError("argument type_haystack: 'essay' is not built (upstream's vt on "
                         "essays is no configuration of the paper's): use noise")
    values, params, budget = _read_all("variable_tracking", args, VT_ARGS)
    return Configured(params, (), budget or _vt_budget(values))


# --- common_words_extraction ----------------------------------------------------------------

CWE_ARGS = (
    Arg("freq_cw", 30, _int(2, MAX_COUNT)),
    Arg("freq_ucw", 3, _int(1, MAX_COUNT)),
    # The question and answer prefix ask for num_cw words (upstream's keep "10" whatever
    # num_cw is: paper-analysis §1.6 item 11); below 4K the example holds 20 words, at least
    # one of them uncommon.
    Arg("num_cw", 10, _int(1, 19)),
    Arg("num_fewshot", 1, _int(0, 5), spelled=False),
)


CWE_BUDGET = 120
#: Tokens per answer word [ours]: upstream's 120 for its 10 numbered words.
TOKENS_PER_WORD = 12


def configure_cwe(args: Mapping[str, Any]) -> Configured:
    _, params, budget = _read_all("common_words_extraction", args, CWE_ARGS)
    if params["freq_cw"] <= params["freq_ucw"]:
        raise RulerError(f"argument freq_cw: {params['freq_cw']} <= freq_ucw "
                         f"{params['freq_ucw']}, so the common words would not be the most "
                         f"frequent (the gold would be wrong)")
    return Configured(params, (), budget or max(CWE_BUDGET, TOKENS_PER_WORD * params["num_cw"]))


# --- freq_words_extraction ------------------------------------------------------------------

def _vocab_size(v: Any) -> int:
    if v == -1 and not isinstance(v, bool):
        return -1
    return _int(5, 1_000_000)(v)


FWE_ARGS = (
    # alpha <= 1 makes zeta infinite (upstream hangs); past 8, ranks 4 and 5 differ only in
    # texts of over 80,000 words (the generator's `min_size`), beyond the longest lengths.
    Arg("alpha", 2.0, _float(1.0, 8.0)),
    # 26^len codes must outnumber the vocabulary (L / 50 words); past 13 they overflow int64.
    Arg("coded_wordlen", 6, _int(4, 13)),
    Arg("vocab_size", -1, _vocab_size, spelled=False),
    Arg("add_fewshot", False, _only(False, "upstream's fwe has no example"), spelled=False),
)


def configure_fwe(args: Mapping[str, Any]) -> Configured:
    _, params, budget = _read_all("freq_words_extraction", args, FWE_ARGS)
    return Configured(params, (), budget)


# --- qa -------------------------------------------------------------------------------------

QA_ARGS = (Arg("dataset", None, _choice("squad", "hotpotqa")),)


def configure_qa(args: Mapping[str, Any]) -> Configured:
    if "dataset" not in args:
        raise RulerError("argument dataset is required (squad or hotpotqa)")
    _, params, budget = _read_all("qa", args, QA_ARGS)
    return Configured(params, (params["dataset"],), budget)
