"""Passes over device idle time and device ops: launch-bound, host-sync, poor HBM access,
chains of low-intensity ops that fusion would help."""

from __future__ import annotations

import numpy as np
from accelview.model.text.values import format_count, format_duration, format_percent

from .findings import Finding, severity
from .gaps import Gaps
from .metrics.counters import arg_strings
from .op_classes import EVIDENCE
from .ops import OpLabels
from .roles import Roles

LOW_BURST_EFFICIENCY = 0.8
LOW_ESTIMATED_BANDWIDTH = 0.5  # share of HBM peak a memory-bound op reached, from its shapes
SHORT_OP_NS = 20_000
FUSIBLE_OPS = ("elementwise", "rmsnorm", "layernorm", "softmax", "add", "mul", "silu", "gelu", "rope", "norm")
FUSIBLE_MAX_INTENSITY = 4.0  # FLOP/B


def launch_bound(roles: Roles, gaps: Gaps, span: int) -> Finding | None:
    """The device idled waiting for the host to submit many short ops."""
    host = gaps.cause == "host"
    lost = int((gaps.end_ns[host] - gaps.start_ns[host]).sum())
    t = roles.trace
    ops = roles.device_ops
    if lost <= 0.05 * span or len(ops) == 0:
        return None
    dur = t.slices.dur_ns[ops]
    short = float((dur < SHORT_OP_NS).mean())
    median = float(np.median(dur))
    return Finding("launch-bound", severity(lost, span), int(gaps.start_ns[host].min()), int(gaps.end_ns[host].max()),
                   lost, f"the device idled {format_duration(lost)} ({format_percent(lost / span, 0)} of the run) "
                   f"waiting for the host to submit work; {format_percent(short, 0)} of ops are shorter than "
                   f"{format_duration(SHORT_OP_NS)} (median {format_duration(median)})",
                   "submit fewer, larger ops: fuse small kernels, capture the step as a graph, or batch more work "
                   "per launch", [int(x) for x in gaps.next_op[host]], evidence={"idle_host_ns": lost,
                                                                                   "short_op_share": short})


def host_sync(roles: Roles, gaps: Gaps, span: int) -> Finding | None:
    """The host synchronised with the device and left it idle until its next submission."""
    calls = roles.sync_calls
    t = roles.trace
    ends = np.sort(t.slices.start_ns[calls] + t.slices.dur_ns[calls])
    after = np.searchsorted(ends, gaps.start_ns, "right")
    returned_in_gap = (after < len(ends)) & (ends[np.minimum(after, max(len(ends) - 1, 0))] <= gaps.end_ns) \
        if len(ends) else np.zeros(len(gaps), bool)
    m = (gaps.cause == "sync") & returned_in_gap
    lost = int((gaps.end_ns[m] - gaps.start_ns[m]).sum())
    if lost <= 0.02 * span:
        return None
    return Finding("host-sync", severity(lost, span), int(gaps.start_ns[m].min()), int(gaps.end_ns[m].max()), lost,
                   f"{format_count(len(calls))} host synchronisations drained the device and left it idle "
                   f"{format_duration(lost)} ({format_percent(lost / span, 0)} of the run) until the next submission",
                   "remove synchronisations inside the loop (read results asynchronously, use events between "
                   "streams, synchronise once per step)", [int(x) for x in calls],
                   evidence={"sync_calls": len(calls), "idle_sync_ns": lost})


def low_hbm_efficiency(roles: Roles, labels: OpLabels, span: int) -> Finding | None:
    """Memory-bound ops whose accesses wasted most of each HBM burst (strided or random). Without
    burst counters: memory-bound ops (by their roofline) that reached under half the HBM peak."""
    t = roles.trace
    eff = roles.arg("burst_efficiency", labels.slice)
    estimated = np.isnan(eff) & (labels.evidence_code == EVIDENCE.index("roofline"))
    eff = np.where(estimated, labels.memory_sol, eff)
    limit = np.where(estimated, LOW_ESTIMATED_BANDWIDTH, LOW_BURST_EFFICIENCY)
    bad = (np.nan_to_num(eff, nan=1.0) < limit) & labels.is_class("memory")
    sel = labels.slice[bad]
    if len(sel) == 0:
        return None
    dur = t.slices.dur_ns[sel]
    lost = int((dur * (1 - eff[bad])).sum())
    if lost <= 0.01 * span:
        return None
    names = sorted({t.strings[n] for n in t.slices.name[sel]})[:5]
    what = ("reached only {} of the HBM peak on average (bytes estimated from their shapes): strided or random "
            "access, or bytes the shapes do not show") if estimated[bad].all() else \
        "used only {} of each HBM burst on average: strided or random access"
    return Finding("low-hbm-efficiency", severity(lost, span), int(t.slices.start_ns[sel].min()),
                   int((t.slices.start_ns[sel] + dur).max()), lost,
                   f"{format_count(len(sel))} memory-bound ops ({', '.join(names)}) "
                   + what.format(format_percent(float(np.mean(eff[bad])), 0)) + f"; {format_duration(lost)} lost",
                   "make the access pattern sequential: change the layout (transpose once), tile so each burst is "
                   "used whole, or gather into a contiguous buffer first", [int(x) for x in sel],
                   evidence={"mean_burst_efficiency": float(np.mean(eff[bad])),
                             "estimated_from_shapes": bool(estimated[bad].all())})


def fusion_candidates(roles: Roles, labels: OpLabels, span: int) -> Finding | None:
    """Back-to-back low-intensity ops (elementwise, normalisation, softmax) on one unit: each
    writes an intermediate to HBM that the next one reads back."""
    t = roles.trace
    ids = labels.slice
    kind = arg_strings(t, "op", ids)
    fusible_ids = [i for i in (t.strings.lookup(k) for k in FUSIBLE_OPS) if i >= 0]
    if not fusible_ids:
        return None
    fusible = labels.is_class("memory") & np.isin(kind, fusible_ids)
    flops = np.nan_to_num(roles.arg("flops", ids))
    moved = np.nan_to_num(roles.arg("hbm_read_bytes", ids)) + np.nan_to_num(roles.arg("hbm_write_bytes", ids))
    fusible &= flops < FUSIBLE_MAX_INTENSITY * np.maximum(moved, 1)
    pair = np.zeros(len(ids), bool)
    pair[1:] = (t.slices.track[ids[1:]] == t.slices.track[ids[:-1]]) & fusible[1:] & fusible[:-1]
    sel = ids[pair]
    if len(sel) < 8:
        return None
    # Fusing a pair saves the intermediate's write and re-read: about a third of the smaller op.
    prev = ids[np.flatnonzero(pair) - 1]
    lost = int(np.minimum(t.slices.dur_ns[sel], t.slices.dur_ns[prev]).sum() // 3)
    if lost <= 0.02 * span:
        return None
    kinds = sorted({t.strings[k] for k in np.unique(np.concatenate((kind[pair], kind[np.flatnonzero(pair) - 1])))})
    return Finding("fusion-candidate", severity(lost, span), int(t.slices.start_ns[prev].min()),
                   int((t.slices.start_ns[sel] + t.slices.dur_ns[sel]).max()), lost,
                   f"{format_count(len(sel))} low-intensity ops ({', '.join(kinds)}) run right after another on the "
                   f"same unit, each re-reading the intermediate the previous one wrote; {format_duration(lost)} lost",
                   "fuse these elementwise/normalisation ops into one kernel (e.g. residual add + rmsnorm)",
                   [int(x) for x in np.concatenate((prev, sel))])
