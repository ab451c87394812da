"""Sampled device counters of a finished run: busy, HBM bytes, PCIe bytes/TLPs, credit stalls.

Values are per sampling window ``[t, t + period)`` and stamped at the window's start. They
are computed from the same commands the slices come from, so over any set of whole windows
they add up to what the ops and transfers moved (tested).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .engine import Command
from .graph import UNITS, ReplayColumns
from .sampling import serial_window_sums, window_sums
from .specs import DeviceSpec


@dataclass(frozen=True)
class CounterSeries:
    """One counter's values per window."""

    name: str
    unit: str
    block: str
    description: str
    values: np.ndarray


class _Acc:
    """Intervals with amounts, gathered per counter (one at a time, or as arrays)."""

    def __init__(self) -> None:
        self.s: list[float] = []
        self.e: list[float] = []
        self.a: list[float] = []
        self.chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, s: float, e: float, a: float) -> None:
        self.s.append(s)
        self.e.append(e)
        self.a.append(a)

    def extend(self, s: np.ndarray, e: np.ndarray, a: np.ndarray) -> None:
        self.chunks.append((s, e, a))

    def sums(self, edges: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        parts = [(np.array(self.s), np.array(self.e), np.array(self.a)), *self.chunks]
        s, e, a = (np.concatenate([p[k] for p in parts]) for k in range(3))
        return window_sums(s, e, a, edges, out)


class _Hbm:
    """HBM bytes read and written, gathered per interval together: an op's body, a replay's
    node, a device-to-device copy move both over one interval (a host copy moves one of them),
    so when the intervals are disjoint the windows are found once for both
    (:func:`~.sampling.serial_window_sums`)."""

    def __init__(self) -> None:
        self.rows: list[tuple[float, float, float, float, bool, bool]] = []  # s, e, read, written, in each
        self.chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, s: float, e: float, read: float, written: float, reads: bool = True, writes: bool = True) -> None:
        self.rows.append((s, e, read, written, reads, writes))

    def extend(self, s: np.ndarray, e: np.ndarray, read: np.ndarray, written: np.ndarray) -> None:
        self.chunks.append((s, e, read, written))

    def sums(self, edges: np.ndarray, outs: list[np.ndarray | None]) -> list[np.ndarray]:
        """Bytes read and bytes written per window (into ``outs``, where not None)."""
        n = len(edges) - 1
        outs = [np.empty(n) if o is None else o for o in outs]
        listed = np.array(self.rows, dtype=np.float64).reshape(-1, 6)
        cols = [np.concatenate([listed[:, k], *(c[k] for c in self.chunks)]) for k in range(4)]
        if serial_window_sums(cols[0], cols[1], cols[2:], edges, outs):
            return outs
        for k, out in ((2, outs[0]), (3, outs[1])):  # each from its own intervals, as window_sums would
            mine = np.concatenate([listed[:, k + 2] != 0, np.ones(sum(len(c[0]) for c in self.chunks), bool)])
            window_sums(cols[0][mine], cols[1][mine], cols[k][mine], edges, out)
        return outs


# Every device's sampled counters, in the order device_counters gives them: name, unit, block, description.
SERIES: tuple[tuple[str, str, str, str], ...] = (
    ("matrix busy", "%", "matrix", "time the matrix unit ran an op"),
    ("vector busy", "%", "vector", "time the vector unit ran an op"),
    ("DMA busy", "%", "dma", "mean over DMA engines of the time they ran a copy"),
    ("HBM read bytes", "B", "hbm", "bytes read from HBM (whole bursts)"),
    ("HBM write bytes", "B", "hbm", "bytes written to HBM (whole bursts)"),
    *((name.format(d.upper()), unit, "pcie", text.format(d.upper())) for d in ("h2d", "d2h") for name, unit, text in (
        ("PCIe {} bytes", "B", "bytes on the wire {}, TLP headers included"),
        ("PCIe {} TLPs", "TLPs", "TLPs sent {}"),
        ("PCIe {} credit stall cycles", "cycles", "DMA-engine cycles waiting for link credits {} (link shared)"))),
)


def _graphs(cols: ReplayColumns, busy: dict[str, _Acc], hbm: _Hbm) -> None:
    """Replays' nodes: busy time per unit; HBM bytes spread over each body (nothing shares HBM)."""
    start, body, end = cols.start, cols.body, cols.end
    for unit, on in (("matrix", cols.units == UNITS.index("matrix")), ("vector", cols.units != UNITS.index("matrix"))):
        if on.any():
            busy[unit].extend(start[on], end[on], end[on] - start[on])
    hbm.extend(body, end, cols.column("dram_read_bytes").astype(np.float64),
               cols.column("dram_write_bytes").astype(np.float64))


def device_counters(spec: DeviceSpec, commands: Iterable[Command], edges: np.ndarray,
                    replays: ReplayColumns | None = None, out: np.ndarray | None = None) -> list[CounterSeries]:
    """All sampled counters of one device over the windows between ``edges`` (true host ns);
    ``replays``: the graph replays among ``commands`` as columns, if the caller made them already;
    ``out``: where to write the values, ``(len(SERIES), windows)`` (each series' values a row of it)."""
    busy = {u: _Acc() for u in ("matrix", "vector", "dma")}
    hbm = _Hbm()
    wire = {"h2d": _Acc(), "d2h": _Acc()}
    tlps = {"h2d": _Acc(), "d2h": _Acc()}
    stall = {"h2d": _Acc(), "d2h": _Acc()}
    cycles_per_ns = spec.clock_hz * 1e-9
    graphs: list[Command] = []
    for c in commands:
        if c.kind == "graph" and c.graph is not None:
            graphs.append(c)
        elif c.kind == "op" and c.cost is not None:
            unit = c.cost.unit if c.cost.unit in busy else "vector"
            busy[unit].add(c.start_ns, c.end_ns, c.end_ns - c.start_ns)
            body_ns = c.cost.body_ns
            if body_ns <= 0 or not c.segments:
                hbm.add(c.end_ns, c.end_ns, c.cost.dram_read_bytes, c.cost.dram_write_bytes)
            for t0, t1, progressed, _ in c.segments:  # bytes follow the body's progress
                hbm.add(t0, t1, c.cost.dram_read_bytes * progressed / body_ns,
                        c.cost.dram_write_bytes * progressed / body_ns)
        elif c.kind == "copy":
            busy["dma"].add(c.start_ns, c.end_ns, (c.end_ns - c.start_ns) / spec.pcie.dma_engines)
            nbytes = int(c.args.get("bytes", 0))
            if c.direction == "d2d":
                hbm.add(c.start_ns, c.end_ns, nbytes, nbytes)
                continue
            job = c.job
            if job is None:
                continue
            h2d = c.direction == "h2d"
            hbm.add(c.data_start_ns, c.data_end_ns, 0.0 if h2d else job.nbytes, job.nbytes if h2d else 0.0,
                    reads=not h2d, writes=h2d)
            other = "d2h" if c.direction == "h2d" else "h2d"
            if job.nbytes == 0:
                t = c.data_start_ns
                wire[c.direction].add(t, t, job.data_wire_bytes)
                tlps[c.direction].add(t, t, job.data_tlps)
                wire[other].add(t, t, job.reverse_wire_bytes)
                tlps[other].add(t, t, job.reverse_tlps)
                continue
            for t0, t1, moved, sharers in c.segments:
                f = moved / job.nbytes
                wire[c.direction].add(t0, t1, job.data_wire_bytes * f)
                tlps[c.direction].add(t0, t1, job.data_tlps * f)
                wire[other].add(t0, t1, job.reverse_wire_bytes * f)
                tlps[other].add(t0, t1, job.reverse_tlps * f)
                if sharers > 1:
                    stall[c.direction].add(t0, t1, (t1 - t0) * (1 - 1 / sharers) * cycles_per_ns)
    if graphs:
        if replays is None:
            replays = ReplayColumns([c.start_ns for c in graphs], [c.graph for c in graphs if c.graph is not None])
        _graphs(replays, busy, hbm)
    period = float(edges[1] - edges[0]) if len(edges) > 1 else 1.0
    accs = [busy["matrix"], busy["vector"], busy["dma"]]
    for d in ("h2d", "d2h"):
        accs += [wire[d], tlps[d], stall[d]]
    rows = [0, 1, 2, *range(5, len(SERIES))]  # each accumulator's series
    values = [acc.sums(edges, None if out is None else out[r]) for r, acc in zip(rows, accs, strict=True)]
    values[3:3] = hbm.sums(edges, [None, None] if out is None else [out[3], out[4]])
    for v in values[:3]:  # busy time as % of each window
        v /= period
        v *= 100
    return [CounterSeries(*meta, v) for meta, v in zip(SERIES, values, strict=True)]
