"""The benchmarks, one folder each: everything specific to one benchmark lives in its folder
and nowhere else (its tasks and families, sources, metrics, length rule, build axes,
aggregation, report sections, card text, exports, release gates), declared on its
`ruler.catalog.benchmarks.Benchmark`.

`BUILTIN` is the built-ins' registration: the address of each one's `Benchmark`, registered
lazily by the benchmark registry, the route a plug-in's takes through its entry point in
group `ruler.benchmarks`. Generic machinery names no benchmark (tests/package/
test_generic_code_names_no_benchmark.py greps it).
"""

#: id -> the address of the built-in benchmark's record, in the order they are listed.
BUILTIN = {
    "ruler": "ruler.benchmarks.ruler:BENCHMARK",  # RULER (v1)
    "ruler2": "ruler.benchmarks.ruler2:BENCHMARK",  # RULERv2 (NeMo-Skills)
    "oneruler": "ruler.benchmarks.oneruler:BENCHMARK",  # ONERULER (26 languages)
}

#: What `ruler build` builds without `--benchmark`.
DEFAULT = "ruler"
