"""`ruler build`, in one module per concern:

  config    BuildConfig (the flags), FileJob (one file to build), FileResult, BuildReport
  plan      which files, their build keys, sources, and the preflight checks
  worker    Worker: fit samples, certify piece counts, write one file to a temporary path
  executor  LocalExecutor: run file jobs here or in a process pool (fork or spawn)
  publish   Publisher: move finished files into place, record them in the manifest and card
  run       run_build: plan -> preflight -> executor -> publisher
"""

from ruler.builder.build.config import BuildConfig, BuildReport, FileJob, FileResult

__all__ = ["BuildConfig", "BuildReport", "FileJob", "FileResult", "run_build"]


def __getattr__(name: str):
    # run_build pulls in the counters, generators and Parquet writer; the CLI imports this
    # package for its flags' defaults and must stay quick to start.
    if name == "run_build":
        from ruler.builder.build.run import run_build

        return run_build
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
