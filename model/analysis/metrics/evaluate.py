"""Derived metrics over a capture's sampled counters: as series (per sample) and over windows."""

from __future__ import annotations

import numpy as np
from accelview.model.trace import Trace

from ..ops import device_spec
from .counters import window_mean, window_sum
from .expr import ExprError
from .taxonomy import MetricRegistry, device_constants


def counter_tracks_for(trace: Trace, registry: MetricRegistry, base: str, device: int | None = None) -> list[int]:
    """Counter tracks that report base counter ``base`` (on ``device``, when given)."""
    counter = registry.counters[base]
    out = []
    for tr in trace.counter_tracks.track.tolist():
        if device is not None and int(trace.tracks.device[tr]) != device:
            continue
        if counter.matches(trace.track_name(tr)):
            out.append(int(tr))
    return out


def sampled_metrics(trace: Trace, registry: MetricRegistry) -> list[str]:
    """Metrics whose inputs are all sampled counters this capture has."""
    have = {b for b in registry.counters if counter_tracks_for(trace, registry, b)}
    out = []
    for name in registry.metrics:
        need = registry.inputs_of(name)
        if need and need <= have and all(registry.counters[n].scope != "op" for n in need):
            out.append(name)
    return out


def _combine(registry: MetricRegistry, base: str, values: list[np.ndarray]) -> np.ndarray:
    """Several tracks of one counter: amounts and queue depths add up; shares (%) average."""
    return np.mean(values, axis=0) if registry.counters[base].unit == "%" else np.sum(values, axis=0)


def metric_series(trace: Trace, registry: MetricRegistry, metric: str,
                  device: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(ts_ns, value) of a derived metric per sample of its counters on one device.

    Inputs are summed over the tracks that report them (e.g. several queues' depths); the
    samples of one device share their timestamps, as a real device's sampler gives them."""
    inputs: dict[str, np.ndarray] = {}
    ts = None
    for base in registry.inputs_of(metric):
        tracks = counter_tracks_for(trace, registry, base, device)
        if not tracks:
            raise ExprError(f"metric {metric!r} needs counter {base!r}, which device {device} does not report")
        series = [trace.counter_series(t) for t in tracks]
        t0 = series[0][0]
        if any(len(s[0]) != len(t0) or not np.array_equal(s[0], t0) for s in series) or (
                ts is not None and not np.array_equal(ts, t0)):
            raise ExprError(f"metric {metric!r}: the counters of device {device} are not sampled together")
        ts = t0
        inputs[base] = _combine(registry, base, [s[1] for s in series])
    if ts is None:
        raise ExprError(f"metric {metric!r} has no sampled inputs")
    period = np.diff(ts, prepend=ts[0] - (ts[1] - ts[0] if len(ts) > 1 else 1)) * 1e-9
    consts = device_constants(registry, device_spec(trace.metadata, device, trace.source))
    return ts, np.asarray(registry.evaluate(metric, inputs, period, consts), dtype=float)


def window_metric(trace: Trace, registry: MetricRegistry, metric: str, t0: int, t1: int, device: int = 0) -> float:
    """A derived metric over [t0, t1): delta counters summed, gauges time-averaged."""
    inputs = {}
    for base in registry.inputs_of(metric):
        tracks = counter_tracks_for(trace, registry, base, device)
        if not tracks:
            raise ExprError(f"metric {metric!r} needs counter {base!r}, which device {device} does not report")
        agg = window_sum if registry.counters[base].kind == "delta" else window_mean
        inputs[base] = float(_combine(registry, base, [np.float64(agg(trace, t, t0, t1)) for t in tracks]))
    consts = device_constants(registry, device_spec(trace.metadata, device, trace.source))
    return float(registry.evaluate(metric, inputs, (t1 - t0) * 1e-9, consts))
