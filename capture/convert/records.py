"""The converter's input: one device's finished records of one drain as plain columns and small
records (no engine objects), made by the service from the wire's data or, for the whole run, by
:func:`records_of` from the engine's finished commands."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..sim.device.opcounters import CostColumns
from .replays import ReplayRun, replay_of

# the per-shape cost numbers an op's slice and counters read, in this order
COST_FIELDS = ("launch_ns", "compute_ns", "memory_ns", "floor_ns", "ideal_ns", "clock_hz", "dram_read_bytes",
               "dram_write_bytes", "useful_bytes", "latency_bound", "flops")
Segment = tuple[float, float, float, int]  # t0, t1, bytes moved, sharers


@dataclass(frozen=True, slots=True)
class OpShape:
    """What every op of one shape shares: its unit, true limiter, own arguments and cost numbers."""

    unit: str
    limiter: str
    args: dict[str, Any]  # bytes_read, bytes_written, dtype
    consts: tuple[float, ...]  # COST_FIELDS
    body_ns: float  # max(compute, memory, floor), before jitter


def op_shape(unit: str, dtype: str, read: int, written: int, flops: float, launch: float, compute: float,
             memory: float, floor: float, limiter: str, dram_read: int, dram_write: int, ideal: float,
             clock_hz: float) -> OpShape:
    """The shape of an op from its cost's numbers (the engine's ``OpCost`` or the wire's list)."""
    return OpShape(unit, limiter, {"bytes_read": read, "bytes_written": written, "dtype": dtype},
                   (launch, compute, memory, floor, ideal, clock_hz, dram_read, dram_write, read + written,
                    limiter == "latency", flops), max(compute, memory, floor))


@dataclass(frozen=True, slots=True)
class DmaBytes:
    """A copy's DMA job as the counters and slices read it."""

    nbytes: int
    descriptors: int
    data_tlps: int
    data_wire_bytes: int
    reverse_tlps: int
    reverse_wire_bytes: int


@dataclass(slots=True)
class Rare:
    """A command that is not an op: a copy, an event record or wait, or a graph replay (``run``:
    its nodes)."""

    seq: int  # place among the drain's commands of this device, in finishing order
    kind: str
    cid: int
    stream: int
    name: str
    args: dict[str, Any]
    start_ns: float
    end_ns: float
    cause: str = ""
    engine: int = -1
    direction: str = ""
    data_start_ns: float = np.nan
    data_end_ns: float = np.nan
    segments: list[Segment] = field(default_factory=list)
    job: DmaBytes | None = None
    run: ReplayRun | None = None

    @property
    def records(self) -> int:
        """Device records it leaves (a replay: one per node)."""
        return len(self.run) if self.run is not None else 1


@dataclass
class Ops:
    """A drain's ops of one device as columns, in finishing order (``shape``: a key of the
    records' ``shapes``)."""

    seq: np.ndarray
    cid: np.ndarray
    stream: np.ndarray
    shape: np.ndarray
    start: np.ndarray
    end: np.ndarray
    jitter: np.ndarray
    name: list[str]
    args: list[dict[str, Any]]
    cause: list[str]
    segments: list[list[Segment]]

    def __len__(self) -> int:
        return len(self.seq)

    def take(self, keep: np.ndarray) -> Ops:
        """The ops where ``keep`` (a bool column) holds."""
        idx = np.flatnonzero(keep).tolist()
        lists = [[x[i] for i in idx] for x in (self.name, self.args, self.cause, self.segments)]
        return Ops(*(a[keep] for a in (self.seq, self.cid, self.stream, self.shape, self.start, self.end,
                                       self.jitter)), *lists)


def no_ops() -> Ops:
    """No ops."""
    i, f = np.empty(0, np.int64), np.empty(0, np.float64)
    return Ops(i, i, i, i, f, f, f, [], [], [], [])


@dataclass
class DeviceRecords:
    """One device's finished commands of one drain: ops as columns, the rest as :class:`Rare`."""

    ops: Ops
    rare: list[Rare]
    shapes: dict[int, OpShape]
    records: int = 0  # device records (the ring's accounting: a replay counts one a node)
    # the whole run's every command's stream, submission and end (the queues' depth); None in the service
    queued: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.ops) + len(self.rare)

    @property
    def max_end(self) -> float:
        """The latest end among the commands (-inf: none)."""
        return max([float(self.ops.end.max()) if len(self.ops) else -np.inf, *(r.end_ns for r in self.rare)])

    def streams_ends(self) -> tuple[list[int], list[float]]:
        """Each command's stream and end."""
        return ([*self.ops.stream.tolist(), *(r.stream for r in self.rare)],
                [*self.ops.end.tolist(), *(r.end_ns for r in self.rare)])

    def record_counts(self) -> np.ndarray:
        """Device records of each command, in finishing order."""
        out = np.ones(len(self), dtype=np.int64)
        for r in self.rare:
            out[r.seq] = r.records
        return out

    def head(self, n: int) -> DeviceRecords:
        """The first ``n`` commands in finishing order."""
        return replace(self, ops=self.ops.take(self.ops.seq < n), rare=[r for r in self.rare if r.seq < n])

    def ending_after(self, t: float) -> DeviceRecords:
        """The commands that end after ``t``, renumbered in their order."""
        ops = self.ops.take(self.ops.end > t)
        rare = [replace(r) for r in self.rare if r.end_ns > t]
        return _renumbered(replace(self, ops=ops, rare=rare))

    def runs(self) -> list[tuple[float, float, str]]:
        """(start, end, cause) of the ops and replays, in finishing order."""
        o = self.ops
        items = list(zip(o.seq.tolist(), o.start.tolist(), o.end.tolist(), o.cause, strict=True))
        items += [(r.seq, r.start_ns, r.end_ns, r.cause) for r in self.rare if r.run is not None]
        if len(items) > len(o):
            items.sort(key=lambda x: x[0])
        return [x[1:] for x in items]

    def cost_columns(self) -> CostColumns:
        """The ops' cost terms as columns (their shapes' numbers and their own jitter)."""
        shapes = self.shapes
        consts = np.array([shapes[k].consts for k in self.ops.shape.tolist()], dtype=np.float64)
        c = dict(zip(COST_FIELDS, consts.reshape(-1, len(COST_FIELDS)).T, strict=True))
        return CostColumns(c["launch_ns"], c["compute_ns"], c["memory_ns"], c["floor_ns"], self.ops.jitter,
                           c["ideal_ns"], c["clock_hz"], c["dram_read_bytes"].astype(np.int64),
                           c["dram_write_bytes"].astype(np.int64), c["useful_bytes"], c["latency_bound"] != 0,
                           c["flops"])


def _renumbered(r: DeviceRecords) -> DeviceRecords:
    """``r`` with its commands' places made 0..n-1 in their order."""
    seqs = np.concatenate([r.ops.seq, np.array([x.seq for x in r.rare], dtype=np.int64)])
    rank = np.empty(len(seqs), np.int64)
    rank[np.argsort(seqs, kind="stable")] = np.arange(len(seqs))
    r.ops.seq = rank[:len(r.ops)]
    for x, s in zip(r.rare, rank[len(r.ops):].tolist(), strict=True):
        x.seq = s
    return r


def concat(parts: Sequence[DeviceRecords]) -> DeviceRecords:
    """The commands of ``parts`` one part after the other."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return DeviceRecords(no_ops(), [], {})
    if len(parts) == 1:
        return parts[0]
    shift = np.cumsum([0, *(len(p) for p in parts[:-1])]).tolist()
    o = [p.ops for p in parts]
    ops = Ops(*(np.concatenate([getattr(x, f) + (s if f == "seq" else 0) for x, s in zip(o, shift, strict=True)])
                for f in ("seq", "cid", "stream", "shape", "start", "end", "jitter")),
              *([v for x in o for v in getattr(x, f)] for f in ("name", "args", "cause", "segments")))
    rare = [replace(r, seq=r.seq + s) for p, s in zip(parts, shift, strict=True) for r in p.rare]
    shapes: dict[int, OpShape] = {}
    for p in parts:
        shapes.update(p.shapes)
    return DeviceRecords(ops, rare, shapes, sum(p.records for p in parts))


def records_of(cmds: Sequence[Any], shapes: dict[int, OpShape] | None = None) -> DeviceRecords:
    """The whole run's adapter: a device's finished engine ``Command``\\ s as records (an op
    costed outside the runtime's cache gets a negative shape key of its own)."""
    known = {} if shapes is None else shapes
    seq_ops, ops, rare = [], [], []
    for i, c in enumerate(cmds):
        if c.kind == "op" and c.cost is not None:
            seq_ops.append(i)
            ops.append(c)
        else:
            job = c.job
            rare.append(Rare(i, c.kind, c.cid, c.stream, c.name, c.args, c.start_ns, c.end_ns, c.cause, c.engine,
                             c.direction, c.data_start_ns, c.data_end_ns, c.segments,
                             None if job is None else DmaBytes(job.nbytes, job.descriptors, job.data_tlps,
                                                               job.data_wire_bytes, job.reverse_tlps,
                                                               job.reverse_wire_bytes),
                             replay_of(c.graph) if c.kind == "graph" and c.graph is not None else None))
    keys, uncached = [], 0
    for c in ops:
        cost = c.cost
        k = cost.shape
        if k < 0:
            uncached -= 1
            k = uncached
        if k not in known:
            w = cost.work
            known[k] = op_shape(w.unit, w.dtype, w.bytes_read, w.bytes_written, w.flops, cost.launch_ns,
                                cost.compute_ns, cost.memory_ns, cost.floor_ns, cost.limiter, cost.dram_read_bytes,
                                cost.dram_write_bytes, cost.ideal_ns, cost.clock_hz)
        keys.append(k)
    f = np.array([(c.start_ns, c.end_ns, c.cost.jitter) for c in ops], dtype=np.float64).reshape(-1, 3).T
    cols = Ops(np.array(seq_ops, dtype=np.int64), np.array([c.cid for c in ops], dtype=np.int64),
               np.array([c.stream for c in ops], dtype=np.int64), np.array(keys, dtype=np.int64), f[0].copy(),
               f[1].copy(), f[2].copy(), [c.name for c in ops], [c.args for c in ops], [c.cause for c in ops],
               [c.segments for c in ops])
    q = np.array([(c.stream, c.submit_ns, c.end_ns) for c in cmds], dtype=np.float64).reshape(-1, 3).T
    return DeviceRecords(cols, rare, known, len(ops) + sum(r.records for r in rare),
                         (q[0].astype(np.int64), q[1].copy(), q[2].copy()))
