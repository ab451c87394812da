"""Columns of a capture made by a forked helper process, on a second core, while this process
makes the rest.

A simulated capture's heaviest columns depend on the finished session alone, not on the rows
the writer makes around them: the devices' sampled counters (:mod:`.sampled`) and every op's
counters. The trace writer (:mod:`.tracewriter`) says which columns it needs (dtype and length
each) and how to fill them; :class:`Offload` forks a helper that fills them in shared memory,
and :meth:`Offload.result` takes them when the writer gets there. Where forking is not safe
(:func:`~accelview.model.forking.fork_safe`: another thread running, not Linux, one CPU) or not
worth it (a small capture, or a process so big that forking it costs more than the helper
saves), or the fork or the helper fails, ``result`` fills them in this process: the columns are
the same either way (tested).
"""

from __future__ import annotations

import ctypes
import gc
import mmap
import os
from collections.abc import Callable, Mapping

import numpy as np
from accelview.model.forking import fork_safe, release

MIN_ROWS = 200_000  # columns of fewer rows than this are made in this process (a fork costs a few ms)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
MAX_RSS = 4 << 30  # nor in a process this big: copying its page tables would cost what the helper saves
Columns = dict[str, np.ndarray]


def _keep_freed_memory() -> None:
    """In the helper (short-lived, its own allocator): glibc keeps memory that is freed instead of
    returning it to the kernel, so the next temporary reuses those pages instead of faulting in
    fresh ones (a quarter of the helper's page faults, ~5 ms). Nothing where there is no glibc."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_TRIM_THRESHOLD, 1 << 30)
        libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # glibc's largest
    except (AttributeError, OSError):
        pass


def _resident_bytes() -> int:
    """This process's resident memory (0 where /proc cannot tell)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class Offload:
    """The columns ``shapes`` (name → (dtype, length)), filled by ``make(columns)`` in a forked
    helper when ``fork`` (None: when safe and at least ``MIN_ROWS`` rows in all), else here."""

    def __init__(self, shapes: Mapping[str, tuple[np.dtype | type, int]], make: Callable[[Columns], None],
                 fork: bool | None = None) -> None:
        self.shapes = {name: (np.dtype(dtype), int(n)) for name, (dtype, n) in shapes.items()}
        self._make = make
        self._pid, self._pipe, self._shm = 0, -1, None
        if fork is None:
            fork = sum(n for _, n in self.shapes.values()) >= MIN_ROWS and _resident_bytes() <= MAX_RSS and fork_safe()
        self.forked = False  # whether a helper process was asked to make the columns
        if fork:
            self._start()

    def _start(self) -> None:
        size = sum(dtype.itemsize * n for dtype, n in self.shapes.values())
        shm = mmap.mmap(-1, max(1, size))  # shared with the helper, anonymous
        r, w = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no process to be had (a limit, memory): result() makes the columns here
            os.close(r)
            os.close(w)
            return
        if pid == 0:  # the helper: fill the shared columns, say so, leave without the parent's exit handlers
            ok = b"\0"
            try:
                gc.disable()  # short-lived: a collection would walk (and copy, page by page) the parent's heap
                _keep_freed_memory()
                os.close(r)
                self._make(self._views(shm))
                ok = b"\1"
            finally:
                try:
                    os.write(w, ok)
                finally:
                    os._exit(0)
        os.close(w)
        self._pid, self._pipe, self._shm = pid, r, shm
        self.forked = True

    def close(self) -> None:
        """Stop listening to the helper (it finishes on its own and is reaped later); safe to
        call more than once. ``result`` calls it; call it when the columns are not wanted."""
        if self._pid > 0:
            os.close(self._pipe)
            release(self._pid)
            self._pid = 0

    def _views(self, shm: mmap.mmap) -> Columns:
        out, at = {}, 0
        for name, (dtype, n) in self.shapes.items():
            out[name] = np.frombuffer(shm, dtype=dtype, count=n, offset=at)
            at += dtype.itemsize * n
        return out

    def result(self) -> Columns:
        """The columns; waits for the helper, and makes them here when there is none or it failed."""
        if self._pid > 0:
            try:
                ok = os.read(self._pipe, 1) == b"\1"  # b"" when the helper died
            finally:
                self.close()
            if ok and self._shm is not None:
                return self._views(self._shm)
        out = {name: np.empty(n, dtype=dtype) for name, (dtype, n) in self.shapes.items()}
        self._make(out)
        return out
