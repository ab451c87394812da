"""A forked helper process that digests batches of events, so that two cores decode at once.

The importing process reads and splits the file; it sends some batches (raw JSON) to the
helper through a pipe and gets their digests back, pickled, in the order sent. A thread on
each side of the pipes keeps the helper fed while the importer works on other batches.
Anything going wrong in the helper (a batch that is not valid JSON, a crash) is reported as
``HelperFailed``: the caller then reads the file again on its own, which gives the same
result or the same error message as if no helper had been used.

The helper is forked after the importer's modules are loaded (nothing to import, nothing to
initialise) and before the importer starts its own threads; it only ever decodes and pickles,
then leaves with ``os._exit``.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import signal
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

MIN_BYTES = 16 << 20  # less JSON than this (estimated) is read without a helper
GZIP_RATIO = 10  # a modest guess of how much a gzipped trace grows
_HEADER = 8  # bytes of the length that precedes every message


class HelperFailed(Exception):
    """The helper could not digest a batch (or died); read the file without it."""


def helper_allowed(paths: Sequence[Path]) -> bool:
    """Whether a helper process is worth it for these files (enough JSON) and safe here: fork
    available, two or more CPUs usable, called from the main thread with no other thread
    running (forking a process whose other threads hold locks is not safe)."""
    if not hasattr(os, "fork") or _json_bytes(paths) < MIN_BYTES:
        return False
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cpus >= 2 and threading.current_thread() is threading.main_thread() and threading.active_count() == 1


def _json_bytes(paths: Sequence[Path]) -> int:
    total = 0
    for p in paths:
        try:
            with open(p, "rb") as f:
                gz = f.read(2) == b"\x1f\x8b"
            total += p.stat().st_size * (GZIP_RATIO if gz else 1)
        except OSError:  # the reader reports it
            pass
    return total


class Helper:
    """A forked process running ``work(text)`` on the texts ``submit``ted, in order; ``result``
    returns their results in the same order. ``close`` ends it (also on error)."""

    def __init__(self, work: Callable[[bytes], Any]) -> None:
        to_helper, self._to_w = os.pipe()
        self._from_r, from_helper = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the helper: serve, then leave without running the parent's exit handlers
            status = 0
            try:
                os.close(self._to_w)
                os.close(self._from_r)
                _serve(to_helper, from_helper, work)
            except BaseException:  # the parent sees the closed pipe
                status = 1
            finally:
                os._exit(status)
        os.close(to_helper)
        os.close(from_helper)
        self.outstanding = 0  # texts submitted whose results were not yet taken
        self._outbox: queue.Queue[bytes | None] = queue.Queue()
        self._results: queue.Queue[bytearray | None] = queue.Queue()
        self._threads = [threading.Thread(target=self._send, name="accelview-helper-send", daemon=True),
                         threading.Thread(target=self._receive, name="accelview-helper-receive", daemon=True)]
        for t in self._threads:
            t.start()

    def submit(self, text: bytes) -> None:
        """Queue one batch for the helper."""
        self.outstanding += 1
        self._outbox.put(text)

    def ready(self) -> bool:
        """Whether the next result has arrived."""
        return not self._results.empty()

    def result(self) -> Any:
        """The next result, in submission order (waits for it); ``HelperFailed`` when the helper
        reported an error or stopped."""
        payload = self._results.get()
        self.outstanding -= 1
        if payload is None:
            raise HelperFailed("the helper process stopped")
        ok, value = pickle.loads(payload)
        if not ok:
            raise HelperFailed(value)
        return value

    def close(self) -> None:
        """Stop the helper and its threads; safe to call more than once."""
        if self.pid <= 0:
            return
        self._outbox.put(None)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        self.pid = 0
        for t in self._threads:
            t.join()
        os.close(self._from_r)

    def _send(self) -> None:
        try:
            while (text := self._outbox.get()) is not None:
                _write(self._to_w, len(text).to_bytes(_HEADER, "little"))
                _write(self._to_w, text)
        except OSError:  # the helper is gone: the receiver reports it
            pass
        finally:
            os.close(self._to_w)

    def _receive(self) -> None:
        try:
            while (head := _read(self._from_r, _HEADER)) is not None:
                payload = _read(self._from_r, int.from_bytes(head, "little"))
                self._results.put(payload)
                if payload is None:
                    return
        except OSError:
            pass
        self._results.put(None)


def _serve(inbox: int, outbox: int, work: Callable[[bytes], Any]) -> None:
    """The helper's loop: read a text, send back (True, result) or (False, the error)."""
    while (head := _read(inbox, _HEADER)) is not None:
        text = _read(inbox, int.from_bytes(head, "little"))
        if text is None:
            return
        try:
            reply: tuple[bool, Any] = (True, work(text))
        except Exception as e:  # any failure sends the caller back to reading alone
            reply = (False, f"{type(e).__name__}: {e}")
        payload = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        _write(outbox, len(payload).to_bytes(_HEADER, "little"))
        _write(outbox, payload)


def _read(fd: int, n: int) -> bytearray | None:
    """Exactly ``n`` bytes from ``fd``; None at end of file."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = os.readv(fd, [view[got:]])
        if k == 0:
            return None
        got += k
    return buf


def _write(fd: int, data: bytes) -> None:
    view, sent = memoryview(data), 0
    while sent < len(data):
        sent += os.write(fd, view[sent:])
