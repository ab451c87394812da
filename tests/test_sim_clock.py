"""The device clock: ticks from host time and back, offset and drift as configured."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.capture.sim.device.clock import DeviceClock

REF = 1_700_000_000_000_000_000  # an epoch-based host timestamp: conversions must stay exact here


def test_offset_and_frequency() -> None:
    clock = DeviceClock(freq_hz=100_000_000, offset_ns=5_000, ref_host_ns=REF)
    assert clock.tick_ns == 10.0
    assert clock.device_ns(REF) == REF + 5_000
    assert clock.to_ticks(REF) == (REF + 5_000) // 10
    assert clock.to_ticks(REF + 10) - clock.to_ticks(REF) == 1


def test_drift_accumulates_in_ppm() -> None:
    clock = DeviceClock(freq_hz=1_000_000_000, offset_ns=0, drift_ppm=20.0, ref_host_ns=REF)
    one_second = 1_000_000_000
    # after one host second the device has counted 20 us more
    assert clock.device_ns(REF + one_second) - (REF + one_second) == 20_000
    assert clock.to_ticks(REF + one_second) - clock.to_ticks(REF) == one_second + 20_000
    slow = DeviceClock(freq_hz=1_000_000_000, drift_ppm=-10.0, ref_host_ns=REF)
    assert slow.device_ns(REF - one_second) - (REF - one_second) == 10_000


@pytest.mark.parametrize("freq", [1_000_000_000, 1_980_000_000, 100_000_000, 31_250_000])
def test_round_trip_loses_less_than_a_tick(freq: int) -> None:
    rng = np.random.default_rng(freq)
    clock = DeviceClock.random(freq, rng, ref_host_ns=REF)
    assert abs(clock.drift_ppm) <= 30 and abs(clock.offset_ns) <= 5_000_000_000
    host = REF + np.sort(rng.integers(-10**12, 10**13, 20_000))
    ticks = clock.to_ticks(host)
    assert ticks.dtype == np.int64
    assert np.all(np.diff(ticks) >= 0)
    back = clock.to_host_ns(ticks)
    err = host - back
    assert err.min() >= -1 and err.max() < clock.tick_ns + 1
    # scalars agree with arrays
    assert clock.to_ticks(int(host[17])) == ticks[17]
    assert clock.to_host_ns(int(ticks[17])) == back[17]


def test_params_and_validation() -> None:
    clock = DeviceClock(freq_hz=500_000_000, offset_ns=-3, drift_ppm=7.5, ref_host_ns=REF)
    assert clock.params() == {"freq_hz": 500_000_000, "offset_ns": -3, "drift_ppm": 7.5, "ref_host_ns": REF}
    with pytest.raises(ValueError, match="freq_hz"):
        DeviceClock(freq_hz=0)
    with pytest.raises(ValueError, match="freq_hz"):
        DeviceClock(freq_hz=1.5e9)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="drift_ppm"):
        DeviceClock(freq_hz=1_000, drift_ppm=5_000)
