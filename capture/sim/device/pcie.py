"""PCIe link bandwidth per direction: encoding, TLP headers and DLLP/flow-control overhead.

Bandwidth of a bulk transfer on one direction of the link::

    encoded  = GT/s x lanes x 128/130 / 8                      (Gen3-5, 128b/130b)
    tlp      = encoded x dll_factor(MPS)                        (ACK/UpdateFC DLLPs, SKPs)
    bulk     = tlp x payload / (payload + ceil(payload/MPS) x header)
                  header = 24 B for posted writes (D2H), 20 B for read completions (H2D)

``dll_factor(MPS) = 1 - (0.08245 + 4.0045 B / MPS)`` is a least-squares fit to the published
"TLP layer" column of docs REFERENCE.md (pcie-bench's model) for Gen3-5 at MPS 128/256/512;
it reproduces every bulk figure of that table within 0.1 GB/s (Gen4 x16 MPS 256: 26.0 GB/s
write, 26.4 GB/s read; Gen5: 52.0 / 52.7). Directions are named from the host's side:
``h2d`` moves data host -> device (the device's DMA engine *reads* host memory, data comes
back as completions), ``d2h`` moves data device -> host (posted writes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from accelview.model.analysis.link import DLL_CONST, DLL_PER_TLP_BYTES, HEADER_BYTES, encoded_bandwidth

from .specs import DeviceSpec

Direction = Literal["h2d", "d2h"]
DIRECTIONS: tuple[Direction, Direction] = ("h2d", "d2h")

# The published link model is shared with the analyses (one formula, one place).
WRITE_HEADER_BYTES = HEADER_BYTES["d2h"]  # TLP header + sequence number + LCRC + framing, posted write
COMPLETION_HEADER_BYTES = HEADER_BYTES["h2d"]  # the same for a completion with data
READ_REQUEST_BYTES = 24  # a memory read request carries no payload


def dll_factor(mps: int) -> float:
    """Fraction of the encoded bandwidth left for TLPs after DLLPs and ordered sets."""
    return 1.0 - (DLL_CONST + DLL_PER_TLP_BYTES / mps)


def tlp_count(nbytes: int, max_payload: int) -> int:
    """TLPs needed to carry ``nbytes`` of payload at ``max_payload`` bytes each."""
    return math.ceil(nbytes / max_payload) if nbytes > 0 else 0


def tlp_efficiency(nbytes: int, max_payload: int, header_bytes: int) -> float:
    """payload / (payload + ceil(payload / MPS) x header)."""
    if nbytes <= 0:
        return 0.0
    return nbytes / (nbytes + tlp_count(nbytes, max_payload) * header_bytes)


def header_bytes(direction: Direction) -> int:
    """Per-TLP overhead of the data TLPs of a transfer in ``direction``."""
    return COMPLETION_HEADER_BYTES if direction == "h2d" else WRITE_HEADER_BYTES


@dataclass(frozen=True)
class Link:
    """One device's PCIe link, both directions, from its spec."""

    gen: int
    lanes: int
    mps: int
    mrrs: int
    h2d_factor: float
    d2h_factor: float
    read_round_trip_ns: float
    max_outstanding_reads: int

    @classmethod
    def from_spec(cls, spec: DeviceSpec) -> Link:
        """The link described by ``spec.pcie``."""
        p = spec.pcie
        return cls(p.gen, p.lanes, p.mps, p.mrrs, p.h2d_factor, p.d2h_factor,
                   p.read_round_trip_ns, p.max_outstanding_reads)

    @property
    def encoded_bytes_per_s(self) -> float:
        """Raw per-direction bandwidth after line encoding."""
        return encoded_bandwidth(self.gen, self.lanes)

    @property
    def tlp_bytes_per_s(self) -> float:
        """Per-direction bandwidth available to TLPs (headers included)."""
        return self.encoded_bytes_per_s * dll_factor(self.mps)

    def wire_bytes(self, nbytes: int, direction: Direction) -> int:
        """Bytes the data TLPs of an ``nbytes`` transfer occupy on the link (headers included)."""
        return nbytes + tlp_count(nbytes, self.mps) * header_bytes(direction)

    def model_bandwidth(self, direction: Direction) -> float:
        """Bulk payload bandwidth of the TLP model, before the direction's asymmetry factor."""
        return self.tlp_bytes_per_s * self.mps / (self.mps + header_bytes(direction))

    def read_request_limit(self) -> float:
        """Bytes/s the DMA engine's outstanding reads allow: tags x MRRS / round trip."""
        return self.max_outstanding_reads * self.mrrs / (self.read_round_trip_ns * 1e-9)

    def bulk_bandwidth(self, direction: Direction) -> float:
        """Sustained payload bytes/s of one large transfer alone on the link.

        The TLP model times the spec's per-direction factor; for ``h2d`` (device reads) also
        capped by the outstanding-read limit.
        """
        if direction == "h2d":
            return min(self.model_bandwidth("h2d") * self.h2d_factor, self.read_request_limit())
        if direction == "d2h":
            return self.model_bandwidth("d2h") * self.d2h_factor
        raise ValueError(f"direction must be 'h2d' or 'd2h', got {direction!r}")

    def payload_time_ns(self, nbytes: int, direction: Direction) -> float:
        """Nanoseconds ``nbytes`` of payload take at the bulk bandwidth (no latency)."""
        return nbytes / self.bulk_bandwidth(direction) * 1e9
