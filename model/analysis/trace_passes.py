"""Findings that need nothing but the trace (no hardware counters, no device spec): what Nsight
Systems' expert rules and HTA's launch statistics find in a profiler's trace, each with the
time it cost, its evidence slices and a fix.

- ``sync-copy``: synchronous copies and memsets (``cudaMemcpy``, a pageable ``cudaMemcpyAsync``)
  that held the host until the device was done;
- ``sync-in-loop``: synchronisation calls inside the training/inference steps;
- ``launch-outliers``: runtime calls over 50 µs and launches whose op started over 100 µs later
  on an idle device (HTA's runtime-event and launch-delay outliers);
- ``step-starvation``: the device idle across step boundaries, waiting for the next step's input;
- ``low-comm-overlap``: communication kernels that ran while no computation did;
- ``stream-serialisation``: copies or collectives on the same stream as the compute they could
  have overlapped;
- ``cpu-bound``: long stretches of device idle while the host ran CPU-side ops (not launches);
- ``gpu-idle``: a device idle over 30% of its span with no finding naming the main cause.
"""

from __future__ import annotations

import re

import numpy as np
from accelview.model.schema import TrackKind
from accelview.model.text.values import format_count, format_duration, format_percent

from . import intervals as iv
from .findings import Finding, severity
from .gaps import Gaps
from .ops import OpLabels
from .roles import Roles
from .stats import slices_of_kinds

SYNC_COPY_NAME = re.compile(r"^(cuda|hip)(memcpy|memset)(?!.*async)|memcpywithstream|^(cuda|hip)memcpy[23]?d?$",
                            re.IGNORECASE)
COPY_CALL_NAME = re.compile(r"^(cuda|hip)(memcpy|memset)", re.IGNORECASE)
STEP_NAME = re.compile(r"^ProfilerStep#\d+$|^(train|training|inference)?[ _]?step[ _#]?\d*$", re.IGNORECASE)
RUNTIME_OUTLIER_NS = 50_000  # HTA's runtime-event outliers
LAUNCH_DELAY_OUTLIER_NS = 100_000  # HTA's launch-delay outliers
LONG_HOST_GAP_NS = 100_000  # a host-caused gap this long is CPU work, not launch overhead
IDLE_SHARE = 0.30
MIN_SHARE = 0.02  # a finding below this share of the run is not reported
# Which findings name each idle cause (for the gpu-idle umbrella).
EXPLAINS = {"host": ("cpu-bound", "launch-bound", "step-starvation", "launch-outliers"),
            "sync": ("host-sync", "sync-copy", "sync-in-loop", "pageable-transfer"),
            "pcie": ("pcie-saturation", "transfer-not-overlapped", "pageable-transfer", "small-transfers"),
            "communication": ("low-comm-overlap",), "unexplained": ()}
CAUSE_WORDS = {"host": "waiting for the host to launch work", "sync": "drained by synchronisation",
               "pcie": "waiting for data transfers", "communication": "waiting for communication",
               "unexplained": "waiting on something the trace does not show (another process, a peer, "
                              "events the profiler dropped)"}


def _steps(roles: Roles) -> np.ndarray:
    """Step annotations on host threads (``ProfilerStep#N``, ``step 3``), by start."""
    t = roles.trace
    ids = slices_of_kinds(t, (TrackKind.HOST_THREAD,))
    ids = roles.named(ids, STEP_NAME)
    return ids[np.argsort(t.slices.start_ns[ids], kind="stable")]


def _inside(t_start: np.ndarray, windows: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Per time: whether it falls inside one of the sorted disjoint windows."""
    ws, we = windows
    if len(ws) == 0:
        return np.zeros(len(t_start), bool)
    k = np.searchsorted(ws, t_start, "right") - 1
    return (k >= 0) & (t_start < we[np.maximum(k, 0)])


def sync_copies(roles: Roles, span: int) -> Finding | None:
    """Copies and memsets whose host call waited for the device: a synchronous API, or an
    asynchronous one that was not (pageable memory)."""
    t = roles.trace
    calls = roles.api_calls
    sync_api = roles.named(calls, SYNC_COPY_NAME)
    waited = np.intersect1d(roles.named(calls, COPY_CALL_NAME), roles.blocking_calls)
    sel = np.union1d(sync_api, waited)
    if len(sel) == 0:
        return None
    lost = int(t.slices.dur_ns[sel].sum())
    if lost <= MIN_SHARE * span:
        return None
    names = sorted({t.strings[n] for n in t.slices.name[sel]})[:4]
    return Finding("sync-copy", severity(lost, span), int(t.slices.start_ns[sel].min()),
                   int((t.slices.start_ns[sel] + t.slices.dur_ns[sel]).max()), lost,
                   f"{format_count(len(sel))} copies and memsets ({', '.join(names)}) held the host "
                   f"{format_duration(lost)} ({format_percent(lost / span, 0)} of the run) until the device was done",
                   "use asynchronous copies from pinned memory (tensor.to(device, non_blocking=True) with "
                   "pin_memory=True), and avoid .item(), .cpu() and printing device tensors inside the step",
                   [int(x) for x in sel], evidence={"calls": len(sel), "host_blocked_ns": lost})


def sync_in_loop(roles: Roles, span: int) -> Finding | None:
    """Synchronisation calls inside the steps: each drains the device queue once per step."""
    t = roles.trace
    steps = _steps(roles)
    if len(steps) < 2:
        return None
    s = t.slices.start_ns[steps]
    windows = iv.union(s, s + t.slices.dur_ns[steps])
    calls = roles.sync_calls
    sel = calls[_inside(t.slices.start_ns[calls], windows)]
    if len(sel) < len(steps):
        return None
    lost = int(t.slices.dur_ns[sel].sum())
    if lost <= MIN_SHARE * span:
        return None
    return Finding("sync-in-loop", severity(lost, span), int(t.slices.start_ns[sel].min()),
                   int((t.slices.start_ns[sel] + t.slices.dur_ns[sel]).max()), lost,
                   f"{format_count(len(sel))} synchronisation calls in {format_count(len(steps))} steps "
                   f"({len(sel) / len(steps):.1f} a step) held the host {format_duration(lost)}",
                   "synchronise at most once per step: record events and wait on them from other streams "
                   "(cudaStreamWaitEvent), and read results asynchronously", [int(x) for x in sel],
                   evidence={"calls": len(sel), "steps": len(steps), "host_blocked_ns": lost})


def launch_outliers(roles: Roles, gaps: Gaps, span: int) -> Finding | None:
    """HTA's outliers: runtime calls over 50 µs, and launches whose op started over 100 µs after
    the call with the device idle before it (the delay was not a queue of earlier work) and no
    sync, copy or collective to explain it. Time lost: the device's idle time during the slow
    calls beyond 50 µs, and before each late op after its launch."""
    t = roles.trace
    calls = roles.api_calls
    slow = calls[(t.slices.dur_ns[calls] > RUNTIME_OUTLIER_NS) & ~np.isin(calls, roles.blocking_calls)]
    root, _ = roles.chain
    launch = root[gaps.next_op]
    has = launch >= 0
    issued = np.where(has, t.slices.start_ns[np.maximum(launch, 0)] + t.slices.dur_ns[np.maximum(launch, 0)], 0)
    delay = t.slices.start_ns[gaps.next_op] - t.slices.start_ns[np.maximum(launch, 0)]
    # Gaps with a cause of their own (a sync, a copy, a collective) are those findings' time.
    own = np.isin(gaps.cause, ["host", "unexplained"])
    late = has & (delay > LAUNCH_DELAY_OUTLIER_NS) & (issued < gaps.end_ns) & own
    waited = np.clip(gaps.end_ns - np.maximum(gaps.start_ns, issued), 0, None)
    # A slow call costs the run only while the device sat idle.
    excess = iv.union(t.slices.start_ns[slow] + RUNTIME_OUTLIER_NS, t.slices.start_ns[slow] + t.slices.dur_ns[slow])
    idle = iv.union(gaps.start_ns[own], gaps.end_ns[own])
    lost = iv.total(*iv.intersection(excess, idle)) + int(waited[late].sum())
    if lost <= MIN_SHARE * span:
        return None
    ev = np.concatenate((slow, gaps.next_op[late]))
    return Finding("launch-outliers", severity(lost, span), int(t.slices.start_ns[ev].min()),
                   int((t.slices.start_ns[ev] + t.slices.dur_ns[ev]).max()), lost,
                   _outlier_text(len(slow), int(late.sum()), lost),
                   "look at what the slow calls do (allocator growth, lazy module loading, JIT compilation, CPU "
                   "contention) and what the late ops waited for (events, other streams): warm up before "
                   "profiling, cache allocations, pin the process to free cores",
                   [int(x) for x in ev], evidence={"runtime_outliers": len(slow),
                                                   "launch_delay_outliers": int(late.sum())})


def _outlier_text(slow: int, late: int, lost: int) -> str:
    """What launch_outliers found, naming only what there is (never "0 runtime calls")."""
    parts = []
    if slow:
        parts.append(f"{format_count(slow)} runtime calls took over {format_duration(RUNTIME_OUTLIER_NS)}")
    if late:
        parts.append(f"{format_count(late)} ops started over {format_duration(LAUNCH_DELAY_OUTLIER_NS)} after their "
                     "launch on an idle device")
    return f"{' and '.join(parts)}; {format_duration(lost)} lost to {'them' if slow + late > 1 else 'it'}"


def step_starvation(roles: Roles, gaps: Gaps, span: int) -> Finding | None:
    """The device idle across step boundaries: the next step's work came late."""
    t = roles.trace
    steps = _steps(roles)
    if len(steps) < 2:
        return None
    bounds = t.slices.start_ns[steps[1:]]
    k = np.searchsorted(gaps.start_ns, bounds, "right") - 1  # the gap (by start) around each boundary
    ok = (k >= 0) & (gaps.end_ns[np.maximum(k, 0)] > bounds)
    k = np.unique(k[ok])
    k = k[np.isin(gaps.cause[k], ["host", "pcie", "unexplained"])]
    lost = int((gaps.end_ns[k] - gaps.start_ns[k]).sum())
    if lost <= MIN_SHARE * span:
        return None
    return Finding("step-starvation", severity(lost, span), int(gaps.start_ns[k].min()), int(gaps.end_ns[k].max()),
                   lost, f"the device idled {format_duration(lost)} across {format_count(len(k))} of "
                   f"{format_count(len(steps) - 1)} step boundaries, waiting for the next step's work",
                   "prepare the next batch while this step runs: DataLoader workers with pin_memory and "
                   "prefetching, copies with non_blocking=True, and no host work between steps",
                   [int(x) for x in gaps.next_op[k]], evidence={"boundaries": len(k)})


def low_comm_overlap(roles: Roles, labels: OpLabels, span: int) -> Finding | None:
    """Communication that ran while no computation did (HTA's communication/computation overlap)."""
    t = roles.trace
    comm = labels.slice[labels.is_class("communication")]
    work = labels.slice[labels.is_class("compute", "memory", "latency", "unknown")]
    if len(comm) == 0:
        return None
    cs, ws = t.slices.start_ns[comm], t.slices.start_ns[work]
    c = iv.union(cs, cs + t.slices.dur_ns[comm])
    w = iv.union(ws, ws + t.slices.dur_ns[work])
    total = iv.total(*c)
    alone = total - iv.total(*iv.intersection(c, w))
    if total == 0 or alone <= MIN_SHARE * span or alone / total < 0.5:
        return None
    return Finding("low-comm-overlap", severity(alone, span), int(c[0][0]), int(c[1][-1]), int(alone),
                   f"{format_percent(alone / total, 0)} of {format_duration(total)} of communication ran while no "
                   "computation did", "overlap collectives with computation: bucket gradients so all-reduce starts "
                   "during backward (DDP bucket_cap_mb, FSDP prefetch), run collectives on their own stream",
                   [int(x) for x in comm], evidence={"communication_ns": int(total), "exposed_ns": int(alone)})


def stream_serialisation(roles: Roles, labels: OpLabels, span: int) -> Finding | None:
    """Copies and collectives queued on the same stream as computation: they cannot overlap it."""
    t = roles.trace
    ids = labels.slice
    track = t.slices.track[ids]
    moving = labels.is_class("transfer", "communication")
    computing = labels.is_class("compute", "memory", "latency")
    shared = np.intersect1d(np.unique(track[moving]), np.unique(track[computing]))
    sel = ids[moving & np.isin(track, shared)]
    lost = int(t.slices.dur_ns[sel].sum())
    if len(sel) == 0 or lost <= MIN_SHARE * span:
        return None
    lanes = ", ".join(t.track_name(int(x)) for x in shared[:4])
    return Finding("stream-serialisation", severity(lost, span), int(t.slices.start_ns[sel].min()),
                   int((t.slices.start_ns[sel] + t.slices.dur_ns[sel]).max()), lost,
                   f"{format_count(len(sel))} copies and collectives ({format_duration(lost)}) ran on the same "
                   f"stream as computation ({lanes}), so none of them could overlap it",
                   "issue copies and collectives on their own streams and order them with events",
                   [int(x) for x in sel], evidence={"streams": [int(x) for x in shared]})


def cpu_bound(roles: Roles, gaps: Gaps, span: int) -> Finding | None:
    """Long host-caused idle: the host was running CPU-side ops, not launching."""
    t = roles.trace
    long = (gaps.cause == "host") & (gaps.end_ns - gaps.start_ns >= LONG_HOST_GAP_NS)
    lost = int((gaps.end_ns[long] - gaps.start_ns[long]).sum())
    if lost <= MIN_SHARE * span:
        return None
    # The CPU ops most present in those gaps: top-level slices of host threads, by overlap.
    host = slices_of_kinds(t, (TrackKind.HOST_THREAD,))
    host = host[(t.slices.depth[host] <= 2) & ~np.isin(host, _steps(roles))]
    gs, ge = gaps.start_ns[long], gaps.end_ns[long]
    a, b = t.slices.start_ns[host], t.slices.start_ns[host] + t.slices.dur_ns[host]
    k = np.searchsorted(gs, b, "left") - 1
    ok = k >= 0
    k = np.maximum(k, 0)
    overlap = np.where(ok, np.clip(np.minimum(b, ge[k]) - np.maximum(a, gs[k]), 0, None), 0)
    by_name: dict[str, int] = {}
    for n, o in zip(t.slices.name[host][overlap > 0].tolist(), overlap[overlap > 0].tolist(), strict=True):
        by_name[t.strings[n]] = by_name.get(t.strings[n], 0) + int(o)
    top = sorted(by_name.items(), key=lambda kv: -kv[1])[:3]
    what = ", ".join(f"{n[:40]} {format_duration(v)}" for n, v in top) or "no CPU op the trace shows"
    return Finding("cpu-bound", severity(lost, span), int(gs.min()), int(ge.max()), lost,
                   f"the device idled {format_duration(lost)} in {format_count(int(long.sum()))} stretches of "
                   f"≥ {format_duration(LONG_HOST_GAP_NS)} while the host ran CPU-side work ({what})",
                   "move that work off the step's critical path: data loading in DataLoader workers, metrics and "
                   "logging less often or asynchronously, CPU ops rewritten as device ops",
                   [int(x) for x in gaps.next_op[long]], evidence={"stretches": int(long.sum()),
                                                                    "top_cpu_ops": dict(top)})


def device_idle(roles: Roles, gaps: Gaps) -> tuple[int, int, dict[str, int]]:
    """The devices' span (first op to last), their idle time in it, and idle ns per cause."""
    busy_s, busy_e = roles.device_busy
    if len(busy_s) == 0:
        return 0, 0, {}
    dspan = int(busy_e[-1] - busy_s[0])
    by_cause: dict[str, int] = {}
    for c in np.unique(gaps.cause).tolist():
        m = gaps.cause == c
        by_cause[c] = int((gaps.end_ns[m] - gaps.start_ns[m]).sum())
    return dspan, int(sum(by_cause.values())), by_cause


def gpu_idle(roles: Roles, gaps: Gaps, found: list[Finding], span: int) -> Finding | None:
    """A device idle over 30% of its span: the costliest finding (``found`` is ranked) of the
    main cause says so; when none is of that cause, a finding of its own names it."""
    dspan, idle, by_cause = device_idle(roles, gaps)
    n_devices = len(np.unique(gaps.device)) or 1
    if dspan <= 0 or idle / (dspan * n_devices) < IDLE_SHARE:
        return None
    main = max(by_cause, key=by_cause.__getitem__)
    share = idle / (dspan * n_devices)
    shares = ", ".join(f"{c} {format_percent(v / idle, 0)}" for c, v in sorted(by_cause.items(), key=lambda kv: -kv[1]))
    note = (f"the device idled {format_percent(share, 0)} of its span, mostly {CAUSE_WORDS[main]} "
            f"({shares})")
    for f in found:  # ranked: the costliest finding that names the cause says so
        if f.kind in EXPLAINS[main]:
            f.summary += f"; {note}"
            f.evidence["idle_share"], f.evidence["idle_main_cause"] = share, main
            return None
    m = gaps.cause == main
    fixes = {"host": "launch less from Python per step (fuse ops, CUDA graphs, torch.compile) and move CPU "
                     "work off the step", "sync": "remove synchronisations from the step",
             "pcie": "overlap transfers with compute from pinned memory", "communication": "overlap "
             "collectives with computation", "unexplained": "profile the processes and peers this one waits on "
             "(other ranks, data loaders), or trace with fewer dropped events"}
    return Finding("gpu-idle", severity(by_cause[main], span), int(gaps.start_ns[m].min()), int(gaps.end_ns[m].max()),
                   by_cause[main], note, fixes[main], [int(x) for x in gaps.next_op[m]],
                   evidence={"idle_share": share, "idle_by_cause_ns": by_cause, "main_cause": main})


def trace_findings(roles: Roles, labels: OpLabels, gaps: Gaps, span: int) -> list[Finding]:
    """All passes of this module but ``gpu_idle`` (which reads the others' findings)."""
    out = [sync_copies(roles, span), sync_in_loop(roles, span), launch_outliers(roles, gaps, span),
           step_starvation(roles, gaps, span), low_comm_overlap(roles, labels, span),
           stream_serialisation(roles, labels, span), cpu_bound(roles, gaps, span)]
    return [f for f in out if f is not None]
