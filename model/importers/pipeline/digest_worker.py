"""A forked helper process that digests batches of events, so that two cores decode at once.

Batches and their pickled digests cross through shared-memory slots made before the fork; the
pipes carry only "slot i holds n bytes". Anything going wrong in the helper is ``HelperFailed``:
the caller reads the file again alone, with the same result or the same error message. How and
why it works this way: docs/IMPORT.md, "A helper process".
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import select
import signal
import struct
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ...forking import fork_safe, reap, release

MIN_BYTES = 16 << 20  # less JSON than this (estimated) is read without a helper
GZIP_RATIO = 10  # a modest guess of how much a gzipped trace grows
SLOTS = 3  # batches in shared memory at once: one being digested, two waiting for the helper
SLOT_BYTES = 32 << 20  # a batch (or result) bigger than this goes another way (memory is only used when touched)
_MESSAGE = struct.Struct("<qq")  # slot, length (negative: the result follows in the pipe)
PLACED_FLAG, STARTED_FLAG, CANCELLED_FLAG = 0, 1, 2  # a slot's flag byte: who works on its text


class HelperFailed(Exception):
    """The helper could not digest a batch (or died); read the file without it."""


def helper_allowed(paths: Sequence[Path]) -> bool:
    """Whether a helper process is worth it for these files (enough JSON) and safe here
    (:func:`~accelview.model.forking.fork_safe`)."""
    return fork_safe() and _json_bytes(paths) >= MIN_BYTES


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
    """One batch handed to the helper: its events until placed in a slot, then its pickled
    result (or, when taken back before the helper started it, its ``text`` to be digested by
    the caller and that result)."""

    __slots__ = ("events", "payload", "size", "slot", "state", "text", "value")

    def __init__(self, events: memoryview | bytes) -> None:
        self.events: memoryview | bytes | None = events  # comma-separated, without the array's brackets
        self.text: bytes | None = None
        self.size = len(events) + 2  # as a JSON array
        self.state = QUEUED
        self.slot = -1
        self.payload: bytes | None = None
        self.value: Any = None


QUEUED, PLACED, DONE, TAKEN_BACK = range(4)


class Helper:
    """A forked process running ``work(text)`` on the texts ``submit``ted, in order. At most
    ``SLOTS`` texts are placed in shared memory at a time; the others wait here and may be
    taken back (``take_back``) to be worked on by the caller. ``result`` gives a job's result.
    ``close`` ends it all. Everything happens on the caller's thread."""

    def __init__(self, work: Callable[[bytes], Any]) -> None:
        reap()
        self._shm = mmap.mmap(-1, SLOTS * SLOT_BYTES)  # shared with the child, anonymous
        self._flags = mmap.mmap(-1, SLOTS)
        to_helper, self._to_w = os.pipe()
        self._from_r, from_helper = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the helper: serve, then leave without running the parent's exit handlers
            status = 0
            try:
                os.close(self._to_w)
                os.close(self._from_r)
                _serve(to_helper, from_helper, self._shm, self._flags, work)
            except BaseException:  # the parent sees the closed pipe
                status = 1
            finally:
                os._exit(status)
        os.close(to_helper)
        os.close(from_helper)
        self._free = list(range(SLOTS))
        self._queued: deque[Job] = deque()  # submitted, not yet placed
        self._placed: deque[Job] = deque()  # placed, not yet answered, in order
        self._stopped = False  # the helper is gone

    def submit(self, events: memoryview | bytes) -> Job | None:
        """Queue one batch (its comma-separated events: the slot gets them in brackets, copied
        once) for the helper; None when it is too big for a slot (digest it here)."""
        if len(events) + 2 > SLOT_BYTES:
            return None
        job = Job(events)
        self._queued.append(job)
        self._pump()
        return job

    def pending(self) -> int:
        """Jobs submitted and not yet answered (queued or placed)."""
        self._pump()
        return len(self._queued) + len(self._placed)

    def take_back(self) -> Job | None:
        """The last job the helper has not started, withdrawn (its ``text`` is the caller's to
        work on); None when it has started every job."""
        if self._queued:
            job = self._queued.pop()
            assert job.events is not None
            job.text, job.events = b"".join((b"[", job.events, b"]")), None
        else:
            job = next((j for j in reversed(self._placed) if j.state == PLACED
                        and self._flags[j.slot] == PLACED_FLAG), None)
            if job is None:
                return None
            self._flags[job.slot] = CANCELLED_FLAG
            at = job.slot * SLOT_BYTES
            job.text = self._shm[at : at + job.size]
        job.state = TAKEN_BACK
        return job

    def done(self, job: Job) -> bool:
        """Whether ``job``'s result can be had without waiting."""
        self._pump()
        return job.state in (DONE, TAKEN_BACK)

    def result(self, job: Job) -> Any:
        """``job``'s result (waits for it); ``HelperFailed`` when the helper reported an error
        or stopped before answering."""
        if job.state == TAKEN_BACK:
            return job.value
        while job.state != DONE and not self._stopped:
            self._pump(wait=True)
        if job.state != DONE or job.payload is None:
            raise HelperFailed("the helper process stopped")
        ok, value = pickle.loads(job.payload)
        job.payload = None
        if not ok:
            raise HelperFailed(value)
        return value

    def close(self) -> None:
        """Stop the helper; safe to call more than once. It is not waited for, so that the kernel
        tears down its memory on the other core; it is reaped later (:func:`~accelview.model.forking.reap`)."""
        if self.pid <= 0:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        release(self.pid)
        self.pid = 0
        self._stopped = True
        os.close(self._to_w)
        os.close(self._from_r)
        self._shm.close()

    def _pump(self, wait: bool = False) -> None:
        """Take in the helper's answers (waiting for one when ``wait``), then fill free slots."""
        while not self._stopped and self._placed:
            if not select.select([self._from_r], [], [], None if wait else 0)[0]:
                break
            wait = False
            self._answer()
        while not self._stopped and self._queued and self._free:
            job = self._queued.popleft()
            slot, events, n = self._free.pop(), job.events, job.size - 2
            assert events is not None
            at = slot * SLOT_BYTES
            self._shm[at : at + 1] = b"["
            self._shm[at + 1 : at + 1 + n] = events
            self._shm[at + 1 + n : at + 2 + n] = b"]"
            self._flags[slot] = PLACED_FLAG
            job.state, job.slot, job.events = PLACED, slot, None
            self._placed.append(job)
            try:
                _write(self._to_w, _MESSAGE.pack(slot, job.size))
            except OSError:  # the helper is gone
                self._stopped = True

    def _answer(self) -> None:
        head = _read(self._from_r, _MESSAGE.size)
        slot, n = _MESSAGE.unpack(head) if head is not None else (-1, 0)
        payload = (self._shm[slot * SLOT_BYTES : slot * SLOT_BYTES + n] if n >= 0
                   else _read(self._from_r, -n)) if slot >= 0 else None
        if payload is None:  # the helper is gone
            self._stopped = True
            return
        job = self._placed.popleft()
        if job.state == PLACED:  # not taken back meanwhile
            job.payload, job.state = bytes(payload), DONE
        self._free.append(slot)


def _serve(inbox: int, outbox: int, shm: mmap.mmap, flags: mmap.mmap, work: Callable[[bytes], Any]) -> None:
    """The helper's loop: take a slot's text, put back (True, result) or (False, the error);
    a slot taken back before it was started gets (True, None)."""
    while (head := _read(inbox, _MESSAGE.size)) is not None:
        slot, n = _MESSAGE.unpack(head)
        at = slot * SLOT_BYTES
        reply: tuple[bool, Any] = (True, None)
        if flags[slot] != CANCELLED_FLAG:
            flags[slot] = STARTED_FLAG
            try:
                reply = (True, work(shm[at : at + n]))
            except Exception as e:  # any failure sends the caller back to reading alone
                reply = (False, f"{type(e).__name__}: {e}")
        payload = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        if len(payload) <= SLOT_BYTES:
            shm[at : at + len(payload)] = payload
            _write(outbox, _MESSAGE.pack(slot, len(payload)))
        else:
            _write(outbox, _MESSAGE.pack(slot, -len(payload)) + payload)


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
