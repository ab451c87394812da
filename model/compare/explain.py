"""The one line at the top of a diff: what changed most, by how much, and why.

The why is put together from what the two analyses say: a different device (or device spec), a
finding that appeared or went away, the op that carried most of the change and the arguments
(shapes, sizes) it was launched with, how fast copies moved, and the change of verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from accelview.model.analysis.metrics.counters import OP_COUNTER_NAMES, arg_values
from accelview.model.schema import TrackKind
from accelview.model.text.diff import relative
from accelview.model.text.values import format_bandwidth, format_duration

from .entries import Entry
from .families import family

if TYPE_CHECKING:
    from .diff import Diff

MAX_REASONS = 4
COPY_KINDS = (TrackKind.DMA_ENGINE, TrackKind.PCIE)
# What a finding that appeared says about the second run, in a few words.
APPEARED = {
    "pageable-transfer": "copies now come from pageable host memory",
    "small-transfers": "many small copies now",
    "pcie-saturation": "the PCIe link is now saturated",
    "launch-bound": "the device now waits for the host to launch ops",
    "low-hbm-efficiency": "ops now use HBM poorly",
    "host-sync": "the host now synchronises often",
    "transfer-not-overlapped": "copies no longer overlap compute",
    "redundant-transfer": "the same data is now copied repeatedly",
    "fusion-candidate": "chains of small ops that could be fused",
    "gpu-idle": "the GPU now idles more",
}
# Arguments that describe what an op did (counters and measured figures left out).
_SKIP_ARGS = OP_COUNTER_NAMES | {"bytes_read", "bytes_written", "engine", "descriptors", "tlps", "wire_bytes",
                                 "correlation", "External id", "Sequence number", "stream", "device", "queued",
                                 "context", "grid", "block", "registers per thread", "shared memory", "blocks per SM",
                                 "warps per SM", "est. achieved occupancy %", "Record function id", "Ev Idx",
                                 "kv_len"}


def signed_duration(ns: float) -> str:
    """"+1.90 ms" / "−350 µs"."""
    return ("+" if ns >= 0 else "−") + format_duration(abs(ns))


def describe(e: Entry) -> str:
    """"decode # +1.90 ms (+52%)"; new and missing things say so."""
    where = e.name if e.kind in ("phase", "finding", "critical-path") or e.group == "whole run" \
        else f"{e.name} in {e.group}"
    label = {"finding": "finding ", "critical-path": "critical path on ", "lane": "lane "}.get(e.kind, "")
    if e.status in ("new", "missing"):
        size = format_duration(e.b_ns if e.status == "new" else e.a_ns)
        return f"{label}{where} {e.status} ({size} per iteration)"
    rel = relative(e.a_ns, e.b_ns, decimals=0)
    return f"{label}{where} {signed_duration(e.change_ns)}" + (f" ({rel})" if rel else "")


def summary_line(d: Diff) -> str:
    """What changed most and why, in one line."""
    top = d.entries[0] if d.entries else None
    if top is None:
        return "nothing to compare: neither run has device work, phases or findings"
    if not top.significant:
        return (f"no significant change (largest: {describe(top)}, within run-to-run noise or below "
                f"{d.min_change:g}%)")
    reasons = _reasons(d, top)
    return describe(top) + (": " + "; ".join(reasons[:MAX_REASONS]) if reasons else "")


def _reasons(d: Diff, top: Entry) -> list[str]:
    out = []
    dev = device_change(d.a.trace.metadata, d.b.trace.metadata)
    if dev:
        out.append(dev)
    changed = [e for e in d.entries if e.kind == "finding" and e.status in ("new", "missing")]
    for e in changed[:1]:  # the finding with the most time
        out.append(APPEARED.get(e.name, f"new finding {e.name}") if e.status == "new" else f"no more {e.name}")
    if top.kind == "lane":
        out += _lane_change(d, top)
    path = _path_change(d, top)
    if path:
        out.append(path)
    op = top if top.kind == "op" else _top_op(d, top.group)
    if op is not None:
        speed = _copy_speed(d, op)
        if speed:
            out.append(speed)
        if op is not top:
            out.append(f"mostly {describe(op)}")
        shapes = _arg_change(d, op)
        if shapes:
            out.append(shapes)
    verdict = _verdict_change(d, top.group)
    if verdict:
        out.append(verdict)
    return list(dict.fromkeys(out))


def _lane_change(d: Diff, lane: Entry) -> list[str]:
    """How the work on a lane changed: slices per iteration, and the names that came or went."""
    out = []
    if lane.a_count and abs(lane.b_count - lane.a_count) >= 0.1 * lane.a_count:
        out.append(f"{lane.b_count:,.0f} slices per iteration on it (was {lane.a_count:,.0f})")
    names = []
    which = d.lane_names.index(lane.name)
    for run in (d.a, d.b):
        g = run.groups[lane.group]
        k = min(d.matched[lane.group].a_occurrence, g.n - 1)
        ids = run.lane_ids[(g.lane_occ == k) & (run.lane == which)]
        names.append({family(run.trace.strings[int(n)]) for n in np.unique(run.trace.slices.name[ids])})
    gone, new = sorted(names[0] - names[1]), sorted(names[1] - names[0])
    if gone:
        out.append("gone: " + _some(gone))
    if new:
        out.append("new: " + _some(new))
    return out


def _some(names: list[str]) -> str:
    return names[0] + (f" and {len(names) - 1} more" if len(names) > 1 else "")


def _path_change(d: Diff, top: Entry) -> str:
    """The step's critical path growing off the device (waiting, host calls, queues) by a tenth
    of the top change or more: device ops cannot explain that, so it is said."""
    rows = [e for e in d.entries if e.kind == "critical-path" and e.group == top.group and e.significant
            and e.name not in ("exec unit", "GPU stream") and e.change_ns >= 0.1 * abs(top.change_ns)]
    if not rows:
        return ""
    e = max(rows, key=lambda x: x.change_ns)
    return f"its critical path spends {format_duration(e.change_ns)} more on {e.name}"


def _top_op(d: Diff, group: str) -> Entry | None:
    ops = [e for e in d.entries if e.kind == "op" and e.group == group and e.significant]
    return max(ops, key=lambda e: abs(e.change_ns)) if ops else None


def _plain_args(trace: Any, sid: int) -> dict[str, Any]:
    return {k: v for k, v in trace.slice_args(sid).items() if k not in _SKIP_ARGS} if sid >= 0 else {}


def _arg_change(d: Diff, op: Entry) -> str:
    """The launch arguments that differ between the two runs' instances of an op."""
    a, b = _plain_args(d.a.trace, op.a_slice), _plain_args(d.b.trace, op.b_slice)
    changed = [f"{k} {_value(a[k])} → {_value(b[k])}" for k in a if k in b and a[k] != b[k]]
    return ", ".join(changed[:3])


def _value(v: Any) -> str:
    """An argument's value as read: floats to 4 significant digits (a trace's 36.80930232558139)."""
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _copy_speed(d: Diff, op: Entry) -> str:
    """For a copy: bytes moved per iteration of its group over the iteration's time, against run
    A's (what the step effectively got from the link, staging on the host included)."""
    speeds = []
    for run in (d.a, d.b):
        g = run.groups[op.group]
        fam = d.op_names.index(op.name)
        ids = run.work[(g.occ >= 0) & (run.op == fam)]
        ids = ids[np.isin(run.roles.kinds[ids], COPY_KINDS)]  # copies, not ops that name a size
        nbytes = arg_values(run.trace, "bytes", ids)
        ok = np.isfinite(nbytes)
        span = float(g.dur_ns.sum())
        if not ok.any() or span <= 0:
            return ""
        speeds.append(float(nbytes[ok].sum()) / span * 1e9)
    ratio = speeds[1] / speeds[0]
    if 0.9 <= ratio <= 1.1:
        return ""
    return (f"{op.name} copies at {100 * ratio:.0f}% of the earlier bandwidth "
            f"({format_bandwidth(speeds[0])} → {format_bandwidth(speeds[1])})")


def _verdict_change(d: Diff, group: str) -> str:
    mix = d.mix.get(group)
    if not mix:
        return ""
    va = max(mix, key=lambda c: mix[c][0])
    vb = max(mix, key=lambda c: mix[c][1])
    return f"now mostly {vb} (was {va})" if va != vb else ""


def _leaves(x: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(x, dict):
        out: dict[str, Any] = {}
        for k, v in x.items():
            out.update(_leaves(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: x}


def device_change(a: dict[str, Any], b: dict[str, Any]) -> str:
    """How the devices of two runs differ: the GPU's name (PyTorch traces), or the simulator's
    device spec (its preset name, else the fields that differ)."""
    pa, pb = a.get("deviceProperties"), b.get("deviceProperties")
    if isinstance(pa, list) and isinstance(pb, list) and pa and pb:
        na, nb = (p[0].get("name") if isinstance(p[0], dict) else None for p in (pa, pb))
        if na and nb and na != nb:
            return f"ran on {nb} (was {na})"
    sa, sb = a.get("device_spec"), b.get("device_spec")
    if isinstance(sa, dict) and isinstance(sb, dict):
        if sa.get("name") != sb.get("name"):
            return f"device {sb.get('name')} (was {sa.get('name')})"
        la, lb = _leaves(sa), _leaves(sb)
        diff = [f"{k} {la[k]:g} → {lb[k]:g}" if isinstance(la[k], float) and isinstance(lb[k], float)
                else f"{k} {la[k]} → {lb[k]}"
                for k in la if k in lb and la[k] != lb[k] and k != "source"
                and not k.startswith(("peak", "vector_peak"))]
        if diff:
            return "device spec " + ", ".join(diff[:2])
    return ""
