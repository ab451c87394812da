"""PCIe link and copy model against REFERENCE.md's table and the issue's figures."""

from __future__ import annotations

import dataclasses

import pytest
from accelview.capture.sim.device.pcie import Link, dll_factor, encoded_bandwidth, tlp_efficiency
from accelview.capture.sim.device.specs import list_presets, load_spec
from accelview.capture.sim.device.transfer import dma_job, plan_transfer

GiB = 1 << 30


def _link(gen: int, lanes: int, mps: int) -> Link:
    return Link(gen, lanes, mps, 512, 1.0, 1.0, 800.0, 1024)


@pytest.mark.parametrize(
    ("gen", "mps", "write_gbs", "read_gbs"),
    [
        (4, 128, 23.5, 24.2), (4, 256, 26.0, 26.4), (4, 512, 27.4, 27.6),
        (5, 128, 47.0, 48.3), (5, 256, 52.0, 52.7), (5, 512, 54.7, 55.2),
        (3, 128, 11.8, None), (3, 256, 13.0, None),
    ],
)
def test_bulk_bandwidth_matches_the_reference_table(gen, mps, write_gbs, read_gbs) -> None:
    link = _link(gen, 16, mps)
    assert link.bulk_bandwidth("d2h") / 1e9 == pytest.approx(write_gbs, abs=0.1)
    if read_gbs is not None:
        assert link.bulk_bandwidth("h2d") / 1e9 == pytest.approx(read_gbs, abs=0.1)
    # x8 halves it
    assert _link(gen, 8, mps).bulk_bandwidth("d2h") == pytest.approx(link.bulk_bandwidth("d2h") / 2)


def test_encoding_and_tlp_layer_figures() -> None:
    assert encoded_bandwidth(4, 16) / 1e9 == pytest.approx(31.51, abs=0.01)
    assert encoded_bandwidth(5, 16) / 1e9 == pytest.approx(63.02, abs=0.01)
    assert encoded_bandwidth(4, 16) * dll_factor(256) / 1e9 == pytest.approx(28.43, abs=0.05)
    assert tlp_efficiency(256, 256, 24) == pytest.approx(256 / 280)
    assert tlp_efficiency(257, 256, 24) == pytest.approx(257 / (257 + 48))


@pytest.mark.parametrize("preset", list_presets())
@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_large_pinned_copy_reaches_bulk_bandwidth(preset: str, direction: str) -> None:
    spec = load_spec(preset)
    bulk = Link.from_spec(spec).bulk_bandwidth(direction)
    plan = plan_transfer(spec, GiB, direction, pinned=True)
    assert plan.effective_bytes_per_s == pytest.approx(bulk, rel=0.05)
    assert plan.effective_bytes_per_s <= bulk


def test_presets_land_near_the_issue_figures() -> None:
    gen4 = Link.from_spec(load_spec("gen4x16-64g"))
    assert gen4.model_bandwidth("d2h") / 1e9 == pytest.approx(26, rel=0.02)
    gen5 = Link.from_spec(load_spec("gen5x16-141g"))
    assert gen5.bulk_bandwidth("d2h") / 1e9 == pytest.approx(52, rel=0.02)
    x8 = Link.from_spec(load_spec("gen4x8-24g")).bulk_bandwidth("d2h")
    assert x8 == pytest.approx(gen4.model_bandwidth("d2h") / 2, rel=0.01)


def test_direction_asymmetry_factor_applies() -> None:
    spec = load_spec("gen4x16-64g")
    link = Link.from_spec(spec)
    assert spec.pcie.h2d_factor < 1
    assert link.bulk_bandwidth("h2d") == pytest.approx(link.model_bandwidth("h2d") * spec.pcie.h2d_factor)


def test_outstanding_reads_cap_h2d() -> None:
    spec = load_spec("gen5x16-141g")
    few = dataclasses.replace(spec, pcie=dataclasses.replace(spec.pcie, max_outstanding_reads=16))
    cap = 16 * 512 / 800e-9
    assert Link.from_spec(few).bulk_bandwidth("h2d") == pytest.approx(cap)
    assert plan_transfer(few, GiB, "h2d").effective_bytes_per_s == pytest.approx(cap, rel=0.01)
    assert Link.from_spec(few).bulk_bandwidth("d2h") == Link.from_spec(spec).bulk_bandwidth("d2h")


@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_pageable_is_slower_than_pinned_and_runs_at_the_memcpy_rate(direction: str) -> None:
    spec = load_spec("gen4x16-64g")
    pinned = plan_transfer(spec, 256 << 20, direction, pinned=True)
    pageable = plan_transfer(spec, 256 << 20, direction, pinned=False)
    ratio = pageable.effective_bytes_per_s / pinned.effective_bytes_per_s
    assert 0.3 < ratio < 0.6  # "roughly half of pinned"
    # double-buffered: about min(memcpy, DMA)
    assert pageable.effective_bytes_per_s == pytest.approx(spec.host.memcpy_gb_per_s * 1e9, rel=0.05)
    assert pageable.host_busy_ns == pytest.approx((256 << 20) / spec.host.memcpy_gb_per_s, rel=1e-6)
    assert len(pageable.chunks) == (256 << 20) // spec.host.staging_buffer_bytes
    assert pinned.host_busy_ns == 0


def test_single_staging_buffer_serialises_memcpy_and_dma() -> None:
    spec = load_spec("gen4x16-64g")
    one = dataclasses.replace(spec, host=dataclasses.replace(spec.host, staging_buffers=1))
    serial = plan_transfer(one, 256 << 20, "h2d", pinned=False).effective_bytes_per_s
    memcpy, dma = spec.host.memcpy_gb_per_s * 1e9, Link.from_spec(spec).bulk_bandwidth("h2d")
    assert serial == pytest.approx(1 / (1 / memcpy + 1 / dma), rel=0.05)
    assert serial < plan_transfer(spec, 256 << 20, "h2d", pinned=False).effective_bytes_per_s


@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_staging_buffers_are_reused_only_when_free(direction: str) -> None:
    spec = load_spec("gen5x16-141g")
    plan = plan_transfer(spec, 20 << 20, direction, pinned=False)
    n = spec.host.staging_buffers
    for prev, cur in zip(plan.chunks, plan.chunks[1:], strict=False):
        assert cur.memcpy_start_ns >= prev.memcpy_end_ns
        assert cur.dma_start_ns >= prev.dma_end_ns
    for old, new in zip(plan.chunks, plan.chunks[n:], strict=False):
        if direction == "h2d":
            assert new.memcpy_start_ns >= old.dma_end_ns
        else:
            assert new.dma_start_ns >= old.memcpy_end_ns
    for c in plan.chunks:
        if direction == "h2d":
            assert c.dma_start_ns >= c.memcpy_end_ns
        else:
            assert c.memcpy_start_ns >= c.dma_end_ns


def test_small_copy_is_latency_dominated() -> None:
    for preset in list_presets():
        spec = load_spec(preset)
        plan = plan_transfer(spec, 4096, "h2d", pinned=True)
        assert plan.latency_ns > 0.5 * plan.end_ns
        assert plan.effective_bytes_per_s < 0.2 * Link.from_spec(spec).bulk_bandwidth("h2d")
        assert 1000 < plan.end_ns < 5000  # ~1 us round trips, not bandwidth


def test_dma_splits_into_descriptors_and_counts_tlps() -> None:
    spec = load_spec("gen5x16-141g")
    job = dma_job(spec, 64 << 20, "h2d")
    assert job.descriptors == 64  # 1 MiB descriptors
    data_tlps = (64 << 20) // spec.pcie.mps
    desc_tlps = 64 * 16 // spec.pcie.mps
    assert job.data_tlps == data_tlps + desc_tlps
    assert job.data_wire_bytes == (64 << 20) + 64 * 16 + (data_tlps + desc_tlps) * 20
    # read requests for data, for the 64 x 16 B descriptors (one per MRRS), and the completion write
    assert job.reverse_tlps == (64 << 20) // spec.pcie.mrrs + 2 + 1
    write = dma_job(spec, 64 << 20, "d2h")
    assert write.data_wire_bytes - (64 << 20) >= data_tlps * 24
    assert dma_job(spec, 0, "d2h").data_ns == 0
    with pytest.raises(ValueError):
        plan_transfer(spec, 10, "sideways")  # type: ignore[arg-type]
