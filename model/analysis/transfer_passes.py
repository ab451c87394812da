"""PCIe and memory-traffic passes over transfer slices: pageable copies, small copies,
link saturation, repeated uploads, copies that did not overlap compute."""

from __future__ import annotations

import numpy as np
from accelview.model.text.values import format_bandwidth, format_bytes, format_count, format_duration, format_percent

from . import intervals as iv
from .findings import Finding, severity
from .link import bulk_bandwidth
from .ops import device_spec
from .roles import Roles

SMALL_BYTES = 64 * 1024  # at Gen4/5 rates such a copy is shorter than the link's round trip
SATURATED = 0.9


def _link_peak(roles: Roles, ids: np.ndarray) -> np.ndarray:
    """Achievable bulk bytes/s of the link each transfer used, by its direction."""
    t = roles.trace
    out = np.full(len(ids), np.nan)
    devices = t.tracks.device[t.slices.track[ids]]
    direction = _directions(roles, ids)
    for d in np.unique(devices):
        spec = device_spec(t.metadata, int(d), t.source) or {}
        p = spec.get("pcie", {})
        if not all(k in p for k in ("gen", "lanes", "mps")):
            continue
        for dirn in ("h2d", "d2h"):
            m = (devices == d) & (direction == dirn)
            out[m] = bulk_bandwidth(p["gen"], p["lanes"], p["mps"], dirn) * p.get(f"{dirn}_factor", 1.0)
    return out


def _directions(roles: Roles, ids: np.ndarray) -> np.ndarray:
    """'h2d' or 'd2h' per transfer: its ``direction`` argument, else its lane's name (PCIe D2H)."""
    t = roles.trace
    k = t.strings.lookup("direction")
    if k >= 0:
        d2h, h2d = t.strings.lookup("d2h"), t.strings.lookup("h2d")
        a = t.tables["args"]
        rows = np.flatnonzero(a.key == k)
        by_set = np.full(int(a.set.max()) + 1, -1, np.int64)
        by_set[a.set[rows]] = a.str[rows]
        sets = t.slices.args[ids]
        v = np.where(sets >= 0, by_set[np.maximum(sets, 0)], -1)
        if (v >= 0).all():
            return np.where((v == d2h) & (d2h >= 0), "d2h", np.where(v == h2d, "h2d", "d2d")).astype("<U3")
    per_track = np.array(["d2h" if "d2h" in t.track_name(tr).lower() else "h2d" for tr in range(len(t.tracks))],
                         dtype="<U3")
    return per_track[t.slices.track[ids]] if len(ids) else np.empty(0, "<U3")


def transfer_findings(roles: Roles, span_ns: int) -> list[Finding]:
    """All transfer passes: per copy (DMA slices) and per link (PCIe slices)."""
    copies, wire = roles.copies, roles.transfers
    found = []
    if len(copies):
        found += [_pageable(roles, copies, span_ns), _small(roles, copies, span_ns),
                  _not_overlapped(roles, copies, span_ns), _redundant(roles, copies, span_ns)]
    if len(wire):
        found.append(_saturation(roles, wire, span_ns))
    return [f for f in found if f is not None]


def _ideal_ns(roles: Roles, ids: np.ndarray) -> np.ndarray:
    nbytes = np.nan_to_num(roles.arg("bytes", ids))
    return np.nan_to_num(nbytes / _link_peak(roles, ids) * 1e9)


def _pageable(roles: Roles, ids: np.ndarray, span: int) -> Finding | None:
    pinned = roles.pinned(ids)
    sel = ids[pinned == 0]
    if len(sel) == 0:
        return None
    t = roles.trace
    # What the program waited for is the host call that staged and issued each copy.
    root, _ = roles.chain
    calls = np.unique(root[sel][root[sel] >= 0])
    if np.isnan(_link_peak(roles, sel)).all():
        # No link figures (a profiler's trace): staging costs about half of each copy's time;
        # the host calls' waiting for the device is the sync-copy pass's.
        lost = int(t.slices.dur_ns[sel].sum() // 2)
    else:
        spent = int(t.slices.dur_ns[calls].sum()) if len(calls) else int(t.slices.dur_ns[sel].sum())
        lost = max(0, spent - int(_ideal_ns(roles, sel).sum()))
    nbytes = int(np.nan_to_num(roles.arg("bytes", sel)).sum())
    return Finding("pageable-transfer", severity(lost, span), int(t.slices.start_ns[sel].min()),
                   int((t.slices.start_ns[sel] + t.slices.dur_ns[sel]).max()), lost,
                   f"{format_count(len(sel))} transfers ({format_bytes(nbytes)}) used pageable host memory: staged "
                   f"through a bounce buffer at about half the pinned bandwidth, {format_duration(lost)} lost",
                   "allocate these host buffers pinned (page-locked) so the DMA engine reads them directly",
                   [int(x) for x in sel], evidence={"transfers": len(sel), "bytes": nbytes})


def _small(roles: Roles, ids: np.ndarray, span: int) -> Finding | None:
    nbytes = roles.arg("bytes", ids)
    sel = ids[nbytes <= SMALL_BYTES]
    if len(sel) < 16:
        return None
    t = roles.trace
    dur = t.slices.dur_ns[sel]
    lost = max(0, int(dur.sum() - _ideal_ns(roles, sel).sum()))
    mean_b = float(np.nanmean(roles.arg("bytes", sel)))
    achieved = np.nansum(roles.arg("bytes", sel)) / max(dur.sum(), 1)
    return Finding("small-transfers", severity(lost, span), int(t.slices.start_ns[sel].min()),
                   int((t.slices.start_ns[sel] + dur).max()), lost,
                   f"{format_count(len(sel))} transfers of {format_bytes(mean_b)} on average reached "
                   f"{format_bandwidth(achieved * 1e9)}: "
                   f"each pays the link's round trip and the API call, {format_duration(lost)} lost",
                   "batch small copies into one larger transfer (or keep the data on the device)",
                   [int(x) for x in sel], evidence={"transfers": len(sel), "mean_bytes": mean_b,
                                                     "achieved_gb_per_s": float(achieved)})


def _saturation(roles: Roles, ids: np.ndarray, span: int) -> Finding | None:
    """Windows in which a direction of the link ran at ≥ 90% of its achievable bandwidth while
    device work waited on transfers."""
    t = roles.trace
    nbytes = np.nan_to_num(roles.arg("bytes", ids))
    dur = np.maximum(t.slices.dur_ns[ids], 1)
    util = nbytes / dur * 1e9 / _link_peak(roles, ids)
    busy = np.nan_to_num(util) >= SATURATED
    sel = ids[busy]
    if len(sel) == 0:
        return None
    s = t.slices.start_ns[sel]
    us, ue = iv.union(s, s + t.slices.dur_ns[sel])
    sat_ns = iv.total(us, ue)
    work = iv.clip(*roles.device_busy, int(us[0]), int(ue[-1]))
    idle_during = sat_ns - iv.total(*iv.intersection((us, ue), work))
    if idle_during <= 0.05 * sat_ns:
        return None  # the device kept busy: a saturated link that costs nothing
    longest = int((ue - us).max())
    return Finding("pcie-saturation", severity(idle_during, span), int(us[0]), int(ue[-1]), int(idle_during),
                   f"the PCIe link ran at ≥ {format_percent(SATURATED, 0)} of its achievable bandwidth for "
                   f"{format_duration(sat_ns)} (longest window {format_duration(longest)}) while the device sat idle "
                   f"for {format_duration(idle_during)} of it",
                   "overlap uploads with compute (prefetch the next layer's weights on a copy stream), keep weights "
                   "resident, or compress/quantise what crosses the link",
                   [int(x) for x in sel], evidence={"saturated_ns": sat_ns, "windows": len(us)})


def _not_overlapped(roles: Roles, ids: np.ndarray, span: int) -> Finding | None:
    t = roles.trace
    t0, t1 = t.time_bounds()
    s = t.slices.start_ns[ids]
    xs, xe = iv.union(s, s + t.slices.dur_ns[ids])
    work = iv.clip(*roles.device_busy, t0, t1)
    if len(work[0]) == 0:
        return None
    # Only transfers between the first and last device op can be overlapped with compute.
    xs, xe = iv.clip(xs, xe, int(work[0][0]), int(work[1][-1]))
    alone = iv.total(xs, xe) - iv.total(*iv.intersection((xs, xe), work))
    if alone <= 0.02 * span:
        return None
    starts = t.slices.start_ns[ids]
    ends = starts + t.slices.dur_ns[ids]
    gi = iv.gaps(*work, t0, t1)
    k = np.searchsorted(gi[0], starts, "right") - 1
    inside = (k >= 0) & (ends <= gi[1][np.maximum(k, 0)])
    return Finding("transfer-not-overlapped", severity(alone, span), int(xs[0]) if len(xs) else t0,
                   int(xe[-1]) if len(xe) else t1, int(alone),
                   f"{format_duration(alone)} of transfers ran while no device op did: the copies and the compute "
                   "were serialised", "issue copies on a separate stream, asynchronously and from pinned memory, "
                   "so they overlap the previous step's compute", [int(x) for x in ids[inside]],
                   evidence={"serialised_ns": int(alone)})


def _redundant(roles: Roles, ids: np.ndarray, span: int) -> Finding | None:
    t = roles.trace
    buf = roles.arg("host_buffer", ids)
    nbytes = np.nan_to_num(roles.arg("bytes", ids))
    ok = ~np.isnan(buf) & (_directions(roles, ids) == "h2d")
    if ok.sum() < 2:
        return None
    key = buf[ok] * 1e12 + nbytes[ok]
    _, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    repeat = counts[inv] > 1
    first = np.zeros(len(key), bool)
    _, first_idx = np.unique(inv, return_index=True)
    first[first_idx] = True
    extra = ids[ok][repeat & ~first]
    if len(extra) == 0:
        return None
    lost = int(t.slices.dur_ns[extra].sum())
    return Finding("redundant-transfer", severity(lost, span), int(t.slices.start_ns[extra].min()),
                   int((t.slices.start_ns[extra] + t.slices.dur_ns[extra]).max()), lost,
                   f"{format_count(len(extra))} uploads repeated a host buffer already copied to the device "
                   f"({format_bytes(np.nansum(nbytes[np.isin(ids, extra)]))} again)",
                   "keep the data resident on the device and reuse it instead of uploading it again",
                   [int(x) for x in extra], evidence={"repeats": len(extra)})
