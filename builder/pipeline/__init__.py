"""`ruler build`, in one module per concern:

  config    BuildConfig (the flags, the variant among them), FileJob (one file to build),
            FileResult (a file built or kept), BuildReport
  recipe    BuildRecipe: everything that decides a config's rows, made from a BuildConfig or
            from the manifest's record of a build (verify rebuilds rows from the latter)
  plan      which files, their build keys, sources, and the preflight checks
  worker    Worker (made from a recipe): fit samples into `Row`s, certify piece counts, write
            one file to a temporary path
  executor  the Executor protocol (a context manager with `run(jobs, publish)`) and
            LocalExecutor: file jobs here or in a process pool (fork or spawn); a dead
            worker fails the build naming its file
  ray_executor  RayExecutor (`--executor ray`): file jobs on Ray actors, each file streamed
            back and published here; Ray is imported only by this module, only when it runs
  publish   Publisher: move finished files into place and record them in the manifest,
            under the manifest lock (concurrent builds into one OUT all get recorded), then
            render the card once
  merge     `ruler merge`: join builds made in other folders
  run       run_build: recipe -> plan -> identity check -> preflight -> executor -> publisher;
            run_builds: several configs (languages, replicates), the card rendered once
The identity itself (what makes two builds the same) is `ruler.builder.identity`.
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
