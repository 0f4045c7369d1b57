"""Worker processes end with the build that started them.

A pool's workers outlive a driver killed with SIGKILL (`kill -9`, the out-of-memory killer, a
scheduler): the driver cannot stop them, and they keep building under PID 1 for minutes,
writing files nobody will publish. So each worker ties itself to the driver: on Linux the
kernel sends it SIGKILL the moment its parent ends (`PR_SET_PDEATHSIG`); everywhere, a daemon
thread checks twice a second that its parent is still the same process (an orphan is
re-parented) and that the driver still runs, and ends the worker if not. The second check is
for the `forkserver` start method, whose workers are children of the fork server: it lives on
as long as they do.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import sys
import threading
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(driver: int, interval: float = 0.5) -> None:
    """Call first thing in a worker process started (directly or through a fork server) by
    process `driver`: ends this process when its parent or the driver ends."""
    if sys.platform.startswith("linux"):
        _kernel_kills_us_with_parent()
    parent = os.getppid()
    watch = _Watch(parent, driver)
    if watch.ended():  # before the signal was asked for: then none comes
        os._exit(1)
    threading.Thread(target=watch.run, args=(interval,), name="ruler-lifeline",
                     daemon=True).start()


class _Watch:
    def __init__(self, parent: int, driver: int):
        self.parent, self.driver = parent, driver
        self._pidfd = None
        if driver != parent and hasattr(os, "pidfd_open"):
            # readable once the driver has ended, and immune to a reused pid
            with contextlib.suppress(OSError):
                self._pidfd = os.pidfd_open(driver)

    def ended(self) -> bool:
        if os.getppid() != self.parent:
            return True
        if self.driver == self.parent:
            return False
        if self._pidfd is not None:
            return bool(select.select([self._pidfd], [], [], 0)[0])
        return not process_running(self.driver)

    def run(self, interval: float) -> None:
        while not self.ended():
            time.sleep(interval)
        os._exit(1)


def _kernel_kills_us_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):  # no libc symbols to call: the thread still watches
        return
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def process_running(pid: int) -> bool:
    """Whether process `pid` of this machine runs (True when it cannot be told)."""
    if os.name == "nt":  # signal 0 is no probe there: os.kill would end the process
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists
        return True
    try:  # a zombie has ended; it only waits for its parent to collect it
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True
