"""`ruler build`, one module per concern (docs/architecture.md, "Layout", lists them):
recipe -> plan -> identity check -> preflight -> executor -> publisher (`run`). The identity
itself (what makes two builds the same) is `ruler.builder.identity`.
"""

from ruler.builder.pipeline.config import BuildConfig, BuildReport, FileJob, FileResult

__all__ = ["BuildConfig", "BuildReport", "FileJob", "FileResult", "run_build"]


def __getattr__(name: str):
    # run_build pulls in the counters, generators and Parquet writer; the CLI imports this
    # package for its flags' defaults and must stay quick to start.
    if name == "run_build":
        from ruler.builder.pipeline.run import run_build

        return run_build
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
