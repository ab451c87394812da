"""Utilisation per pixel: exact coverage at any zoom, shares that sum to one, bandwidth peaks
that survive zooming out."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.model import TraceBuilder, TrackKind
from accelview.model.view.utilisation import STACK, Coverage, Utilisation


def test_coverage_integrates_overlapping_weighted_intervals():
    cov = Coverage(np.array([0, 5, 20]), np.array([10, 15, 30]), np.array([1.0, 2.0, 0.5]))
    edges = np.array([0, 5, 10, 15, 20, 25, 30, 40], np.float64)
    assert cov.per_bucket(edges).tolist() == [5.0, 15.0, 10.0, 0.0, 2.5, 2.5, 0.0]
    unit = Coverage(np.array([0, 5]), np.array([10, 15]))
    assert unit.per_bucket(np.array([2.0, 7.0, 12.0])).tolist() == [7.0, 8.0]


def _trace():
    b = TraceBuilder()
    dev = b.add_track("device 0", TrackKind.DEVICE, device=0)
    mx = b.add_track("matrix", TrackKind.EXEC_UNIT, parent=dev, device=0)
    pcie = b.add_track("PCIe H2D", TrackKind.PCIE, parent=dev, device=0)
    b.add_slice(mx, 0, 100, "gemm", "kernel", args={"flops": 1e9, "hbm_read_bytes": 10})  # compute-ish by roofline
    b.add_slice(mx, 200, 100, "copy_kernel", "kernel", args={"flops": 1.0, "bytes": 1e6})
    b.add_slice(pcie, 100, 50, "H2D", "pcie", args={"bytes": 5_000})  # while no op runs: transfer
    b.add_slice(pcie, 350, 1, "H2D", "pcie", args={"bytes": 1_000})  # a 1 ns spike: 1 TB/s
    b.metadata["device_spec"] = {"memory": {"hbm_gb_per_s": 1.0}, "compute": {"matrix_tflops": {"bf16": 1.0}}}
    return b.build(source="util")


def test_shares_per_bucket_sum_to_one_and_name_the_class():
    u = Utilisation(_trace())
    fr = u.frames(0, 50, 8)[0]  # buckets of 50 ns from the trace start
    total = sum(fr.shares[c] for c in STACK)
    assert np.allclose(total, 1.0)
    assert fr.shares["compute"][:2] == pytest.approx([1.0, 1.0])
    assert fr.shares["transfer"][2] == pytest.approx(1.0) and fr.shares["idle"][3] == pytest.approx(1.0)
    assert fr.shares["memory"][4:6] == pytest.approx([1.0, 1.0])
    assert fr.shares["transfer"][7] == pytest.approx(1 / 50) and fr.shares["idle"][7] == pytest.approx(49 / 50)


def test_bandwidth_spike_survives_zooming_out():
    u = Utilisation(_trace())
    wide = u.frames(0, 400 / 2, 2)[0]  # two pixels over the run
    h2d = next(s for s in wide.bandwidth if s.label == "PCIe H2D")
    assert h2d.unit == "B/s"  # no PCIe figures in the spec: absolute
    assert h2d.hi[1] >= 1_000 / (200 / 4) * 1e9 * 0.99  # the 1 ns spike, seen in its 50 ns sub-bucket
    assert h2d.hi[1] > 10 * np.mean(h2d.lo)
    hbm = next(s for s in wide.bandwidth if s.label == "HBM")
    assert hbm.unit == "%"  # against the spec's 1 GB/s peak
    assert hbm.hi[1] == pytest.approx(1e6 / 100e-9 / 1e9 * 100)


def test_a_trace_without_device_ops_has_no_devices():
    b = TraceBuilder()
    th = b.add_track("thread", TrackKind.HOST_THREAD)
    b.add_slice(th, 0, 10, "work")
    assert Utilisation(b.build(source="none")).devices == {}


def test_stack_pixels_fill_each_column_bottom_up_by_share():
    from accelview.model.view.utilisation import stack_pixels

    rng = np.random.default_rng(5)
    raw = rng.random((len(STACK), 50)) * (rng.random((len(STACK), 50)) > 0.3)
    raw[:, 0] = [0, 0, 0, 0, 0, 1]  # all idle
    raw[:, 1] = [0.5, 0, 0, 0, 0, 0.5]
    raw /= raw.sum(axis=0)
    shares = dict(zip(STACK, raw, strict=True))
    img = stack_pixels(shares, 40)
    cum = np.cumsum(raw, axis=0) * 40
    level = 40 - 0.5 - np.arange(40)[:, None]
    want = sum((level >= cum[k][None, :]).astype(np.uint8) for k in range(len(STACK) - 1))
    assert np.array_equal(img, want)
    assert (img[:, 0] == STACK.index("idle")).all()
    assert (img[20:, 1] == 0).all() and (img[:20, 1] == STACK.index("idle")).all()  # compute at the bottom half
