"""Sampled device counters of a finished run: busy, HBM bytes, PCIe bytes/TLPs, credit stalls.

Values are per sampling window ``[t, t + period)`` and stamped at the window's start. They
are computed from the same commands the slices come from, so over any set of whole windows
they add up to what the ops and transfers moved (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sim.device.replay import UNITS
from ..sim.device.specs import DeviceSpec
from ..sim.device.window_sums import serial_window_sums, window_sums
from .records import DeviceRecords
from .replays import ReplayColumns


@dataclass(frozen=True)
class CounterSeries:
    """One counter's values per window."""

    name: str
    unit: str
    block: str
    description: str
    values: np.ndarray


class _Joint:
    """Intervals with the amounts one or more counters move over them (one at a time, or as
    arrays), gathered together: an op's body moves HBM bytes read and written, a copy's data
    phase moves bytes and TLPs both ways, each op keeps one unit busy. When the intervals are
    disjoint the windows are found once for all of them (:func:`~.sampling.serial_window_sums`);
    otherwise each counter is summed over its own intervals (``members``), as
    :func:`~.sampling.window_sums` would alone."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.rows: list[tuple[float, ...]] = []  # s, e, k amounts, k member flags
        self.chunks: list[tuple[np.ndarray, np.ndarray, list[np.ndarray], list[np.ndarray | None]]] = []

    def add(self, s: float, e: float, amounts: tuple[float, ...], members: tuple[bool, ...] | None = None) -> None:
        self.rows.append((s, e, *amounts, *(members or (True,) * self.k)))

    def extend(self, s: np.ndarray, e: np.ndarray, amounts: list[np.ndarray],
               members: list[np.ndarray | None] | None = None) -> None:
        self.chunks.append((s, e, amounts, members or [None] * self.k))

    def sums(self, edges: np.ndarray, outs: list[np.ndarray | None]) -> list[np.ndarray]:
        """Each counter's amount per window (into ``outs``, where not None)."""
        k, n = self.k, len(edges) - 1
        full = [np.empty(n) if o is None else o for o in outs]
        listed = np.array(self.rows, dtype=np.float64).reshape(-1, 2 + 2 * k)
        s, e = (np.concatenate([listed[:, i], *(c[i] for c in self.chunks)]) for i in range(2))
        amounts = [np.concatenate([listed[:, 2 + j], *(c[2][j] for c in self.chunks)]) for j in range(k)]
        if serial_window_sums(s, e, amounts, edges, full):
            return full
        for j in range(k):  # each over its own intervals
            mine = np.concatenate([listed[:, 2 + k + j] != 0, *(np.ones(len(c[0]), bool) if c[3][j] is None
                                                                 else c[3][j] for c in self.chunks)])
            window_sums(s[mine], e[mine], amounts[j][mine], edges, full[j])
        return full


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


def _ops(recs: DeviceRecords, busy: _Joint, hbm: _Joint) -> None:
    """Ops, as columns: busy time of the matrix and vector units (the collective engine is a unit
    of its own, whose sends may overlap its reductions: counted as the vector unit it read up to
    150%), HBM bytes spread over the body as it progressed (at its end when it has no body)."""
    ops, table = recs.ops, recs.shapes
    shapes = [table[k] for k in ops.shape.tolist()]
    start, end = ops.start, ops.end
    matrix = np.array([s.unit == "matrix" for s in shapes], dtype=bool)
    vector = np.array([s.unit == "vector" for s in shapes], dtype=bool)
    _busy(busy, start, end, matrix, vector)
    read = np.array([s.consts[6] for s in shapes], dtype=np.float64)  # dram bytes read, written
    written = np.array([s.consts[7] for s in shapes], dtype=np.float64)
    body = np.array([s.body_ns for s in shapes], dtype=np.float64) * ops.jitter
    segments = ops.segments
    counts = np.array(list(map(len, segments)), dtype=np.int64)
    at_end = (body <= 0) | (counts == 0)
    if at_end.any():
        hbm.extend(end[at_end], end[at_end], [read[at_end], written[at_end]])
    if counts.any():  # bytes follow the body's progress
        flat = np.array([s for segs in segments for s in segs], dtype=np.float64).reshape(-1, 4)
        owner = np.repeat(np.arange(len(ops)), counts)
        share = flat[:, 2] / body[owner]
        hbm.extend(flat[:, 0], flat[:, 1], [read[owner] * share, written[owner] * share])


def _busy(busy: _Joint, start: np.ndarray, end: np.ndarray, matrix: np.ndarray, vector: np.ndarray) -> None:
    """Each matrix or vector op's time on its unit (the collective engine's left out)."""
    keep = matrix | vector
    length = (end - start)[keep]
    m, v = matrix[keep], vector[keep]
    busy.extend(start[keep], end[keep], [np.where(m, length, 0.0), np.where(v, length, 0.0)], [m, v])


def _graphs(cols: ReplayColumns, busy: _Joint, hbm: _Joint) -> None:
    """Replays' nodes: busy time per unit; HBM bytes spread over each body (nothing shares HBM)."""
    start, body, end = cols.start, cols.body, cols.end
    matrix = cols.units == UNITS.index("matrix")
    vector = cols.units == UNITS.index("vector")
    _busy(busy, start, end, matrix, vector)
    hbm.extend(body, end, [cols.column("dram_read_bytes").astype(np.float64),
                           cols.column("dram_write_bytes").astype(np.float64)])


def device_counters(spec: DeviceSpec, recs: DeviceRecords, edges: np.ndarray,
                    replays: ReplayColumns | None = None, out: np.ndarray | None = None) -> list[CounterSeries]:
    """All sampled counters of one device over the windows between ``edges`` (true host ns);
    ``replays``: the graph replays among ``recs`` as columns, if the caller made them already;
    ``out``: where to write the values, ``(len(SERIES), windows)`` (each series' values a row of it)."""
    busy = _Joint(2)  # matrix, vector
    dma = _Joint(1)
    hbm = _Joint(2)  # read, written
    link = _Joint(4)  # bytes on the wire H2D, TLPs H2D, the same D2H
    stall = {"h2d": _Joint(1), "d2h": _Joint(1)}
    cycles_per_ns = spec.clock_hz * 1e-9
    graphs = []
    for c in recs.rare:
        if c.run is not None:
            graphs.append(c)
        elif c.kind == "copy":
            dma.add(c.start_ns, c.end_ns, ((c.end_ns - c.start_ns) / spec.pcie.dma_engines,))
            nbytes = int(c.args.get("bytes", 0))
            if c.direction == "d2d":
                hbm.add(c.start_ns, c.end_ns, (nbytes, nbytes))
                continue
            job = c.job
            if job is None:
                continue
            h2d = c.direction == "h2d"
            hbm.add(c.data_start_ns, c.data_end_ns, (0.0, job.nbytes) if h2d else (job.nbytes, 0.0), (not h2d, h2d))
            if job.nbytes == 0:
                t = c.data_start_ns
                there = (job.data_wire_bytes, job.data_tlps)
                back = (job.reverse_wire_bytes, job.reverse_tlps)
                link.add(t, t, (*there, *back) if h2d else (*back, *there))
                continue
            for t0, t1, moved, sharers in c.segments:
                f = moved / job.nbytes
                there = (job.data_wire_bytes * f, job.data_tlps * f)
                back = (job.reverse_wire_bytes * f, job.reverse_tlps * f)
                link.add(t0, t1, (*there, *back) if h2d else (*back, *there))
                if sharers > 1:
                    stall[c.direction].add(t0, t1, ((t1 - t0) * (1 - 1 / sharers) * cycles_per_ns,))
    if len(recs.ops):
        _ops(recs, busy, hbm)
    if graphs:
        if replays is None:
            replays = ReplayColumns([c.start_ns for c in graphs], [c.run for c in graphs])
        _graphs(replays, busy, hbm)
    period = float(edges[1] - edges[0]) if len(edges) > 1 else 1.0
    rows: list[np.ndarray | None] = [None] * len(SERIES) if out is None else list(out)
    values = [*busy.sums(edges, rows[0:2]), *dma.sums(edges, rows[2:3]), *hbm.sums(edges, rows[3:5])]
    wire_h2d, tlps_h2d, wire_d2h, tlps_d2h = link.sums(edges, [rows[5], rows[6], rows[8], rows[9]])
    values += [wire_h2d, tlps_h2d, *stall["h2d"].sums(edges, rows[7:8]), wire_d2h, tlps_d2h,
               *stall["d2h"].sums(edges, rows[10:11])]
    for v in values[:3]:  # busy time as % of each window
        v /= period
        v *= 100
    return [CounterSeries(*meta, v) for meta, v in zip(SERIES, values, strict=True)]
