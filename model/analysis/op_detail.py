"""What the Details panel and the CLI say about one device op: its bottleneck class and
confidence, and its achieved FLOP/s and HBM bandwidth with their share of the device's peak,
read from the op labels so every view states the same numbers."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..trace import Trace
from .op_classes import CLASSES, EVIDENCE, vocabulary
from .ops import OpLabels


@dataclass(frozen=True)
class OpDetail:
    """One op's label and speed of light. Rates are over the op's busy time (its duration less
    dispatch cycles), the same time the shares of peak use; NaN where the op has no counter."""

    label: str
    confidence: float
    flops_per_s: float
    bytes_per_s: float
    compute_sol: float
    memory_sol: float
    evidence: str = "counters"  # what decided the label (op_classes.EVIDENCE)
    family: str = ""  # the op family its name matched, without counters


def op_detail(trace: Trace, labels: OpLabels, sid: int) -> OpDetail | None:
    """The detail of slice ``sid`` if it is a labelled device op, else None."""
    where = np.flatnonzero(labels.slice == sid)
    if len(where) == 0:
        return None
    i = int(where[0])
    args = trace.slice_args(sid)

    def num(key: str) -> float:
        v = args.get(key)
        return float(v) if isinstance(v, (int, float, np.integer, np.floating)) else math.nan

    busy_s = max(int(trace.slices.dur_ns[sid]), 1) * 1e-9
    elapsed, dispatch = num("elapsed_cycles"), num("dispatch_cycles")
    if elapsed > 0:
        busy_s *= max(elapsed - (0.0 if math.isnan(dispatch) else dispatch), 1.0) / elapsed
    flops = num("flops")
    rd, wr = num("hbm_read_bytes"), num("hbm_write_bytes")
    hbm = math.nan if math.isnan(rd) and math.isnan(wr) else np.nansum([rd, wr])
    label = CLASSES[labels.code[i]]
    has_peaks = label != "unknown"
    return OpDetail(
        label=label,
        confidence=float(labels.confidence[i]),
        flops_per_s=flops / busy_s,
        bytes_per_s=float(hbm) / busy_s,
        compute_sol=float(labels.compute_sol[i]) if has_peaks and not math.isnan(flops) else math.nan,
        memory_sol=float(labels.memory_sol[i]) if has_peaks and not math.isnan(hbm) else math.nan,
        evidence=EVIDENCE[labels.evidence_code[i]],
        family=([f.name for f in vocabulary().families] + [""])[labels.family_code[i]],
    )
