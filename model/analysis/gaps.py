"""Device idle time: every interval in which a device ran no op, with its cause.

For the op that ended a gap, in this order:
- ``communication``: it waited on a network (collective) transfer that ended in the gap;
- ``pcie``: a transfer flowing into it ended in the gap, or it had been submitted before the
  gap began and a transfer of its device ended in the gap (a stream waiting on a copy's event);
- ``sync``: it was submitted late because the host sat in a call that waited for the device
  (a synchronize, a synchronous copy) and returned during the gap; or it had been submitted in
  time and waited on an event of other device work;
- ``host``: otherwise it was submitted late: the host was busy elsewhere (launching, Python).
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

    def total_by_cause(self) -> dict[str, int]:
        """Idle ns per cause."""
        dur = self.end_ns - self.start_ns
        return {str(c): int(dur[self.cause == c].sum()) for c in np.unique(self.cause)}


def _any_in(sorted_times: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per interval (lo, hi]: whether some time falls inside."""
    if len(sorted_times) == 0:
        return np.zeros(len(lo), bool)
    return np.searchsorted(sorted_times, hi, "right") > np.searchsorted(sorted_times, lo, "right")


def _feeding_ends(roles: Roles, kind: TrackKind) -> np.ndarray:
    """Per slice: the latest end of a slice on a ``kind`` track flowing into it (-1: none)."""
    t = roles.trace
    end = t.slices.start_ns + t.slices.dur_ns
    out = np.full(len(t.slices), -1, np.int64)
    src, dst = t.flows.src, t.flows.dst
    m = t.tracks.kind[t.slices.track[src]] == kind
    np.maximum.at(out, dst[m], end[src[m]])
    return out


def device_gaps(roles: Roles, min_gap_ns: int = 1) -> Gaps:
    """Idle intervals between ops of each device, with causes."""
    t = roles.trace
    ops = roles.device_ops
    start_all, end_all = t.slices.start_ns, t.slices.start_ns + t.slices.dur_ns
    dev_of_slice = t.tracks.device[t.slices.track]
    root, submitter = roles.chain
    visible = np.where(submitter >= 0, end_all[np.maximum(submitter, 0)],
                       np.where(root >= 0, end_all[np.maximum(root, 0)], -1))
    pcie_in = np.maximum(_feeding_ends(roles, TrackKind.PCIE), _feeding_ends(roles, TrackKind.DMA_ENGINE))
    net_in = _feeding_ends(roles, TrackKind.NETWORK_LINK)
    blocking_end = np.sort(end_all[roles.blocking_calls])
    xfer = np.flatnonzero(np.isin(t.tracks.kind[t.slices.track], [TrackKind.PCIE, TrackKind.DMA_ENGINE]))
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("device", "start", "end", "next", "cause", "conf")}
    ops = ops[roles.ops_order]  # by start
    devices = dev_of_slice[ops]
    for d in np.unique(devices):
        mine = ops[devices == d]
        us, ue = iv.union(start_all[mine], end_all[mine], presorted=True)
        if len(us) < 2:
            continue
        g0, g1 = ue[:-1], us[1:]
        keep = g1 - g0 >= min_gap_ns
        g0, g1 = g0[keep], g1[keep]
        by_start = mine
        nxt = by_start[np.searchsorted(start_all[by_start], g1, "left")]
        xfer_end = np.sort(end_all[xfer[dev_of_slice[xfer] == d]])
        late = visible[nxt] > g0
        blocked = _any_in(blocking_end, g0, g1)
        fed_pcie = pcie_in[nxt] > g0
        xfer_in_gap = _any_in(xfer_end, g0, g1)
        cause = np.where(late, np.where(blocked, "sync", "host"), np.where(xfer_in_gap, "pcie", "sync"))
        conf = np.where(late, 0.9, np.where(xfer_in_gap, 0.8, 0.7))
        cause = np.where(fed_pcie, "pcie", cause)
        cause = np.where(net_in[nxt] > g0, "communication", cause)
        conf = np.where(fed_pcie | (net_in[nxt] > g0), 0.95, conf)
        for k, v in (("device", np.full(len(g0), d)), ("start", g0), ("end", g1), ("next", nxt), ("cause", cause),
                     ("conf", conf)):
            cols[k].append(v)

    def cat(k: str, dtype: object) -> np.ndarray:
        return np.concatenate(cols[k]) if cols[k] else np.empty(0, dtype)

    return Gaps(cat("device", np.int64), cat("start", np.int64), cat("end", np.int64), cat("cause", "<U13"),
                cat("next", np.int64), cat("conf", float))
