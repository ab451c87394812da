"""Read one trace file into a ``Collected``: stream its events in batches, digest each batch
(here, or in a helper process for large files), merge the digests in file order."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from ...errors import CaptureError
from .collect import Collected, Collector
from .digest import Digest, digest_batch
from .digest_worker import Helper, HelperFailed, Job
from .stream import EventStream

Progress = Callable[[float], None]
Work = Callable[[bytes], Digest]
HELPER_QUEUE = 4  # batches given to the helper and not yet answered (its slots and one more); more are digested here


def digester(skip_args: frozenset[str], skip_flow_cats: frozenset[str], keep_marked: tuple[bytes, ...] = ()) -> Work:
    """The digest function with the importer's options (see ``digest_batch``)."""
    return partial(digest_batch, skip_args=skip_args, skip_flow_cats=skip_flow_cats, keep_marked=keep_marked)


def read_file(path: Path, work: Work, progress: Progress | None = None,
              helper: Helper | None = None) -> tuple[Collected, dict[str, Any]]:
    """(the file's events collected, its other top-level keys). ``work`` digests a batch; with
    a ``helper`` (running the same ``work``), some batches are digested there: ``HelperFailed``
    when it could not, then read the file again without it."""
    collector = Collector()
    stream = EventStream(path, progress)
    if helper is None:
        for digest in stream.batches(work):
            collector.add(digest)
        return _ended(collector, stream)

    def send(events: memoryview) -> Job | None:
        return helper.submit(events) if helper.pending() < HELPER_QUEUE else None

    waiting: deque = deque()  # digests made here and jobs of the helper, in file order
    try:
        with closing(stream.batches(work, send)) as batches:  # stops the reading thread on HelperFailed too
            for item in batches:
                waiting.append(item)
                while waiting and (not isinstance(waiting[0], Job) or helper.done(waiting[0])):
                    _take(waiting, collector, helper)
    except CaptureError as e:  # perhaps only because a batch sent untested was cut inside a string
        raise HelperFailed(str(e)) from e
    while waiting:  # the file is read: work on the jobs the helper has not started rather than wait for them
        if isinstance(waiting[0], Job) and not helper.done(waiting[0]) and (job := helper.take_back()):
            try:
                job.value, job.text = work(job.text), None
            except msgspec.DecodeError as e:  # sent untested: cut inside a string
                raise HelperFailed(str(e)) from e
        else:
            _take(waiting, collector, helper)
    return _ended(collector, stream)


def _ended(collector: Collector, stream: EventStream) -> tuple[Collected, dict[str, Any]]:
    if stream.tail_skipped:
        collector.c.stats["metadata_after_events_skipped"] += 1
    return collector.c, stream.metadata


def _take(waiting: deque, collector: Collector, helper: Helper) -> None:
    item = waiting.popleft()
    collector.add(helper.result(item) if isinstance(item, Job) else item)


__all__ = ["HelperFailed", "digester", "read_file"]
