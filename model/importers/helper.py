"""A forked helper process that digests batches of events, so that two cores decode at once.

The importing process reads and splits the file; it sends some batches (raw JSON) to the
helper through a pipe and gets their digests back, pickled. A thread on each side of the
pipes keeps the helper fed while the importer works on other batches; batches not yet sent
when the file ends are taken back and digested by the importer.
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
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

MIN_BYTES = 16 << 20  # less JSON than this (estimated) is read without a helper
GZIP_RATIO = 10  # a modest guess of how much a gzipped trace grows
_HEADER = 8  # bytes of the length that precedes every message


class HelperFailed(Exception):
    """The helper could not digest a batch (or died); read the file without it."""


def helper_allowed(paths: Sequence[Path]) -> bool:
    """Whether a helper process is worth it for these files (enough JSON) and safe here: Linux
    (fork is unsafe on macOS once system frameworks are loaded, absent on Windows), two or more
    CPUs usable, called from the main thread with no other thread running (forking a process
    whose other threads hold locks is not safe; the app loads files on a thread: no helper)."""
    if not sys.platform.startswith("linux") or _json_bytes(paths) < MIN_BYTES:
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


class Job:
    """One batch handed to the helper: its text until sent, then its result (or, when taken
    back before it was sent, the result made here)."""

    __slots__ = ("payload", "state", "text", "value")

    def __init__(self, text: bytes) -> None:
        self.text: bytes | None = text
        self.state = QUEUED
        self.payload: bytearray | None = None
        self.value: Any = None


QUEUED, SENT, DONE, TAKEN_BACK = range(4)


class Helper:
    """A forked process running ``work(text)`` on the texts ``submit``ted, in order. At most
    ``IN_FLIGHT`` texts are sent ahead; the others wait here and may be taken back (``take_back``)
    to be worked on by the caller. ``result`` gives a job's result. ``close`` ends it all."""

    IN_FLIGHT = 2  # texts sent to the helper and not yet answered: one worked on, one waiting in the pipe

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
        self._cv = threading.Condition()
        self._queued: deque[Job] = deque()  # submitted, not yet sent
        self._sent: deque[Job] = deque()  # sent, not yet answered, in order
        self._stopped = False  # closing, or the helper is gone
        self._threads = [threading.Thread(target=self._send, name="accelview-helper-send", daemon=True),
                         threading.Thread(target=self._receive, name="accelview-helper-receive", daemon=True)]
        for t in self._threads:
            t.start()

    def submit(self, text: bytes) -> Job:
        """Queue one batch for the helper."""
        job = Job(text)
        with self._cv:
            self._queued.append(job)
            self._cv.notify_all()
        return job

    def pending(self) -> int:
        """Jobs submitted and not yet answered (queued or sent)."""
        with self._cv:
            return len(self._queued) + len(self._sent)

    def take_back(self) -> Job | None:
        """The last job not yet sent, withdrawn (its ``text`` is the caller's to work on); None
        when every job was sent."""
        with self._cv:
            if not self._queued:
                return None
            job = self._queued.pop()
            job.state = TAKEN_BACK
            return job

    def done(self, job: Job) -> bool:
        """Whether ``job``'s result can be had without waiting."""
        return job.state in (DONE, TAKEN_BACK)

    def result(self, job: Job) -> Any:
        """``job``'s result (waits for it); ``HelperFailed`` when the helper reported an error
        or stopped before answering."""
        if job.state == TAKEN_BACK:
            return job.value
        with self._cv:
            while job.state != DONE and not self._stopped:
                self._cv.wait()
        if job.state != DONE or job.payload is None:
            raise HelperFailed("the helper process stopped")
        ok, value = pickle.loads(job.payload)
        job.payload = None
        if not ok:
            raise HelperFailed(value)
        return value

    def close(self) -> None:
        """Stop the helper and its threads; safe to call more than once."""
        if self.pid <= 0:
            return
        with self._cv:
            self._stopped = True
            self._cv.notify_all()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        self.pid = 0
        for t in self._threads:
            t.join()
        os.close(self._from_r)

    def _send(self) -> None:
        try:
            while True:
                with self._cv:
                    while not self._stopped and (not self._queued or len(self._sent) >= self.IN_FLIGHT):
                        self._cv.wait()
                    if self._stopped:
                        return
                    job = self._queued.popleft()
                    job.state, text, job.text = SENT, job.text, None
                    self._sent.append(job)
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
                if payload is None:
                    break
                with self._cv:
                    job = self._sent.popleft()
                    job.payload, job.state = payload, DONE
                    self._cv.notify_all()
        except OSError:
            pass
        with self._cv:
            self._stopped = True
            self._cv.notify_all()


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
