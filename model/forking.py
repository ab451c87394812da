"""Forked helper processes: when forking is safe here, and reaping helpers that were let go.

Three jobs use a second core through ``os.fork``: the JSON importer's helper
(:mod:`.importers.pipeline.digest_worker`), the simulator's sampled counters
(:mod:`accelview.capture.convert.counter_rows`) and the analysis (:mod:`.analysis.helper`: the
critical path beside the other passes, the second run of a diff). A helper that is done (or killed) is not waited for
at once: the kernel tears down its memory on the other core, and it is reaped later, when the
next helper is let go or at exit, so that none is left a zombie.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

_unreaped: list[int] = []  # helpers let go and not yet waited for


def fork_safe() -> bool:
    """Whether forking a helper is safe and worth it here: Linux (fork is unsafe on macOS once
    system frameworks are loaded, absent on Windows), two or more CPUs usable, and called from
    the main thread with no other thread running (a process whose other threads hold locks
    cannot be forked safely; the app works on threads: no helper there)."""
    if not sys.platform.startswith("linux"):
        return False
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cpus >= 2 and threading.current_thread() is threading.main_thread() and threading.active_count() == 1


def release(pid: int) -> None:
    """Let helper ``pid`` go (it has exited or been killed): it is reaped later (:func:`reap`)."""
    _unreaped.append(pid)
    reap()


def reap(block: bool = False) -> None:
    """Wait for the helpers let go (without blocking unless ``block``), so that none is left a
    zombie; :func:`release` and the interpreter's exit call it."""
    for pid in list(_unreaped):
        try:
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:  # reaped by someone else
            done = pid
        if done:
            _unreaped.remove(pid)


atexit.register(reap, True)
