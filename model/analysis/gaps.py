"""Device idle time: every interval in which a device ran no op, with its cause.

For the op that ended a gap, in this order:
- ``communication``: it waited on a network (collective) transfer that ended in the gap;
- ``pcie``: a transfer flowing into it ended in the gap, or it had been submitted before the
  gap began and a transfer of its device ended in the gap (a stream waiting on a copy's event);
- ``sync``: it was submitted late because the host sat in a call that waited for the device
  (a synchronize, a synchronous copy) and returned during the gap; or it had been submitted in
  time and waited while the host sat in such a call (an event of other work, a stream wait);
- ``host``: otherwise it was submitted late: the host was busy elsewhere (launching, Python);
- ``unexplained``: it had been submitted in time and nothing in the trace shows what it waited
  for (work the trace does not hold: another process, a peer, a dropped event).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from accelview.model.schema import TrackKind

from . import intervals as iv
from .roles import Roles


@dataclass(frozen=True)
class Gaps:
    """Idle intervals of the devices, column-wise."""

    device: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    cause: np.ndarray  # "host", "pcie", "sync" or "communication"
    next_op: np.ndarray
    confidence: np.ndarray

    def __len__(self) -> int:
        return len(self.start_ns)


def _any_in(sorted_times: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per interval (lo, hi]: whether some time falls inside."""
    if len(sorted_times) == 0:
        return np.zeros(len(lo), bool)
    return np.searchsorted(sorted_times, hi, "right") > np.searchsorted(sorted_times, lo, "right")


def _overlaps(us: np.ndarray, ue: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per interval (lo, hi): whether it meets one of the sorted disjoint intervals (us, ue)."""
    if len(us) == 0:
        return np.zeros(len(lo), bool)
    k = np.searchsorted(us, hi, "left") - 1  # the last interval starting before hi
    return (k >= 0) & (ue[np.maximum(k, 0)] > lo)


def _feeding_ends(roles: Roles, ops: np.ndarray, *kinds: tuple[TrackKind, ...]) -> list[np.ndarray]:
    """Per op, for each tuple of ``kinds``: the latest end of a slice on a track of those kinds
    flowing into it (-1: none). Works on the flows, never on arrays of every slice."""
    t = roles.trace
    src, dst = t.flows.src, t.flows.dst
    src_kind = t.tracks.kind[t.slices.track[src]]
    out = []
    for group in kinds:
        per_op = np.full(len(ops), -1, np.int64)
        m = np.isin(src_kind, [int(k) for k in group])
        if m.any():
            d, e = dst[m], roles.end[src[m]]
            o = np.lexsort((e, d))  # the last of each destination holds its latest end
            d, e = d[o], e[o]
            last = np.append(d[1:] != d[:-1], True)
            d, e = d[last], e[last]
            at = np.minimum(np.searchsorted(d, ops), len(d) - 1)
            hit = d[at] == ops
            per_op[hit] = e[at[hit]]
        out.append(per_op)
    return out


def device_gaps(roles: Roles, min_gap_ns: int = 1) -> Gaps:
    """Idle intervals between ops of each device, with causes."""
    t = roles.trace
    start, dur = t.slices.start_ns, t.slices.dur_ns
    ops = roles.device_ops[roles.ops_order]  # by start
    devices = t.tracks.device[t.slices.track[ops]]
    by_device = np.argsort(devices, kind="stable")  # each device's ops contiguous, still by start
    ops, devices = ops[by_device], devices[by_device]
    s_ops = start[ops]
    e_ops = s_ops + dur[ops]
    # When each op became visible to the device (its submission's end, else its host call's end).
    root, submitter = roles.chain
    via = np.where(submitter[ops] >= 0, submitter[ops], root[ops])
    visible = np.where(via >= 0, start[np.maximum(via, 0)] + dur[np.maximum(via, 0)], -1)
    pcie_in, net_in = _feeding_ends(roles, ops, (TrackKind.PCIE, TrackKind.DMA_ENGINE), (TrackKind.NETWORK_LINK,))
    calls = roles.blocking_calls
    blocking_end = np.sort(start[calls] + dur[calls])
    bs, be = iv.union(start[calls], start[calls] + dur[calls])  # when the host sat in a blocking call
    xfer = np.concatenate((roles.copies, roles.transfers))
    xfer_dev = t.tracks.device[t.slices.track[xfer]]
    xfer_end = roles.end[xfer]
    o = np.lexsort((xfer_end, xfer_dev))  # by device, then end: each device's ends one sorted block
    xfer_dev, xfer_end = xfer_dev[o], xfer_end[o]
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("device", "start", "end", "next", "cause", "conf")}
    bounds = np.flatnonzero(np.diff(devices)) + 1 if len(ops) else np.empty(0, np.int64)
    starts = np.concatenate(([0], bounds)) if len(ops) else np.empty(0, np.int64)
    for a, b in zip(starts.tolist(), np.concatenate((bounds, [len(ops)]))[: len(starts)].tolist(), strict=True):
        d = int(devices[a])
        us, ue = iv.union(s_ops[a:b], e_ops[a:b], presorted=True)
        if len(us) < 2:
            continue
        g0, g1 = ue[:-1], us[1:]
        keep = g1 - g0 >= min_gap_ns
        g0, g1 = g0[keep], g1[keep]
        k = a + np.searchsorted(s_ops[a:b], g1, "left")  # the op that ended each gap
        ends_d = xfer_end[np.searchsorted(xfer_dev, d, "left"):np.searchsorted(xfer_dev, d, "right")]
        late = visible[k] > g0
        blocked = _any_in(blocking_end, g0, g1)
        fed_pcie = pcie_in[k] > g0
        fed_net = net_in[k] > g0
        xfer_in_gap = _any_in(ends_d, g0, g1)
        held = _overlaps(bs, be, g0, g1)
        cause = np.where(late, np.where(blocked, "sync", "host"),
                         np.where(xfer_in_gap, "pcie", np.where(held, "sync", "unexplained")))
        conf = np.where(late, 0.9, np.where(xfer_in_gap, 0.8, np.where(held, 0.7, 0.5)))
        cause = np.where(fed_net, "communication", np.where(fed_pcie, "pcie", cause))
        conf = np.where(fed_pcie | fed_net, 0.95, conf)
        for key, v in (("device", np.full(len(g0), d)), ("start", g0), ("end", g1), ("next", ops[k]),
                       ("cause", cause), ("conf", conf)):
            cols[key].append(v)

    def cat(key: str, dtype: object) -> np.ndarray:
        return np.concatenate(cols[key]) if cols[key] else np.empty(0, dtype)

    return Gaps(cat("device", np.int64), cat("start", np.int64), cat("end", np.int64), cat("cause", "<U13"),
                cat("next", np.int64), cat("conf", float))
