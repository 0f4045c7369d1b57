"""The files of a `ruler eval` results folder, named once for the runner, scorer and report;
and the lock a run holds on its folder."""

from __future__ import annotations

import os
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Iterator

from ruler.kernel.errors import RulerError

PREDICTIONS_NAME = "predictions.jsonl"  # one record per row, appended as each one finishes
RUN_NAME = "run.json"  # the run: model, prompt mode, dataset revision and its files' hashes
SCORES_NAME = "scores.json"  # `ruler score`'s output, which `ruler report` reads
#: Held by a `ruler eval` run for as long as it works in the folder (a dot file: no report or
#: listing shows it).
LOCK_NAME = ".ruler-eval.lock"


#: File descriptors of the results-folder locks this process holds (see `_forget_in_child`).
_held_lock_fds: set[int] = set()


def _forget_in_child() -> None:
    """A forked child (a render worker, an engine process) inherits the lock's descriptor,
    and an OS lock lasts while any descriptor of it is open: a child outliving its killed
    driver would keep the folder locked. The child closes its copy (which leaves the
    parent's lock alone; only an explicit unlock would release it). filelock 4 does the same
    itself; the 3.x releases allowed by the requirement do not."""
    for fd in _held_lock_fds:
        with suppress(OSError):
            os.close(fd)
    _held_lock_fds.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


@contextmanager
def hold_results_folder(out: Path) -> Iterator[None]:
    """Make `out` this process's results folder for the duration, or refuse at once.

    Two runs appending to one predictions file would both generate every row and leave
    duplicate keys. The lock is an OS file lock (flock on POSIX): the kernel drops it when
    the holder dies, so a run killed by kill -9 never blocks the next one. A folder created
    here and left holding nothing but the lock (the run failed before it wrote anything) is
    removed again, so a failed first try does not leave an empty results folder behind.
    """
    from filelock import FileLock, Timeout

    out = Path(out)
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RulerError(f"cannot create the results folder {out}: {e.strerror or e}") from None
    lock_path = out / LOCK_NAME
    lock = FileLock(str(lock_path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise RulerError(f"results folder {out} is in use by another `ruler eval` run (it holds "
                         f"{lock_path}): wait for that run to finish, or pass another --out") \
            from None
    except OSError as e:
        raise RulerError(f"cannot lock the results folder {out}: {e.strerror or e}") from None
    # filelock keeps the descriptor in its (private) context; without it, no child closes.
    fd = getattr(getattr(lock, "_context", None), "lock_file_fd", None)
    if isinstance(fd, int):
        _held_lock_fds.add(fd)
    try:
        yield
    finally:
        _held_lock_fds.discard(fd)
        try:
            if created and [p.name for p in out.iterdir()] == [LOCK_NAME]:
                lock_path.unlink()
                out.rmdir()
        except OSError:
            pass  # an empty folder left behind is harmless
        finally:
            lock.release()
