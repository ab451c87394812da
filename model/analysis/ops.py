"""Bottleneck label of every device op: ``compute``, ``memory`` or ``latency``, from its
hardware counters and the device spec, with evidence and a confidence.

The rule follows Nsight Compute's speed-of-light reasoning and stall reasons: an op whose
active cycles were mostly latency stalls (too little work in flight), or partly so while neither
compute nor memory reached 60% of its roof, is latency-bound; otherwise the dominant reason the
unit was not issuing names the limiter (memory stalls against busy and pipeline cycles). The
speed-of-light ratios (FLOP/s against the dtype's peak, bytes/s against HBM peak, over the op's
busy time) are kept as evidence. Ops without counters are classed from the trace alone
(``op_classes.py``: roofline from FLOPs and bytes, kind, launch parameters, name).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import CaptureError
from .link import GIGATRANSFERS
from .metrics.counters import arg_columns, arg_strings
from .metrics.taxonomy import MetricRegistry, device_constants
from .op_classes import CLASSES, EVIDENCE, OpLabels, classify_without_counters, vocabulary
from .roles import Roles

LATENCY_STALL_SHARE = 0.5  # latency stalls this share of active cycles: latency-bound outright
LATENCY_STALL_MIN = 0.1  # ... or this share while both compute and memory are below SOL_LOW of peak
SOL_LOW = 0.6


def device_spec(trace_metadata: Mapping[str, Any], device: int = 0, source: str = "") -> Mapping[str, Any] | None:
    """The spec of one device from the capture's metadata (per-device list, or one for all).
    A PCIe link it describes wrongly is a ``CaptureError`` naming ``source`` (the file)."""
    devices = trace_metadata.get("devices")
    spec: Any = None
    if isinstance(devices, list) and 0 <= device < len(devices) and isinstance(devices[device], Mapping):
        spec = devices[device].get("spec", devices[device])
    if not isinstance(spec, Mapping):
        spec = trace_metadata.get("device_spec")
    if not isinstance(spec, Mapping):
        return None
    problem = _pcie_problem(spec.get("pcie", {}))
    if problem:
        raise CaptureError(source or "the capture", f"the spec of device {device} in its metadata has {problem}")
    return spec


def _pcie_problem(p: Any) -> str:
    """Why a spec's ``pcie`` block cannot be used ("" when it can, or lacks the link figures)."""
    if not isinstance(p, Mapping):
        return "a PCIe entry that is not an object"
    if not all(k in p for k in ("gen", "lanes", "mps")):
        return ""
    if isinstance(p["gen"], bool) or p["gen"] not in GIGATRANSFERS:
        return f"an unknown PCIe generation {p['gen']!r}"[:200]
    for k, v in p.items():
        if (k in ("lanes", "mps") or k.endswith("_factor")) and not (
                isinstance(v, int | float) and not isinstance(v, bool) and 0 < v < 1e6):
            return f"an invalid PCIe {k} {v!r}"[:200]
    return ""


def classify_ops(roles: Roles, registry: MetricRegistry | None = None) -> OpLabels:
    """Label every device op of the trace: from its hardware counters where it has them (the
    rule above), else from what the trace alone carries (``op_classes``)."""
    ops = roles.device_ops
    counted = ~np.isnan(arg_columns(roles.trace, ["active_cycles"], ops)["active_cycles"])
    if counted.all():
        return _classify(roles, ops, registry)
    if not counted.any():  # no counters at all (imported traces): no merge of two halves
        return classify_without_counters(roles, ops, registry)
    n = len(ops)
    code, evidence = np.empty(n, np.int8), np.empty(n, np.int8)
    conf, csol, msol, family = np.empty(n), np.empty(n), np.empty(n), np.empty(n, np.int16)
    for m, part in ((counted, _classify(roles, ops[counted], registry)),
                    (~counted, classify_without_counters(roles, ops[~counted], registry))):
        code[m], conf[m], csol[m], msol[m], evidence[m], family[m] = (
            part.code, part.confidence, part.compute_sol, part.memory_sol, part.evidence_code, part.family_code)
    return OpLabels(ops, code, conf, csol, msol, evidence, family)


def _classify(roles: Roles, ops: np.ndarray, registry: MetricRegistry | None) -> OpLabels:
    t = roles.trace
    registry = registry or MetricRegistry.load()
    n = len(ops)
    dur_s = np.maximum(t.slices.dur_ns[ops], 1) * 1e-9
    a = arg_columns(t, ("flops", "hbm_read_bytes", "hbm_write_bytes", "active_cycles", "stall_latency_cycles",
                        "dispatch_cycles", "elapsed_cycles", "busy_cycles", "stall_memory_cycles",
                        "stall_pipeline_cycles"), ops)
    flops = np.nan_to_num(a["flops"])
    hbm = np.nan_to_num(a["hbm_read_bytes"]) + np.nan_to_num(a["hbm_write_bytes"])
    active, stall_lat, elapsed = a["active_cycles"], a["stall_latency_cycles"], a["elapsed_cycles"]
    dispatch = np.nan_to_num(a["dispatch_cycles"])
    busy_s = dur_s.copy()
    has_cycles = ~np.isnan(active) & ~np.isnan(elapsed) & (elapsed > 0)
    busy_s[has_cycles] = dur_s[has_cycles] * (elapsed[has_cycles] - dispatch[has_cycles]) / elapsed[has_cycles]
    peak_f = np.full(n, np.nan)
    peak_m = np.full(n, np.nan)
    devices = t.tracks.device[t.slices.track[ops]]
    dtype = arg_strings(t, "dtype", ops)
    for d in np.unique(devices):
        c = device_constants(registry, device_spec(t.metadata, int(d), t.source))
        m = devices == d
        peak_f[m] = c.get("peak_flops_bf16", np.nan)
        peak_m[m] = c.get("hbm_peak", np.nan)
        for dt in ("fp8", "fp32"):  # ops of another dtype are measured against that dtype's peak
            sid = t.strings.lookup(dt)
            if sid >= 0 and f"peak_flops_{dt}" in c:
                peak_f[m & (dtype == sid)] = c[f"peak_flops_{dt}"]
    with np.errstate(divide="ignore", invalid="ignore"):
        csol = np.nan_to_num(flops / np.maximum(busy_s, 1e-12) / peak_f)
        msol = np.nan_to_num(hbm / np.maximum(busy_s, 1e-12) / peak_m)
        lat_share = np.where(active > 0, stall_lat / active, np.nan)
    # With stall counters, the dominant reason the unit was not busy names the limiter (like
    # Nsight's stall reasons): memory stalls against busy + pipeline cycles. Without them, the
    # resource nearer its roof.
    busy_c, stall_mem = np.nan_to_num(a["busy_cycles"]), a["stall_memory_cycles"]
    has_stalls = ~np.isnan(stall_mem) & (active > 0)
    mem_share = np.where(has_stalls, np.nan_to_num(stall_mem) / np.maximum(active, 1), msol)
    comp_share = np.where(has_stalls, (busy_c + np.nan_to_num(a["stall_pipeline_cycles"])) / np.maximum(active, 1),
                          csol)
    label = np.where(comp_share >= mem_share, CLASSES.index("compute"), CLASSES.index("memory")).astype(np.int8)
    conf = np.clip(0.5 + np.abs(comp_share - mem_share) / np.maximum(np.maximum(comp_share, mem_share), 1e-9) / 2,
                   0.5, 0.99)
    # Latency-bound: most active cycles waiting with too little in flight, or a real share of
    # them while neither compute nor memory reached 60% of its roof (speed-of-light rule).
    lat = np.nan_to_num(lat_share)
    latency = (lat >= LATENCY_STALL_SHARE) | ((lat >= LATENCY_STALL_MIN) & (np.maximum(csol, msol) < SOL_LOW))
    label[latency] = CLASSES.index("latency")
    conf[latency] = np.clip(0.5 + lat[latency], 0.5, 0.99)
    return OpLabels(ops, label, conf, csol, msol, np.full(n, EVIDENCE.index("counters"), np.int8),
                    np.full(n, len(vocabulary().families), np.int16))


# Palette indexes (resources' slice palette) of each class when colouring by bottleneck.
CLASS_COLOURS = {"compute": 2, "memory": 0, "latency": 5, "transfer": 4, "communication": 6, "wait": 8,
                 "unknown": 18}
OTHER_COLOUR = 19  # host calls, transfers: muted


def bottleneck_colour_table(n_strings: int, trace_names: np.ndarray, labels: OpLabels) -> np.ndarray:
    """A palette index per string id for colouring slices by bottleneck: each op name gets the
    colour of the label most of its ops have; every other name a muted one.

    ``trace_names`` is the ``name`` column of the slices table."""
    table = np.full(n_strings, OTHER_COLOUR, np.int16)
    names = trace_names[labels.slice]
    classes = list(CLASS_COLOURS)
    counts = np.zeros((n_strings, len(classes)), np.int64)
    for i, c in enumerate(classes):
        np.add.at(counts[:, i], names[labels.code == CLASSES.index(c)], 1)
    has = counts.sum(axis=1) > 0
    table[has] = np.array([CLASS_COLOURS[c] for c in classes], np.int16)[counts[has].argmax(axis=1)]
    return table
