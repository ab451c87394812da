"""Ranks of a multi-rank trace aligned by what their NCCL kernels prove: a known offset recovered
inside its proven interval whatever NCCL called its kernels, sampled ranks that start at
different kernels, and the real two sampled ranks of a 128-rank run."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.model import TraceBuilder, TrackKind
from accelview.model.align.ranks import align_ranks, nccl_kind
from kineto_traces import imported, needs_traces

MS = 1_000_000


@pytest.mark.parametrize(("name", "kind"), [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "AllReduce"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "AllGather"),
    ("ncclAllReduceRingLLKernel_sum_f32(ncclColl)", "AllReduce"),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "SendRecv"),
    ("nccl:all_reduce", None),
    ("volta_sgemm_128x64_nn", None),
])
def test_every_nccl_kernel_name_is_matched(name: str, kind: str | None) -> None:
    assert nccl_kind(name) == kind


def _two_ranks(offset_ns: int, names: tuple[str, str], skip: int, seed: int = 0) -> TraceBuilder:
    """Rank 1's clock reads ``offset_ns`` more than rank 0's; each rank's collectives start at
    its own time, end together; rank 1's trace starts ``skip`` collectives later."""
    rng = np.random.default_rng(seed)
    b = TraceBuilder()
    starts = np.cumsum(rng.uniform(2, 6, 40)) * MS
    arrive = starts[:, None] + rng.exponential(300_000, (40, 2))
    end = arrive.max(axis=1) + 200_000 + rng.exponential(20_000, (40, 2)).T
    for rank in (0, 1):
        top = b.add_track(f"rank {rank}", TrackKind.PROCESS)
        gpu = b.add_track("GPU 0", TrackKind.DEVICE, top)
        for s, name in enumerate(names):
            stream = b.add_track(f"stream {7 + s}", TrackKind.GPU_STREAM, gpu)
            rows = range(skip if rank else 0, 40)
            for i in rows:
                if i % 2 == s:
                    t0 = int(arrive[i, rank]) + (offset_ns if rank else 0)
                    b.add_slice(stream, t0, int(end[rank, i] - arrive[i, rank]), name)
    return b


@pytest.mark.parametrize("names", [("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_AllGather_RING_LL"),
                                   ("ncclKernel_AllReduce_RING_LL_Sum_float", "ncclKernel_SendRecv_RING_SIMPLE")])
@pytest.mark.parametrize("skip", [0, 3])
def test_a_known_offset_is_recovered_within_its_proven_interval(names: tuple[str, str], skip: int) -> None:
    offset = 3_217_000
    (a,) = align_ranks(_two_ranks(offset, names, skip).build())
    assert (a.rank, a.reference) == (1, 0) and a.kernels >= 40 - skip - 2
    assert a.low_ns <= offset <= a.high_ns
    assert abs(a.offset_ns - offset) < 50_000  # the ends agree to the ends' jitter
    assert a.uncertainty_ns < 300_000  # bounded by how long the kernels overlap


def test_a_single_rank_has_nothing_to_align() -> None:
    b = TraceBuilder()
    top = b.add_track("rank 0", TrackKind.PROCESS)
    b.add_slice(b.add_track("stream 7", TrackKind.GPU_STREAM, top), 0, 1000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    assert align_ranks(b.build()) == []


@needs_traces
def test_the_sampled_ranks_of_a_128_rank_run() -> None:
    (a,) = align_ranks(imported("a100_128rank_sampled"))
    assert (a.rank, a.reference) == (1, 0) and a.kernels >= 2
    assert a.low_ns <= a.offset_ns <= a.high_ns
    # Long all-gather kernels (42 and 63 ms) prove the clocks agree only to tens of ms.
    assert 1 * MS < a.uncertainty_ns < 50 * MS
