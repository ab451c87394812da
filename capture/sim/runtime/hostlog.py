"""What the host side of a simulated run did, as plain records for the trace writer.

The runtime appends here as calls happen: runtime API calls (with their correlation id),
host staging memcpy's of pageable copies, driver submissions (ring write + doorbell) and
the intervals in which the host thread was blocked waiting on a device. A tracer can replace
a log's ``record`` to see every call as it is recorded, and take the records in increments
(:func:`.drain.drain`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class ApiCall(NamedTuple):
    """One runtime API call on the host thread."""

    start_ns: int
    end_ns: int
    name: str
    cid: int
    args: dict[str, Any]


class Submission(NamedTuple):
    """One driver ring write and doorbell for a command of ``cid``."""

    device: int
    stream: int
    submit_ns: int
    visible_ns: int
    name: str
    cid: int
    chunk: int = -1


CALL_INTS = 3  # the integer fields of an ApiCall: start_ns, end_ns, cid (its others: name, args)
SUBMISSION_INTS = 6  # of a Submission: device, stream, submit_ns, visible_ns, cid, chunk (its other: name)


def call_rows(ints: Sequence[int], objects: list[Any]) -> list[ApiCall]:
    """Calls logged as ``HostLog.call_ints`` and ``call_objects`` are, as records."""
    n = CALL_INTS
    return list(map(ApiCall, ints[0::n], ints[1::n], objects[0::2], ints[2::n], objects[1::2]))


def submission_rows(ints: Sequence[int], names: list[str]) -> list[Submission]:
    """Submissions logged as ``HostLog.submission_ints`` and ``submission_names`` are, as records."""
    n = SUBMISSION_INTS
    return list(map(Submission, ints[0::n], ints[1::n], ints[2::n], ints[3::n], names, ints[4::n], ints[5::n]))


@dataclass
class HostRecords:
    """Host-side records, API calls and driver submissions (one of each per launch) as columns:
    the integer fields of each record back to back in one list and its names and argument dicts
    in another (:func:`call_rows`, :func:`submission_rows`). That costs less than a tuple per
    record, and a tracer packs the integers in one C call (``struct.pack``). (A list, not an
    ``array('q')``: extending an array by a tuple costs ~7x extending a list on CPython 3.11,
    and the runtime extends one on every call.) ``calls`` and ``submissions`` give them as records."""

    call_ints: list[int] = field(default_factory=list)  # start_ns, end_ns, cid of each call
    call_objects: list[Any] = field(default_factory=list)  # name, args of each call
    submission_ints: list[int] = field(default_factory=list)  # see SUBMISSION_INTS
    submission_names: list[str] = field(default_factory=list)
    memcpys: list[ApiCall] = field(default_factory=list)
    waits: list[tuple[int, int]] = field(default_factory=list)  # host blocked on a device: [start, end)
    ranges: list[ApiCall] = field(default_factory=list)  # the script's annotated phases (prefill, decode ...)

    @property
    def calls(self) -> list[ApiCall]:
        """The API calls, as records."""
        return call_rows(self.call_ints, self.call_objects)

    @property
    def submissions(self) -> list[Submission]:
        """The driver submissions, as records."""
        return submission_rows(self.submission_ints, self.submission_names)


@dataclass
class HostLog(HostRecords):
    """Everything the host side recorded during a session (and not drained yet). A tracer sees
    every API call by giving the log its own ``record`` (capture/tracer/recorder.py)."""

    def submit(self, device: int, stream: int, submit_ns: int, visible_ns: int, name: str, cid: int,
               chunk: int = -1) -> None:
        """Record a driver submission (ring write and doorbell) of command ``cid``."""
        self.submission_ints.extend((device, stream, submit_ns, visible_ns, cid, chunk))
        self.submission_names.append(name)

    def call(self, start_ns: int, end_ns: int, name: str, cid: int, **args: Any) -> None:
        """Record a runtime API call."""
        self.record(start_ns, end_ns, name, cid, args)

    def record(self, start_ns: int, end_ns: int, name: str, cid: int, args: dict[str, Any]) -> None:
        """Record a runtime API call whose arguments are ``args`` (which may be shared, never changed)."""
        self.call_ints.extend((start_ns, end_ns, cid))
        self.call_objects.extend((name, args))

    def memcpy(self, start_ns: int, end_ns: int, cid: int, nbytes: int, chunk: int, direction: str) -> None:
        """Record a host staging memcpy of one chunk of a pageable copy."""
        self.memcpys.append(ApiCall(start_ns, end_ns, f"staging memcpy {direction}", cid,
                                    {"bytes": nbytes, "chunk": chunk}))

    def annotate(self, start_ns: int, end_ns: int, name: str) -> None:
        """Record a phase the script marked with ``sim.annotate(name)``."""
        self.ranges.append(ApiCall(start_ns, end_ns, name, -1, {}))

    def wait(self, start_ns: int, end_ns: int) -> None:
        """Record that the host thread was blocked on a device in [start, end)."""
        if end_ns > start_ns:
            self.waits.append((start_ns, end_ns))
