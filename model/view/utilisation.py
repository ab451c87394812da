"""Utilisation of each device over time, per pixel of any view: the share of time its ops were
compute-, memory- or latency-bound, moved data with no op running, or idle; and HBM and PCIe
bandwidth as a share of peak (or in bytes/s without a device spec).

Every figure comes from a ``Coverage``: the running integral of a sum of weighted intervals,
kept as sorted starts and ends with prefix sums, so the time (or bytes) inside any bucket is two
binary searches per edge. A frame costs the pixels on screen, not the slices under them, at any
zoom, with exact values. Bandwidth keeps its spikes when zoomed out: sampled counters through
``CounterLOD``'s min/max per pixel; rates from slices as the min and max of 4 sub-buckets per
pixel. Pure numpy."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from accelview.model.analysis import intervals as iv
from accelview.model.analysis.metrics.evaluate import metric_series, sampled_metrics
from accelview.model.analysis.metrics.expr import ExprError
from accelview.model.analysis.metrics.taxonomy import MetricRegistry, device_constants
from accelview.model.analysis.ops import OpLabels, device_spec
from accelview.model.analysis.stats_table import CLASSES as STATS_CLASSES
from accelview.model.analysis.stats_table import StatsSource
from accelview.model.trace import Trace

from .counter_lod import CounterLOD

CLASSES = ("compute", "memory", "latency", "unknown")  # op labels, stacked in this order
STACK = (*CLASSES, "transfer", "idle")
_TRANSFER = STATS_CLASSES.index("transfer")
SUB = 4  # sub-buckets per pixel for the min/max of rates derived from slices
_H2D = re.compile(r"h2d|htod|host.?to.?device", re.IGNORECASE)
_D2H = re.compile(r"d2h|dtoh|device.?to.?host", re.IGNORECASE)


def _matching(t: Trace, ids: np.ndarray, pattern: re.Pattern[str]) -> np.ndarray:
    """Mask of the slices whose name or lane name matches ``pattern`` (each name tested once)."""
    out = np.zeros(len(ids), bool)
    for column, name_of in ((t.slices.name, lambda n: t.strings[n]), (t.slices.track, t.track_name)):
        values = column[ids]
        present = np.flatnonzero(np.bincount(values))
        lut = np.zeros(int(present[-1]) + 1 if len(present) else 1, bool)
        lut[present] = [bool(pattern.search(name_of(int(v)))) for v in present]
        out |= lut[values]
    return out


class Coverage:
    """∫₀ᵗ of a sum of boxcars: intervals [start, end) (ns from an origin) with a weight each
    (1: time covered; bytes/ns: bytes moved). ``presorted``: starts and ends are each sorted
    already (disjoint intervals in order), unit weights only."""

    def __init__(self, start: np.ndarray, end: np.ndarray, weight: np.ndarray | None = None,
                 presorted: bool = False) -> None:
        self.n = len(start)
        parts = []
        for x in (start, end):
            if weight is None:  # unit weights: a plain sort, and the count is the running weight
                # stable: a merge sort, quick on the per-lane sorted runs slices come in
                xs = (x if presorted else np.sort(x, kind="stable")).astype(np.float64)
                cw = np.arange(len(xs) + 1, dtype=np.float64)
                cwx = np.concatenate(([0.0], np.cumsum(xs)))
            else:
                o = np.argsort(x, kind="stable")
                xs, ws = x[o].astype(np.float64), weight[o].astype(np.float64)
                cw = np.concatenate(([0.0], np.cumsum(ws)))
                cwx = np.concatenate(([0.0], np.cumsum(ws * xs)))
            parts.append((xs, cw, cwx))
        self._parts = parts

    def integral(self, t: np.ndarray) -> np.ndarray:
        """The integral from -∞ to each of ``t``: Σ w·(t − s) over starts before t, less the same
        over ends before t."""
        t = np.asarray(t, np.float64)
        out = np.zeros(len(t))
        for sign, (xs, cw, cwx) in zip((1.0, -1.0), self._parts, strict=True):
            i = np.searchsorted(xs, t, "left")
            out += sign * (cw[i] * t - cwx[i])
        return out

    def per_bucket(self, edges: np.ndarray) -> np.ndarray:
        """The integral inside each bucket between consecutive ``edges``."""
        if not self.n:
            return np.zeros(len(edges) - 1)
        return np.maximum(np.diff(self.integral(edges)), 0.0)


@dataclass
class Series:
    """One bandwidth line of a frame: min and max per pixel, in ``unit`` ("%" of peak, or "B/s")."""

    label: str
    lo: np.ndarray
    hi: np.ndarray
    unit: str


@dataclass
class Frame:
    """What one device's charts show for a view: bucket edges (ns from the origin), the share
    of each bucket per class of ``STACK`` (summing to 1), and bandwidth lines."""

    edges: np.ndarray
    shares: dict[str, np.ndarray]
    bandwidth: list[Series] = field(default_factory=list)


@dataclass
class _Rate:
    label: str
    lod: CounterLOD | None  # a sampled metric (fraction of peak)
    cov: Coverage | None  # or bytes/ns from slices
    peak: float  # bytes/s; NaN: unknown, shown in B/s


class DeviceUtilisation:
    """The coverages of one device, built once; ``frame`` is then cheap at any zoom."""

    def __init__(self, src: StatsSource, device: int, dev_of: np.ndarray, origin: int,
                 registry: MetricRegistry) -> None:
        self.device = device
        self.origin = origin
        mine = np.flatnonzero(dev_of == device)
        whole = len(mine) == len(dev_of)  # one device: no gathers of every column
        code = src.label if whole else src.label[mine]
        s = (src.start if whole else src.start[mine]) - origin
        e = s + (src.dur if whole else src.dur[mine])
        copy = code == _TRANSFER
        os_, oe, ocode = s[~copy], e[~copy], code[~copy]
        us, ue = iv.union(os_, oe)
        self.union = Coverage(us, ue, presorted=True)
        self.classes = {c: Coverage(os_[m], oe[m]) for c in CLASSES
                        if (m := ocode == STATS_CLASSES.index(c)).any()}
        cu = iv.union(s[copy], e[copy])
        idle = iv.gaps(us, ue, int(min(cu[0].min(initial=0), 0)), int(cu[1].max(initial=0)) + 1)
        self.transfer = Coverage(*iv.intersection(cu, idle), presorted=True)
        moves = copy if copy.any() else ~copy  # GPU traces: copies are ops on the streams
        self.rates = self._rates(src, mine, ~copy, moves, registry)

    def _rates(self, src: StatsSource, mine: np.ndarray, ops: np.ndarray, moves: np.ndarray,
               registry: MetricRegistry) -> list[_Rate]:
        t = src.trace
        consts = device_constants(registry, device_spec(t.metadata, self.device, t.source))
        sampled = set(sampled_metrics(t, registry))
        out = []
        for label, metric, peak_name, which, pattern in (
                ("HBM", "hbm_utilization", "hbm_peak", ops, None),
                ("PCIe H2D", "pcie_h2d_utilization", "pcie_wire_h2d", moves, _H2D),
                ("PCIe D2H", "pcie_d2h_utilization", "pcie_wire_d2h", moves, _D2H)):
            if metric in sampled:
                try:
                    ts, v = metric_series(t, registry, metric, self.device)
                except ExprError:  # counters of another device, or not sampled together
                    ts = np.empty(0)
                if len(ts):
                    out.append(_Rate(label, CounterLOD(ts, v), None, float(consts.get(peak_name, np.nan))))
                    continue
            if not src.has_args:
                continue
            rows = mine[which]
            if pattern is not None and len(rows):
                rows = rows[_matching(t, src.ids[rows], pattern)]
            moved = src.work[1][rows]
            ok = ~np.isnan(moved)
            if not ok.any():
                continue
            rows, moved = rows[ok], moved[ok]
            s = src.start[rows] - self.origin
            d = np.maximum(src.dur[rows], 1)
            peak = float(consts.get(peak_name.replace("wire", "peak"), np.nan))  # bulk payload bytes: the bulk peak
            out.append(_Rate(label, None, Coverage(s, s + d, moved / d), peak))
        return out

    def frame(self, t0: float, ns_per_px: float, width: int) -> Frame:
        """Shares and bandwidth over ``width`` pixels from ``t0`` (ns from the origin)."""
        edges = t0 + np.arange(width + 1, dtype=np.float64) * ns_per_px
        span = np.diff(edges)
        busy = self.union.per_bucket(edges)
        raw = {c: cov.per_bucket(edges) for c, cov in self.classes.items()}
        total = sum(raw.values()) if raw else np.zeros(width)
        scale = np.divide(busy, total * span, out=np.zeros(width), where=total > 0)
        shares = {c: raw[c] * scale if c in raw else np.zeros(width) for c in CLASSES}
        shares["transfer"] = np.clip(self.transfer.per_bucket(edges) / span, 0, 1)
        used = sum(shares[c] for c in STACK[:-1])
        over = np.maximum(used, 1.0)
        for c in STACK[:-1]:
            shares[c] = shares[c] / over
        shares["idle"] = np.clip(1.0 - used / over, 0, 1)
        return Frame(edges, shares, [self._series(r, t0, ns_per_px, width) for r in self.rates])

    def _series(self, r: _Rate, t0: float, ns_per_px: float, width: int) -> Series:
        if r.lod is not None:
            lo, hi = r.lod.minmax(t0, ns_per_px, width, self.origin)
            return Series(r.label, lo, hi, "%")
        sub = t0 + np.arange(width * SUB + 1, dtype=np.float64) * (ns_per_px / SUB)
        rate = (r.cov.per_bucket(sub) / (ns_per_px / SUB) * 1e9).reshape(width, SUB)  # bytes/s
        lo, hi = rate.min(axis=1), rate.max(axis=1)
        if np.isfinite(r.peak) and r.peak > 0:
            return Series(r.label, lo / r.peak * 100, hi / r.peak * 100, "%")
        return Series(r.label, lo, hi, "B/s")


def stack_pixels(shares: dict[str, np.ndarray], height: int) -> np.ndarray:
    """The stacked-share chart as a (height, width) array of indexes into ``STACK``, row 0 at
    the top: each pixel column filled bottom-up by its buckets' shares, so the app draws it as
    one image whatever the zoom."""
    cum = np.cumsum([shares[c] for c in STACK[:-1]], axis=0) * height  # (classes, width), in rows
    # Row r (centre height - 0.5 - r from the bottom) is past class k while that centre >= cum[k]: the
    # top last[k] + 1 rows. So a column, top down, is each class from the last to the first, repeated
    # for its rows: one np.repeat over all columns.
    past = np.clip(np.floor(height - 0.5 - cum) + 1, 0, height).astype(np.int64)  # rows past class k
    width = cum.shape[1]
    at_least = np.vstack((np.full(width, height), past, np.zeros(width, np.int64)))  # rows of class >= j
    rows = np.maximum(at_least[:-1] - at_least[1:], 0)[::-1]  # rows of each class, last class first
    order = np.arange(len(STACK) - 1, -1, -1, dtype=np.uint8)
    return np.ascontiguousarray(np.repeat(np.tile(order, width), rows.T.ravel()).reshape(width, height).T)


class Utilisation:
    """The utilisation of every device of a trace that ran ops."""

    def __init__(self, trace: Trace, labels: OpLabels | None = None, origin: int | None = None) -> None:
        src = StatsSource(trace, labels=labels)
        self.origin = trace.time_bounds()[0] if origin is None else origin
        registry = MetricRegistry.load()
        dev_of = trace.tracks.device[trace.slices.track[src.ids]]
        devices = np.unique(dev_of[src.label != _TRANSFER])
        self.devices = {int(d): DeviceUtilisation(src, int(d), dev_of, self.origin, registry)
                        for d in devices if d >= 0}

    def frames(self, t0: float, ns_per_px: float, width: int) -> dict[int, Frame]:
        """Each device's frame over ``width`` pixels from ``t0`` (ns from the origin)."""
        return {d: u.frame(t0, ns_per_px, width) for d, u in self.devices.items()}
