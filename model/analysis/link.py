"""What a PCIe link can carry, from the published model (shared/REFERENCE.md), for the analyses.

Bulk bandwidth per direction = encoded rate (GT/s × lanes × 128/130 / 8) × the fraction left
after DLLPs and ordered sets × TLP payload efficiency payload/(payload + ⌈payload/MPS⌉ × header),
with a 24 B header for posted writes (device → host) and 20 B for read completions
(host → device). The figures it gives per generation: docs/SIMULATOR.md, "PCIe link".
"""

from __future__ import annotations

GIGATRANSFERS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
HEADER_BYTES = {"d2h": 24, "h2d": 20}
# Fraction of encoded bandwidth lost to DLLPs (ACK, UpdateFC) and SKP ordered sets: a fit to
# the "TLP layer" column of REFERENCE.md, within 0.1 GB/s for Gen3-5 at MPS 128/256/512.
DLL_CONST, DLL_PER_TLP_BYTES = 0.08245, 4.0045


def encoded_bandwidth(gen: int, lanes: int) -> float:
    """Bytes/s per direction after line encoding (8b/10b for Gen1-2, 128b/130b after)."""
    if gen not in GIGATRANSFERS:
        raise ValueError(f"unsupported PCIe generation {gen}")
    encoding = 8 / 10 if gen <= 2 else 128 / 130
    return GIGATRANSFERS[gen] * 1e9 * lanes * encoding / 8


def tlp_bandwidth(gen: int, lanes: int, mps: int, direction: str = "") -> float:
    """Bytes/s left for TLPs (headers included) after DLLPs and ordered sets; the same both ways.
    The simulator's link (capture/sim/device/pcie.py) uses these same figures."""
    return encoded_bandwidth(gen, lanes) * (1.0 - (DLL_CONST + DLL_PER_TLP_BYTES / mps))


def bulk_bandwidth(gen: int, lanes: int, mps: int, direction: str) -> float:
    """Achievable payload bytes/s of a large transfer in ``direction`` ("h2d" or "d2h")."""
    return tlp_bandwidth(gen, lanes, mps) * mps / (mps + HEADER_BYTES[direction])
