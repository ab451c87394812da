"""Ranks of a multi-rank PyTorch trace aligned by what their NCCL kernels prove.

Each rank's profiler stamps its own host clock (Kineto: wall-clock µs; HTA lines ranks up by
subtracting one global minimum, i.e. trusts those clocks). A collective's kernel runs on every
participant at once for part of its life: data moves only while both ends are in it, so the
kernel can end on neither rank before it began on the other. For the i-th kernel of one
communicator on ranks a and b, with ``δ`` rank b's clock minus rank a's:
``start_b − end_a ≤ δ ≤ end_b − start_a``. Over every matched kernel that bounds δ to an
interval: the alignment's hard uncertainty. The estimate is the median of the kernels' end
differences inside it (ring and tree collectives end nearly together on all ranks).

Kernels are matched per stream (the communicator's) and kind, in order, at the index shift
that keeps the most kernels consistent: sampled traces need not start at the same kernel.
NCCL has named its kernels ``ncclKernel_<Coll>_…`` (2.x), ``ncclDevKernel_<Coll>_…`` (2.19+)
and ``nccl<Coll>…Kernel…`` (1.x, early 2.x); all three are matched (HTA's straggler analysis
matches only the first, its issue #360).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..trace import Trace

_NCCL = re.compile(r"^nccl(?:Dev)?Kernel_([A-Za-z]+)|^nccl([A-Z][a-z]+(?:[A-Z][a-z]+)*?)(?:Ring|Tree|LL|Kernel)")
_RANK = re.compile(r"^rank (\d+)$")
MAX_OFFSET_NS = 50e6  # Nsight Systems' guide: NTP leaves hosts 1 to tens of ms apart


def nccl_kind(name: str) -> str | None:
    """The collective of an NCCL kernel name (``AllReduce``, ``SendRecv``, …), None for other kernels."""
    m = _NCCL.match(name)
    return (m.group(1) or m.group(2)) if m else None


@dataclass(frozen=True)
class RankAlignment:
    """Rank ``rank``'s clock minus the reference rank's: proven within ``[low_ns, high_ns]``
    by ``kernels`` matched kernels, estimated at ``offset_ns`` (subtract it from the rank's
    timestamps to put them on the reference rank's clock)."""

    rank: int
    reference: int
    offset_ns: float
    low_ns: float
    high_ns: float
    kernels: int
    ends_spread_ns: float = float("inf")
    shifts: tuple[tuple[tuple[str, str], int], ...] = ()

    @property
    def uncertainty_ns(self) -> float:
        """Half the proven interval: how far the estimate can be from the truth."""
        return (self.high_ns - self.low_ns) / 2

    @property
    def likely_ns(self) -> float:
        """How far the estimate can be off if matched kernels end together on both ranks (the
        largest distance of one kernel's end difference from the estimate; the proven bound when
        only one kernel was matched)."""
        return min(self.ends_spread_ns, self.uncertainty_ns)


def _rank_of_tracks(trace: Trace) -> np.ndarray:
    """Each track's rank (from its ``rank N`` ancestor; −1 when none)."""
    tr = trace.tracks
    parent = tr["parent"]
    own = np.array([int(m.group(1)) if (m := _RANK.match(trace.strings[int(n)])) else -1 for n in tr["name"]])
    rank = own.copy()
    for _ in range(64):  # walk up until every track found its root
        up = np.where((rank < 0) & (parent >= 0), own[np.maximum(parent, 0)], rank)
        parent = np.where((rank < 0) & (parent >= 0), tr["parent"][np.maximum(parent, 0)], -1)
        if np.array_equal(up, rank):
            break
        rank = up
    return rank


def nccl_kernels(trace: Trace) -> dict[int, dict[tuple[str, str], np.ndarray]]:
    """Per rank, per (stream track name, collective kind): the NCCL kernels' (start, end, slice id)
    rows (ns) in time order."""
    rank_of = _rank_of_tracks(trace)
    s = trace.slices
    ids, inverse = np.unique(s["name"], return_inverse=True)
    names = {int(i): nccl_kind(trace.strings[int(i)]) for i in ids}
    out: dict[int, dict[tuple[str, str], list[tuple[int, int, int]]]] = {}
    for i in np.flatnonzero(np.array([names[int(n)] is not None for n in ids], dtype=bool)[inverse]):
        track = int(s["track"][i])
        if rank_of[track] < 0:
            continue
        key = (trace.track_name(track), str(names[int(s["name"][i])]))
        start = int(s["start_ns"][i])
        out.setdefault(int(rank_of[track]), {}).setdefault(key, []).append(
            (start, start + int(s["dur_ns"][i]), int(i)))
    return {r: {k: np.array(sorted(v), dtype=np.int64).reshape(-1, 3) for k, v in groups.items()}
            for r, groups in out.items()}


Candidate = tuple[float, float, float, int, int]  # low, high, estimate, matched, shift


def _candidates(a: np.ndarray, b: np.ndarray) -> list[Candidate]:
    """Every index shift pairing kernels a[i] ↔ b[i + shift] consistently (each pair overlapping
    for some one δ): its interval, estimate, how many it pairs and the shift."""
    out = []
    for shift in range(-(len(a) - 1), len(b)):
        i = np.arange(max(0, -shift), min(len(a), len(b) - shift))
        ka, kb = a[i], b[i + shift]
        lo, hi = float(np.max(kb[:, 0] - ka[:, 1])), float(np.min(kb[:, 1] - ka[:, 0]))
        if lo <= hi:
            out.append((lo, hi, float(np.median(np.clip(kb[:, 1] - ka[:, 1], lo, hi))), len(i), shift))
    return out


def _best(groups: dict[tuple[str, str], list[Candidate]], limit: float
          ) -> tuple[float, float, float, int, tuple[tuple[tuple[str, str], int], ...]]:
    """The δ within ±``limit`` that the most matched kernels agree on, each group at one shift
    (ties: the narrowest interval): (low, high, estimate, matched, each group's shift) of the
    chosen shifts together."""
    best: tuple = (-np.inf, np.inf, 0.0, 0, ())
    points = sorted({x for g in groups.values() for c in g for x in (c[0], c[1], (c[0] + c[1]) / 2, 0.0)})
    for d in (p for p in points if abs(p) <= limit):
        chosen = {key: max((c for c in g if c[0] <= d <= c[1]), key=lambda c: (c[3], c[0] - c[1]), default=None)
                  for key, g in groups.items()}
        picked = {key: c for key, c in chosen.items() if c is not None}
        if not picked:
            continue
        n = sum(c[3] for c in picked.values())
        lo, hi = max(c[0] for c in picked.values()), min(c[1] for c in picked.values())
        if n > best[3] or (n == best[3] and hi - lo < best[1] - best[0]):
            est = float(np.clip(np.average([c[2] for c in picked.values()],
                                           weights=[c[3] for c in picked.values()]), lo, hi))
            best = (lo, hi, est, n, tuple(sorted((key, c[4]) for key, c in picked.items())))
    return best


def _ends_spread(a: dict[tuple[str, str], np.ndarray], b: dict[tuple[str, str], np.ndarray],
                 shifts: tuple[tuple[tuple[str, str], int], ...], estimate: float) -> float:
    """The largest distance of a matched pair's end difference from ``estimate`` (inf for one pair)."""
    diffs = []
    for key, shift in shifts:
        ka, kb = _pairs(a[key], b[key], shift)
        diffs += (kb[:, 1] - ka[:, 1]).tolist()
    return float(np.max(np.abs(np.asarray(diffs) - estimate))) if len(diffs) > 1 else float("inf")


def _pairs(a: np.ndarray, b: np.ndarray, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows a[i] and b[i + shift] that ``shift`` pairs."""
    i = np.arange(max(0, -shift), min(len(a), len(b) - shift))
    return a[i], b[i + shift]


def matched_kernels(kernels: dict[int, dict[tuple[str, str], np.ndarray]], alignment: RankAlignment
                    ) -> list[tuple[tuple[str, str], np.ndarray, np.ndarray]]:
    """The kernel pairs ``alignment`` matched: per (stream, kind), the reference rank's rows and
    the aligned rank's rows ((start, end, slice id), pair by pair)."""
    ref, mine = kernels[alignment.reference], kernels[alignment.rank]
    return [(key, *_pairs(ref[key], mine[key], shift)) for key, shift in alignment.shifts]


def align_ranks(trace: Trace, reference: int | None = None,
                max_offset_ns: float = MAX_OFFSET_NS,
                kernels: dict[int, dict[tuple[str, str], np.ndarray]] | None = None) -> list[RankAlignment]:
    """Every other rank's offset against ``reference`` (the lowest rank by default), from the
    NCCL kernels both ranks ran (``kernels``: :func:`nccl_kernels` of the trace, when the caller
    has them), among offsets within ±``max_offset_ns`` (what NTP leaves between hosts: kernel
    sequences matched a few calls apart can otherwise agree on a far offset); ranks sharing no
    kernels with it are left out."""
    kernels = nccl_kernels(trace) if kernels is None else kernels
    ref = min(kernels, default=0) if reference is None else reference
    out = []
    for rank in sorted(set(kernels) - {ref}):
        groups = {key: _candidates(a, kernels[rank][key]) for key, a in kernels.get(ref, {}).items()
                  if key in kernels[rank]}
        lo, hi, est, n, shifts = _best({k: g for k, g in groups.items() if g}, max_offset_ns)
        if n:
            spread = _ends_spread(kernels[ref], kernels[rank], shifts, est)
            out.append(RankAlignment(rank, ref, est, lo, hi, n, spread, shifts))
    return out
