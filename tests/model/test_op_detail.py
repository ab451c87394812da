"""op_detail: one op's class, confidence and achieved rates agree with the op labels."""

from __future__ import annotations

import math

import numpy as np
from accelview.model.analysis.op_detail import op_detail
from accelview.model.analysis.ops import classify_ops
from accelview.model.analysis.roles import Roles
from accelview.model.loader import load_trace

DEMO = "resources/demo.h5"  # the shipped capture: ops with counters and a device spec


def test_op_detail_states_class_and_share_of_peak():
    t = load_trace(DEMO)
    labels = classify_ops(Roles(t))
    i = int(np.flatnonzero(labels.label != "unknown")[0])
    sid = int(labels.slice[i])
    d = op_detail(t, labels, sid)
    assert d is not None
    assert d.label == labels.label[i] and d.confidence == labels.confidence[i]
    assert d.flops_per_s > 0 and d.bytes_per_s > 0
    assert d.compute_sol == labels.compute_sol[i] and d.memory_sol == labels.memory_sol[i]
    args = t.slice_args(sid)
    assert d.flops_per_s >= args["flops"] / (t.slices.dur_ns[sid] * 1e-9)  # busy time <= duration
    assert 0 < d.compute_sol < 1 and 0 < d.memory_sol < 1
    assert not math.isnan(d.flops_per_s)


def test_op_detail_is_none_for_a_host_slice():
    t = load_trace(DEMO)
    labels = classify_ops(Roles(t))
    host = next(s for s in range(len(t.slices)) if s not in set(labels.slice.tolist()))
    assert op_detail(t, labels, host) is None
