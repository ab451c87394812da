"""What the host side of a simulated run did, as plain records for the trace writer.

The runtime appends here as calls happen: runtime API calls (with their correlation id),
host staging memcpy's of pageable copies, driver submissions (ring write + doorbell) and
the intervals in which the host thread was blocked waiting on a device. A tracer can set
``hook`` to see every call as it is recorded and take the records in increments
(:func:`.drain.drain`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class ApiCall(NamedTuple):
    """One runtime API call on the host thread (a tuple: cheap to make, and a recorder reads
    many of them column by column with one ``zip``)."""

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


@dataclass
class HostLog:
    """Everything the host side recorded during a session."""

    calls: list[ApiCall] = field(default_factory=list)
    memcpys: list[ApiCall] = field(default_factory=list)
    submissions: list[Submission] = field(default_factory=list)
    waits: list[tuple[int, int]] = field(default_factory=list)  # host blocked on a device: [start, end)
    ranges: list[ApiCall] = field(default_factory=list)  # the script's annotated phases (prefill, decode ...)
    # Called after every recorded API call (the tracer's hook: call sites, incremental drains).
    hook: Callable[[ApiCall], None] | None = None

    def call(self, start_ns: int, end_ns: int, name: str, cid: int, **args: Any) -> None:
        """Record a runtime API call."""
        self.record(start_ns, end_ns, name, cid, args)

    def record(self, start_ns: int, end_ns: int, name: str, cid: int, args: dict[str, Any]) -> None:
        """Record a runtime API call whose arguments are ``args`` (which may be shared, never changed)."""
        call = ApiCall(start_ns, end_ns, name, cid, args)
        self.calls.append(call)
        if self.hook is not None:
            self.hook(call)

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
