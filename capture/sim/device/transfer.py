"""How one host<->device copy moves: DMA jobs, descriptors, TLPs and pageable staging.

A DMA job (one command a DMA engine executes) costs::

    descriptor fetch   one device read round trip (16 B descriptors, later ones prefetched)
    first data         h2d only: the first read request's round trip
    data               payload / bulk bandwidth (``pcie.Link``), shared with other transfers
    completion         a posted completion write-back, half a round trip

A copy from pinned host memory is one DMA job, split into descriptors of at most
``pcie.max_descriptor_bytes``. A copy from/to pageable memory goes through
``host.staging_buffers`` pinned bounce buffers of ``host.staging_buffer_bytes``: the host
thread memcpy's each chunk at ``host.memcpy_gb_per_s`` and submits one DMA job per chunk;
a buffer is reused only once its DMA (h2d) or memcpy (d2h) is done. With two buffers the
memcpy and the DMA overlap, so the copy runs at about min(memcpy, DMA) bandwidth (CUDA's
documented behaviour; REFERENCE.md "Pageable host memory").

:func:`plan_transfer` gives the schedule of one copy alone on the link, with every chunk's
host memcpy and DMA job, so an engine can emit slices and counters that add up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .pcie import READ_REQUEST_BYTES, WRITE_HEADER_BYTES, Direction, Link, header_bytes, tlp_count
from .specs import DeviceSpec

COMPLETION_RECORD_BYTES = 16


@dataclass(frozen=True, slots=True)
class DmaJob:
    """One DMA engine command, timed alone on the link. Times are nanoseconds."""

    direction: Direction
    nbytes: int
    descriptors: int
    setup_ns: float  # descriptor fetch (+ first read round trip for h2d)
    data_ns: float  # payload at the bulk bandwidth; stretches when the link is shared
    completion_ns: float  # completion write-back
    data_tlps: int  # in ``direction``
    data_wire_bytes: int  # in ``direction``, headers included
    reverse_tlps: int  # read requests (h2d) and the completion write, in the other direction
    reverse_wire_bytes: int

    @property
    def duration_ns(self) -> float:
        """Setup + data + completion."""
        return self.setup_ns + self.data_ns + self.completion_ns

    @property
    def latency_ns(self) -> float:
        """The part that does not depend on the bandwidth."""
        return self.setup_ns + self.completion_ns


def dma_job(spec: DeviceSpec, nbytes: int, direction: Direction, link: Link | None = None) -> DmaJob:
    """Cost of one DMA job moving ``nbytes`` in ``direction``, alone on the link."""
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    link = link or Link.from_spec(spec)
    p = spec.pcie
    rtt = p.read_round_trip_ns
    descriptors = max(1, math.ceil(nbytes / p.max_descriptor_bytes))
    setup = rtt + (rtt if direction == "h2d" else 0.0)
    data_tlps = tlp_count(nbytes, p.mps)
    data_wire = nbytes + data_tlps * header_bytes(direction)
    # Descriptor reads: a request upstream (d2h) and a completion downstream (h2d) each.
    desc_payload = descriptors * p.descriptor_bytes
    desc_completions = tlp_count(desc_payload, p.mps)
    desc_requests = math.ceil(desc_payload / p.mrrs)
    completion_wire = COMPLETION_RECORD_BYTES + WRITE_HEADER_BYTES  # always d2h
    if direction == "h2d":
        requests = tlp_count(nbytes, p.mrrs)
        data_tlps += desc_completions
        data_wire += desc_payload + desc_completions * header_bytes("h2d")
        reverse_tlps = requests + desc_requests + 1
        reverse_wire = (requests + desc_requests) * READ_REQUEST_BYTES + completion_wire
    else:
        data_tlps += 1
        data_wire += completion_wire
        reverse_tlps = desc_requests + desc_completions
        reverse_wire = desc_requests * READ_REQUEST_BYTES + desc_payload + desc_completions * header_bytes(
            "h2d")
    return DmaJob(direction, nbytes, descriptors, setup, link.payload_time_ns(nbytes, direction), rtt / 2,
                  data_tlps, data_wire, reverse_tlps, reverse_wire)


@dataclass(frozen=True)
class Chunk:
    """One chunk of a copy: its host staging memcpy (if pageable) and its DMA job."""

    index: int
    nbytes: int
    memcpy_start_ns: float  # host staging memcpy; start == end when pinned
    memcpy_end_ns: float
    dma_start_ns: float
    dma: DmaJob

    @property
    def dma_end_ns(self) -> float:
        """When this chunk's DMA job has written its completion."""
        return self.dma_start_ns + self.dma.duration_ns


@dataclass(frozen=True)
class TransferPlan:
    """The schedule of one copy alone on the link; time 0 is when the copy starts moving."""

    direction: Direction
    nbytes: int
    pinned: bool
    chunks: tuple[Chunk, ...]

    @property
    def end_ns(self) -> float:
        """When the last byte has landed and, for pageable d2h, been copied out."""
        return max(max(c.dma_end_ns, c.memcpy_end_ns) for c in self.chunks)

    @property
    def host_busy_ns(self) -> float:
        """Time the host thread spends in staging memcpy."""
        return sum(c.memcpy_end_ns - c.memcpy_start_ns for c in self.chunks)

    @property
    def latency_ns(self) -> float:
        """The fixed (bandwidth-independent) part of the DMA jobs."""
        return sum(c.dma.latency_ns for c in self.chunks)

    @property
    def effective_bytes_per_s(self) -> float:
        """Payload bytes per second of elapsed time."""
        return self.nbytes / (self.end_ns * 1e-9) if self.end_ns > 0 else 0.0

    def wire_bytes(self, direction: Direction) -> int:
        """Bytes on the wire in ``direction``, TLP headers included."""
        if direction == self.direction:
            return sum(c.dma.data_wire_bytes for c in self.chunks)
        return sum(c.dma.reverse_wire_bytes for c in self.chunks)

    def tlps(self, direction: Direction) -> int:
        """TLPs sent in ``direction``."""
        if direction == self.direction:
            return sum(c.dma.data_tlps for c in self.chunks)
        return sum(c.dma.reverse_tlps for c in self.chunks)


def plan_transfer(spec: DeviceSpec, nbytes: int, direction: Direction, pinned: bool = True) -> TransferPlan:
    """Schedule a host<->device copy of ``nbytes`` alone on the link.

    Pinned: one DMA job from time 0. Pageable: chunks of ``host.staging_buffer_bytes``
    pipelined through ``host.staging_buffers`` bounce buffers; the DMA of an h2d chunk is
    submitted when its memcpy ends and reaches the device after ``timing.doorbell_ns``; the
    memcpy of a d2h chunk starts when the host has been interrupted for its DMA completion.
    """
    if direction not in ("h2d", "d2h"):
        raise ValueError(f"direction must be 'h2d' or 'd2h', got {direction!r}")
    link = Link.from_spec(spec)
    if pinned:
        job = dma_job(spec, nbytes, direction, link)
        return TransferPlan(direction, nbytes, True, (Chunk(0, nbytes, 0.0, 0.0, 0.0, job),))
    h = spec.host
    step = h.staging_buffer_bytes
    sizes = [min(step, nbytes - off) for off in range(0, nbytes, step)] or [0]
    memcpy_rate = h.memcpy_gb_per_s  # bytes per ns
    doorbell, notify = spec.timing.doorbell_ns, spec.timing.interrupt_ns
    chunks: list[Chunk] = []
    for i, size in enumerate(sizes):
        job = dma_job(spec, size, direction, link)
        prev = chunks[-1] if chunks else None
        reuse = chunks[i - h.staging_buffers] if i >= h.staging_buffers else None
        copy_ns = size / memcpy_rate
        if direction == "h2d":
            m0 = max(prev.memcpy_end_ns if prev else 0.0, reuse.dma_end_ns if reuse else 0.0)
            d0 = max(m0 + copy_ns + doorbell, prev.dma_end_ns if prev else 0.0)
        else:
            d0 = max(prev.dma_end_ns if prev else 0.0, reuse.memcpy_end_ns if reuse else 0.0)
            m0 = max(d0 + job.duration_ns + notify, prev.memcpy_end_ns if prev else 0.0)
        chunks.append(Chunk(i, size, m0, m0 + copy_ns, d0, job))
    return TransferPlan(direction, nbytes, False, tuple(chunks))
