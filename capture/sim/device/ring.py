"""A device's trace buffer as the tracer reads it: each command written down as it finishes.

The recorder installs a :class:`DeviceRing` as each traced engine's ``finished``, as a driver
gives the hardware a buffer: an op is written down at once (:data:`OP_FIELDS`, one
``list.extend``) and freed, its cost as its shape's number; the rare other commands are kept
whole. Why, and what it saves the traced script: docs/CAPTURE.md, *The device rings*.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .command import Command
from .costs import OpCost

# What the ring keeps of an op, back to back in one list (one ``extend`` an op): its cid, its
# cost's shape number, stream, number of progress segments, its only segment when it has one
# (t0, t1, bytes moved, sharers; an op of several segments has them whole in
# ``RingBatch.segments``, in op order), its cost's jitter, start, end, args, cause and name.
OP_FIELDS = ("cid", "shape", "stream", "segments", "t0", "t1", "moved", "sharers", "jitter", "start", "end", "args",
             "cause", "name")
OP_INTS = ("cid", "shape", "stream", "segments", "sharers")
OP_FLOATS = ("t0", "t1", "moved", "jitter", "start", "end")
_NO_SEGMENT = (0.0, 0.0, 0.0, 0)


@dataclass
class Templates:
    """The op costs a session's service has been sent: the shapes seen, and the last number
    given to a cost the runtime did not cache (shape -1: each gets a negative number of its own)."""

    seen: set[int] = field(default_factory=set)
    uncached: int = -1


@dataclass
class RingBatch:
    """What a device finished since the last drain."""

    ops: list[Any]  # OP_FIELDS of each op, back to back
    segments: list[list[tuple[float, float, float, int]]]  # of the ops with more than one segment
    others: list[tuple[int, Command]]  # (place among the batch's commands, command) of the rest
    costs: list[tuple[int, OpCost]]  # templates of the shapes first seen in this batch
    records: int = 0  # device records (a graph replay leaves one per node)

    @property
    def n_ops(self) -> int:
        """Number of ops."""
        return len(self.ops) // len(OP_FIELDS)

    @property
    def commands(self) -> int:
        """Number of commands, ops and others."""
        return self.n_ops + len(self.others)


class DeviceRing:
    """Installed as a device engine's ``finished``: the engine calls ``append`` as each command
    finishes; ``take()`` hands over what was written since the last take."""

    __slots__ = ("_costs", "_ops", "_others", "_records", "_seen", "_segments", "templates")

    def __init__(self, templates: Templates) -> None:
        self.templates = templates
        self._seen = templates.seen
        self._reset()

    def _reset(self) -> None:
        self._ops: list[Any] = []
        self._segments: list[list[tuple[float, float, float, int]]] = []
        self._others: list[tuple[int, Command]] = []
        self._costs: list[tuple[int, OpCost]] = []
        self._records = 0

    def append(self, c: Command) -> None:
        """Write down a command that has just finished (the engine's ``finished.append``)."""
        cost = c.cost
        if cost is None:  # the runtime gives costs to ops only
            self._other(c)
            return
        shape = cost.shape
        if shape not in self._seen:
            shape = self._template(shape, cost)
        segments = c.segments
        if len(segments) == 1:  # one flat tuple (a starred segment in it would build a list first: 1.4x slower)
            (t0, t1, moved, sharers), = segments
            self._ops += (c.cid, shape, c.stream, 1, t0, t1, moved, sharers, cost.jitter, c.start_ns, c.end_ns, c.args,
                          c.cause, c.name)
        else:
            self._ops += (c.cid, shape, c.stream, len(segments), *_NO_SEGMENT, cost.jitter, c.start_ns, c.end_ns,
                          c.args, c.cause, c.name)
            if segments:
                self._segments.append(segments)

    def _other(self, c: Command) -> None:
        self._others.append((len(self._ops) // len(OP_FIELDS) + len(self._others), c))
        self._records += c.records

    def _template(self, shape: int, cost: OpCost) -> int:
        """The number an op of a shape not sent yet crosses with; its cost becomes the template."""
        t = self.templates
        if shape < 0:
            t.uncached -= 1
            shape = t.uncached
        else:
            t.seen.add(shape)
        self._costs.append((shape, cost))
        return shape

    def take(self) -> RingBatch:
        """What was written since the last take; the ring starts empty again."""
        batch = RingBatch(self._ops, self._segments, self._others, self._costs,
                          self._records + len(self._ops) // len(OP_FIELDS))
        self._reset()
        return batch

    def __iter__(self) -> Iterator[Command]:
        """No commands: what a ring wrote down is the tracer's. (A script's ``s.trace()`` on a
        traced session reads its devices' finished commands: it gets none, and only the host
        records not drained yet, as under any tracer the capture is the service's file.)"""
        return iter(())

    def __len__(self) -> int:
        return 0
