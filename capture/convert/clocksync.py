"""Host<->device clock sync samples and the offset/drift estimate made from them.

The collector asks the device for its timestamp counter now and then: the host notes T1,
the device reads its counter after a one-way delay, the host notes T4 when the answer is
back (NTP's two-way exchange without the device-side send time). The estimate fits
``device_ns = offset + host_ns x (1 + drift_ppm x 1e-6)`` (docs/FORMAT.md's clock model) by
least squares to the midpoints of the lower-delay half of the samples (the offset alone when
they span less than 5 ms: there a fitted drift is noisier than the ±30 ppm it could
correct); its error bound is
the RMS residual plus half the smallest round trip (the unknown path asymmetry).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sim.device.clock import DeviceClock

ONE_WAY_NS = 400.0  # PCIe MMIO read, one way
ONE_WAY_JITTER_NS = 150.0  # mean of the exponential extra delay each way
MIN_DRIFT_SPAN_NS = 5_000_000  # fit the drift only over samples spanning at least this


@dataclass(frozen=True)
class SyncSamples:
    """Two-way exchanges: host send time, device counter value, host receive time."""

    ref_send_ns: np.ndarray
    domain_ticks: np.ndarray
    ref_recv_ns: np.ndarray


@dataclass(frozen=True)
class ClockEstimate:
    """Alignment of one device clock to the host: ``ref = (device_ns - offset) / (1 + drift·1e-6)``."""

    offset_ns: float
    drift_ppm: float
    error_ns: float

    def to_ref(self, device_ns: np.ndarray) -> np.ndarray:
        """Device nanoseconds to reference-host nanoseconds (int64)."""
        return np.rint((np.asarray(device_ns, dtype=np.float64) - self.offset_ns)
                       / (1.0 + self.drift_ppm * 1e-6)).astype(np.int64)


def take_samples(clock: DeviceClock, t0_ns: int, t1_ns: int, rng: np.random.Generator,
                 period_ns: int = 1_000_000, min_samples: int = 16, max_samples: int = 2000,
                 jitter_ns: float = ONE_WAY_JITTER_NS) -> SyncSamples:
    """Sync samples spread over [t0, t1] of host time, ``jitter_ns`` the mean extra delay each way."""
    n = int(np.clip((t1_ns - t0_ns) // period_ns + 1, min_samples, max_samples))
    send = np.linspace(t0_ns, max(t1_ns, t0_ns + n), n).astype(np.int64)
    out_delay = ONE_WAY_NS + rng.exponential(jitter_ns, n)
    back_delay = ONE_WAY_NS + rng.exponential(jitter_ns, n)
    read_at = send + np.rint(out_delay).astype(np.int64)
    recv = read_at + np.rint(back_delay).astype(np.int64)
    return SyncSamples(send, clock.to_ticks(read_at), recv)


def true_alignment(clock: DeviceClock) -> tuple[float, float]:
    """The clock's true (offset_ns, drift_ppm) in the FORMAT.md model (before tick quantisation)."""
    return clock.offset_ns - clock.ref_host_ns * clock.drift_ppm * 1e-6, clock.drift_ppm


def _median(values: np.ndarray) -> float:
    """``np.median`` of an array without NaNs (NaN when empty), without the first-use import
    of ``numpy.ma`` that ``np.median`` costs (~20 ms in a fresh process)."""
    if not len(values):
        return float("nan")
    s = np.sort(values)
    return float((s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2)


def estimate(clock: DeviceClock, samples: SyncSamples) -> ClockEstimate:
    """Fit offset and drift to the lower-delay half of ``samples``."""
    rtt = (samples.ref_recv_ns - samples.ref_send_ns).astype(np.float64)
    keep = rtt <= _median(rtt)
    mid = (samples.ref_send_ns[keep] + samples.ref_recv_ns[keep]) / 2.0
    dev = clock.ticks_to_device_ns(samples.domain_ticks[keep]).astype(np.float64) + clock.tick_ns / 2
    m0, d0 = mid.mean(), dev.mean()
    x, y = mid - m0, dev - d0
    span = x.max() - x.min() if len(x) else 0.0
    # Over a short capture the sample noise makes a fitted drift worse than assuming none.
    slope = float((x * y).sum() / (x * x).sum()) if span > MIN_DRIFT_SPAN_NS else 1.0
    resid = y - slope * x
    offset = d0 - slope * m0
    err = float(np.sqrt((resid**2).mean())) + float(rtt[keep].min()) / 2 if len(x) else 0.0
    return ClockEstimate(offset, (slope - 1.0) * 1e6, err)
