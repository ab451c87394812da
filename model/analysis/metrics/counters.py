"""Base counter values out of a trace: per op (from the op slices' arguments and the device's
per-op counters) and per window (from the sampled counter tracks), ready for
``MetricRegistry.evaluate``."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from accelview.model.schema import OP_COUNTER_COLUMNS, ArgKind
from accelview.model.trace import Trace

OP_COUNTER_NAMES = frozenset(c for c, _ in OP_COUNTER_COLUMNS)


def arg_values(trace: Trace, key: str, slice_ids: np.ndarray) -> np.ndarray:
    """The numeric argument ``key`` of each slice as float (NaN where a slice lacks it)."""
    return arg_columns(trace, [key], slice_ids)[key]


def arg_columns(trace: Trace, keys: Iterable[str], slice_ids: np.ndarray) -> dict[str, np.ndarray]:
    """Several numeric arguments of each slice at once (NaN where a slice lacks one). A device's
    per-op counters (``op_counters``) count as arguments of their slices."""
    keys = list(keys)
    out = {key: np.full(len(slice_ids), np.nan) for key in keys}
    if len(slice_ids) == 0:
        return out
    args = trace.tables["args"]
    if len(args):
        sets = trace.slices.args[slice_ids]
        has = np.flatnonzero(sets >= 0)
        present = sets[has]
        n_sets = int(args.set.max()) + 1
        numeric = args.kind != ArgKind.STR
        for key in keys:
            k = trace.strings.lookup(key)
            if k < 0:
                continue
            rows = np.flatnonzero((args.key == k) & numeric)
            if len(rows) == 0:
                continue
            lookup = np.full(n_sets, np.nan)
            lookup[args.set[rows]] = np.where(args.kind[rows] == ArgKind.INT, args.int[rows], args.real[rows])
            out[key][has] = lookup[present]
    counted = [key for key in keys if key in OP_COUNTER_NAMES]
    oc = trace.tables["op_counters"]
    if counted and len(oc):
        at = np.minimum(np.searchsorted(oc.slice, slice_ids), len(oc) - 1)
        hit = np.flatnonzero(oc.slice[at] == slice_ids)
        for key in counted:
            out[key][hit] = oc[key][at[hit]]
    return out


def arg_strings(trace: Trace, key: str, slice_ids: np.ndarray) -> np.ndarray:
    """The string argument ``key`` of each slice as a string id (-1 where a slice lacks it)."""
    out = np.full(len(slice_ids), -1, np.int64)
    k = trace.strings.lookup(key)
    args = trace.tables["args"]
    if k < 0 or len(args) == 0 or len(slice_ids) == 0:
        return out
    rows = np.flatnonzero((args.key == k) & (args.kind == ArgKind.STR))
    lookup = np.full(int(args.set.max()) + 1, -1, np.int64)
    lookup[args.set[rows]] = args.str[rows]
    sets = trace.slices.args[slice_ids]
    has = sets >= 0
    out[has] = lookup[sets[has]]
    return out


def window_sum(trace: Trace, track: int, t0: int, t1: int) -> float:
    """Sum of a delta counter's samples in [t0, t1), the edge samples pro rata.

    A sample at ts holds the amount counted over (previous ts, ts]."""
    ts, v = trace.counter_series(track)
    if len(ts) == 0:
        return 0.0
    prev = np.concatenate(([ts[0] - (ts[1] - ts[0]) if len(ts) > 1 else ts[0] - 1], ts[:-1]))
    lo = np.maximum(prev, t0)
    hi = np.minimum(ts, t1)
    frac = np.clip((hi - lo) / np.maximum(ts - prev, 1), 0.0, 1.0)
    return float((v * frac).sum())


def window_mean(trace: Trace, track: int, t0: int, t1: int) -> float:
    """Time-weighted mean of a gauge counter over [t0, t1) (each sample holds until the next)."""
    ts, v = trace.counter_series(track)
    if len(ts) == 0:
        return float("nan")
    nxt = np.concatenate((ts[1:], [max(int(ts[-1]), t1)]))
    w = np.clip(np.minimum(nxt, t1) - np.maximum(ts, t0), 0, None).astype(float)
    return float((v * w).sum() / w.sum()) if w.sum() > 0 else float(v[np.searchsorted(ts, t0, "right") - 1])
