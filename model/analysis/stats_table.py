"""The statistics table of the app's Statistics panel and ``accelview stats``: device work (ops
and copies) grouped by name, lane or phase, with count, total, mean, p50/p95/p99, share of the
time, the bottleneck class most of a group's ops have, and achieved FLOP/s and bytes/s where
counters or shapes give them; over the whole run or a window.

``StatsSource`` reads the per-slice columns once (labels, FLOPs, bytes, phase of each slice);
``table(by, window)`` then groups in a few vectorised passes, so a range selection recomputes
in well under a second at 10M slices."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from accelview.model.trace import Trace

from .metrics.counters import arg_columns
from .op_classes import CLASSES as OP_CLASSES
from .ops import OpLabels, classify_ops
from .report import phase_intervals
from .roles import Roles
from .stats import group_percentiles

GROUPINGS = ("name", "lane", "phase")
CLASSES = ("compute", "memory", "latency", "transfer", "unknown")  # bottleneck class codes
NO_PHASE = "(outside phases)"


@dataclass(frozen=True)
class StatsTable:
    """Rows of one grouping, largest total first; columns are arrays of the same length.

    ``share`` is each row's part of the summed time of all rows; ``flops_per_s`` and
    ``bytes_per_s`` are summed FLOPs (bytes) over the summed time of the slices that report
    them, NaN where none does. ``slices`` of a row: ``ids[group == row]``."""

    by: str
    keys: list[str]
    count: np.ndarray
    total_ns: np.ndarray
    mean_ns: np.ndarray
    p50_ns: np.ndarray
    p95_ns: np.ndarray
    p99_ns: np.ndarray
    share: np.ndarray
    bottleneck: list[str]
    flops_per_s: np.ndarray
    bytes_per_s: np.ndarray
    ids: np.ndarray  # the slices counted
    group: np.ndarray  # their row
    window: tuple[int, int] | None = None

    def __len__(self) -> int:
        return len(self.keys)

    def slices_of(self, row: int) -> np.ndarray:
        """Ids of the slices of one row."""
        return self.ids[self.group == row]

    def row(self, i: int) -> dict[str, object]:
        """One row as a plain dict (column name → value), as the CSV and the JSON print it."""
        return {self.by: self.keys[i], "count": int(self.count[i]), "total_ns": int(self.total_ns[i]),
                "mean_ns": float(self.mean_ns[i]), "p50_ns": float(self.p50_ns[i]),
                "p95_ns": float(self.p95_ns[i]), "p99_ns": float(self.p99_ns[i]), "share": float(self.share[i]),
                "bottleneck": self.bottleneck[i], "flops_per_s": float(self.flops_per_s[i]),
                "bytes_per_s": float(self.bytes_per_s[i])}


def _lane_label(trace: Trace, track: int) -> str:
    parent = int(trace.tracks.parent[track])
    name = trace.track_name(track)
    return f"{trace.track_name(parent)} · {name}" if parent >= 0 else name


class StatsSource:
    """The per-slice columns the statistics of one trace need, read once."""

    def __init__(self, trace: Trace, roles: Roles | None = None, labels: OpLabels | None = None) -> None:
        self.trace = trace
        self.roles = roles or Roles(trace)
        self._labels = labels  # the analysis's op labels, when it ran already

    @cached_property
    def ids(self) -> np.ndarray:
        """Device work: ops, and copies on lanes that are not op lanes already; by id."""
        r = self.roles
        copies = r.copies[~np.isin(r.copies, r.device_ops)] if len(r.copies) else r.copies
        return np.union1d(r.device_ops, copies) if len(copies) else r.device_ops

    @cached_property
    def start(self) -> np.ndarray:
        """Start of each slice of ``ids``."""
        return self.trace.slices.start_ns[self.ids]

    @cached_property
    def dur(self) -> np.ndarray:
        """Duration of each slice of ``ids``."""
        return self.trace.slices.dur_ns[self.ids]

    @cached_property
    def label(self) -> np.ndarray:
        """Bottleneck class code (index in ``CLASSES``) of each slice: ops by their counters
        (``unknown`` without any), copies ``transfer``."""
        out = np.full(len(self.ids), CLASSES.index("transfer"), np.uint8)
        ops = self.roles.device_ops
        if not len(ops):
            return out
        if self._labels is None and not len(self.trace.tables["op_counters"]) \
                and not (self.trace.slices.args[ops] >= 0).any():
            out[self._is(ops)] = CLASSES.index("unknown")  # nothing to classify by
            return out
        labels = self._labels if self._labels is not None else classify_ops(self.roles)
        at = self._is(labels.slice)
        # op_classes' classes onto this table's: the ones it does not show count as unknown
        to_mine = np.array([CLASSES.index(c) if c in CLASSES else CLASSES.index("unknown") for c in OP_CLASSES],
                           np.uint8)
        out[at] = to_mine[labels.code]
        return out

    def _is(self, subset: np.ndarray) -> np.ndarray:
        """Where in ``ids`` the (ascending) ids of ``subset`` are, as a mask."""
        mask = np.zeros(len(self.trace.slices), bool)
        mask[subset] = True
        return mask[self.ids]

    @cached_property
    def work(self) -> tuple[np.ndarray, np.ndarray]:
        """(FLOPs, bytes) of each slice, NaN where unknown: FLOPs from the op's counter or
        argument; bytes from HBM counters, else the op's shape (bytes read + written), else a
        copy's size."""
        if not self.has_args:
            nan = np.full(len(self.ids), np.nan)
            return nan, nan.copy()
        a = arg_columns(self.trace, ("flops", "hbm_read_bytes", "hbm_write_bytes", "bytes_read", "bytes_written",
                                     "bytes"), self.ids)
        hbm = a["hbm_read_bytes"] + np.nan_to_num(a["hbm_write_bytes"])
        shape = a["bytes_read"] + np.nan_to_num(a["bytes_written"])
        moved = np.where(np.isnan(hbm), np.where(np.isnan(shape), a["bytes"], shape), hbm)
        return a["flops"], moved

    @cached_property
    def has_args(self) -> bool:
        """Whether any slice counted has arguments or device-reported counters."""
        return bool(len(self.trace.tables["op_counters"])) or bool((self.trace.slices.args[self.ids] >= 0).any())

    @cached_property
    def phases(self) -> tuple[list[str], np.ndarray]:
        """(phase names, the phase of each slice as an index into them; the last is
        ``NO_PHASE``). A slice belongs to the phase its launching host call ran in (its flow
        chain's root), else the one it started in."""
        spans = phase_intervals(self.trace)
        names = sorted({n for n, _, _ in spans})
        index = {n: i for i, n in enumerate(names)}
        names.append(NO_PHASE)
        out = np.full(len(self.ids), len(names) - 1, np.int32)
        if not spans:
            return names, out
        root, _ = self.roles.chain
        r = root[self.ids]
        t = np.where(r >= 0, self.trace.slices.start_ns[np.maximum(r, 0)], self.start)
        s = np.array([a for _, a, _ in spans], np.int64)
        o = np.argsort(s, kind="stable")
        s = s[o]
        e = np.array([z for _, _, z in spans], np.int64)[o]
        which = np.array([index[n] for n, _, _ in spans], np.int32)[o]
        k = np.searchsorted(s, t, "right") - 1
        inside = (k >= 0) & (t < e[np.maximum(k, 0)])
        out[inside] = which[k[inside]]
        return names, out

    def table(self, by: str = "name", window: tuple[int, int] | None = None) -> StatsTable:
        """Statistics grouped ``by`` name, lane or phase, of the slices that overlap ``window``
        (absolute [t0, t1) ns; None: all); whole durations count."""
        if by not in GROUPINGS:
            raise ValueError(f"group by one of {', '.join(GROUPINGS)}, not {by!r}")
        sel = None
        if window is not None:
            t0, t1 = window
            sel = np.flatnonzero((self.start < t1) & ((self.start + self.dur > t0) | (self.start >= t0)))
        take = (lambda a: a) if sel is None else (lambda a: a[sel])
        ids, dur = take(self.ids), take(self.dur)
        t = self.trace
        if by == "name":
            gid = t.slices.name[ids]
        elif by == "lane":
            gid = t.slices.track[ids]
        else:
            gid = take(self.phases[1])
        groups, dense, count, total, (p50, p95, p99) = group_percentiles(gid, dur, (0.5, 0.95, 0.99))
        n = len(groups)
        lab = np.bincount(dense * len(CLASSES) + take(self.label), weights=dur, minlength=n * len(CLASSES))
        lab = lab.reshape(n, len(CLASSES))
        bottleneck = [CLASSES[int(i)] if c.any() else "" for i, c in zip(lab.argmax(axis=1), lab, strict=True)]
        flops, moved = (take(x) for x in self.work)
        rates = []
        for amount in (flops, moved):
            has = ~np.isnan(amount)
            num = np.bincount(dense[has], weights=amount[has], minlength=n)
            den = np.bincount(dense[has], weights=dur[has], minlength=n)
            rates.append(np.divide(num * 1e9, den, out=np.full(n, np.nan), where=den > 0))
        if by == "name":
            keys = [t.strings[int(g)] for g in groups]
        elif by == "lane":
            keys = [_lane_label(t, int(g)) for g in groups]
        else:
            keys = [self.phases[0][int(g)] for g in groups]
        grand = max(int(total.sum()), 1)
        order = np.argsort(-total, kind="stable")
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n)
        return StatsTable(
            by, [keys[i] for i in order], count[order], total[order], (total / np.maximum(count, 1))[order],
            p50[order], p95[order], p99[order], (total / grand)[order], [bottleneck[i] for i in order],
            rates[0][order], rates[1][order], ids, rank[dense] if n else dense,
            None if window is None else (int(window[0]), int(window[1])))
