"""Device idle time: every interval in which a device ran no op, with its cause.

Causes, as a real device's trace shows them:
- ``pcie``: the next op waited for a transfer that was still on the link during the gap;
- ``sync``: the host sat in a synchronising call that returned during the gap, so the next
  submission came only after the device had drained;
- ``host``: otherwise the host submitted the next op late (its launch call began during the
  gap, or the submission path itself took the time);
- ``communication``: the next op waited on a collective transfer (network lane).
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
    cause: np.ndarray  # str objects
    next_op: np.ndarray
    confidence: np.ndarray

    def __len__(self) -> int:
        return len(self.start_ns)

    def total_by_cause(self) -> dict[str, int]:
        """Idle ns per cause."""
        dur = self.end_ns - self.start_ns
        return {str(c): int(dur[self.cause == c].sum()) for c in np.unique(self.cause)}


def _feeding_times(roles: Roles, ops: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per op: latest end of a transfer flowing into it, of a network transfer, and the start of
    the host call at the root of its submission chain (-1 where none)."""
    t = roles.trace
    n = len(t.slices)
    kinds = t.tracks.kind[t.slices.track]
    end = t.slices.start_ns + t.slices.dur_ns
    src, dst = t.flows.src, t.flows.dst
    xfer_end = np.full(n, -1, np.int64)
    net_end = np.full(n, -1, np.int64)
    is_x = kinds[src] == TrackKind.PCIE
    np.maximum.at(xfer_end, dst[is_x], end[src[is_x]])
    is_n = kinds[src] == TrackKind.NETWORK_LINK
    np.maximum.at(net_end, dst[is_n], end[src[is_n]])
    # Follow the submission chain (non-transfer flows) back to a runtime API call, a few hops.
    parent = np.full(n, -1, np.int64)
    chain = ~is_x & ~is_n
    parent[dst[chain]] = src[chain]
    cur = ops.copy()
    root = np.full(len(ops), -1, np.int64)
    for _ in range(4):
        ok = cur >= 0
        is_api = np.zeros(len(ops), bool)
        is_api[ok] = kinds[cur[ok]] == TrackKind.RUNTIME_API
        found = is_api & (root < 0)
        root[found] = cur[found]
        cur = np.where(ok & ~is_api, parent[np.maximum(cur, 0)], -1)
    root_start = np.where(root >= 0, t.slices.start_ns[np.maximum(root, 0)], -1)
    return xfer_end[ops], net_end[ops], root_start


def device_gaps(roles: Roles, min_gap_ns: int = 1) -> Gaps:
    """Idle intervals between ops of each device, with causes."""
    t = roles.trace
    ops = roles.device_ops
    starts, ends = t.slices.start_ns[ops], t.slices.start_ns[ops] + t.slices.dur_ns[ops]
    devices = t.tracks.device[t.slices.track[ops]]
    sync = roles.sync_calls
    sync_end = np.sort(t.slices.start_ns[sync] + t.slices.dur_ns[sync])
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("device", "start", "end", "next", "cause", "conf")}
    xfer_end_all, net_end_all, root_all = _feeding_times(roles, ops)
    for d in np.unique(devices):
        m = devices == d
        us, ue = iv.union(starts[m], ends[m])
        if len(us) < 2:
            continue
        g0, g1 = ue[:-1], us[1:]
        keep = g1 - g0 >= min_gap_ns
        g0, g1 = g0[keep], g1[keep]
        # the op that ended each gap: the earliest-starting op of this device at g1
        dev_ops = ops[m]
        o = np.argsort(starts[m], kind="stable")
        pos = np.searchsorted(starts[m][o], g1, "left")
        nxt_local = o[pos]
        xfer_end, net_end, root = xfer_end_all[m][nxt_local], net_end_all[m][nxt_local], root_all[m][nxt_local]
        k = np.searchsorted(sync_end, g0, "right")
        sync_in_gap = np.zeros(len(g0), bool)
        if len(sync_end):
            sync_in_gap = (k < len(sync_end)) & (sync_end[np.minimum(k, len(sync_end) - 1)] <= g1)
        cause = np.full(len(g0), "host", dtype=object)
        conf = np.full(len(g0), 0.6)
        host_late = root >= g0
        cause[host_late], conf[host_late] = "host", 0.9
        cause[sync_in_gap], conf[sync_in_gap] = "sync", 0.85
        waited_xfer = xfer_end > g0
        cause[waited_xfer], conf[waited_xfer] = "pcie", 0.9
        waited_net = net_end > g0
        cause[waited_net], conf[waited_net] = "communication", 0.9
        cols["device"].append(np.full(len(g0), d))
        cols["start"].append(g0)
        cols["end"].append(g1)
        cols["next"].append(dev_ops[nxt_local])
        cols["cause"].append(cause)
        cols["conf"].append(conf)

    def cat(k: str, dtype: object) -> np.ndarray:
        return np.concatenate(cols[k]) if cols[k] else np.empty(0, dtype)

    return Gaps(cat("device", np.int64), cat("start", np.int64), cat("end", np.int64), cat("cause", object),
                cat("next", np.int64), cat("conf", float))
