"""The collectives of a multi-rank PyTorch trace, per rank: NCCL kernels matched across ranks
(under every name NCCL has used), the ranks put on the reference rank's clock by what those
kernels prove (:mod:`..align.ranks`), each collective split per rank into *skew* (from its
arrival, the kernel's start, to the last rank's arrival) and *transfer* (from there to its end),
compute against communication per rank, and the straggler: the rank that arrives last.

How far it can be trusted: a rank's offset is *proven* within an interval (a kernel can end on
neither rank before it began on the other), and *likely* within the spread of the matched
kernels' end differences (NCCL's ring and tree kernels end nearly together). Lateness below
the likely bound is not told apart from clock error and names no straggler; lateness beyond
the proven bound is certain. Only the ranks in the trace are seen: a sampled run's kernels
also wait for ranks that are not in it, which shows as transfer.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..align.ranks import RankAlignment, align_ranks, matched_kernels, nccl_kernels
from ..trace import Trace
from .findings import Finding, severity
from .gpu import KINDS, device_work, ranks, temporal_breakdown

MIN_SHARE = 1 / 3  # of the matched collectives a rank must be late at to be named


@dataclass(frozen=True)
class RankCollective:
    """One collective matched across ranks: its NCCL kernel on each, on the reference clock (ns)."""

    stream: str
    kind: str
    ranks: tuple[int, ...]
    arrivals: np.ndarray  # int64
    ends: np.ndarray  # int64
    slices: tuple[int, ...]
    likely_ns: np.ndarray  # per rank: how far its clock may likely be off the reference's
    proven_ns: np.ndarray  # per rank: how far its clock is proven to be at most off

    @property
    def skew_ns(self) -> np.ndarray:
        """Per rank: the wait from its arrival to the last rank's."""
        return self.arrivals.max() - self.arrivals

    @property
    def transfer_ns(self) -> np.ndarray:
        """Per rank: from the last arrival to its kernel's end."""
        return np.maximum(self.ends - self.arrivals.max(), 0)

    def late(self, bound: np.ndarray) -> list[tuple[int, int]]:
        """(rank, lateness) of each rank arriving after the first by more than the two ranks'
        clock ``bound`` together (``likely_ns`` or ``proven_ns``)."""
        first = int(np.argmin(self.arrivals))
        lateness = self.arrivals - self.arrivals[first]
        return [(r, int(lateness[i])) for i, r in enumerate(self.ranks)
                if i != first and lateness[i] > bound[i] + bound[first]]


Kernels = dict[int, dict[tuple[str, str], np.ndarray]]


def rank_collectives(trace: Trace, kernels: Kernels | None = None
                     ) -> tuple[list[RankAlignment], list[RankCollective]]:
    """The ranks' alignment against the lowest rank with NCCL kernels and the collectives matched
    across them (``kernels``: :func:`nccl_kernels` of the trace, when the caller has them)."""
    kernels = nccl_kernels(trace) if kernels is None else kernels
    alignment = align_ranks(trace, kernels=kernels)
    ref = min(kernels, default=0)
    joined: dict[tuple[tuple[str, str], int], dict[int, tuple[int, int, int, RankAlignment | None]]] = defaultdict(dict)
    for a in alignment:
        shift = round(a.offset_ns)  # whole ns: timestamps since 1970 in ns do not fit a float exactly
        for key, rows_ref, rows in matched_kernels(kernels, a):
            for r0, r1 in zip(rows_ref.tolist(), rows.tolist(), strict=True):
                joined[(key, r0[0])][ref] = (r0[0], r0[1], r0[2], None)
                joined[(key, r0[0])][a.rank] = (r1[0] - shift, r1[1] - shift, r1[2], a)
    out = []
    for (key, _), parts in joined.items():
        rs = sorted(parts)
        rows = [parts[r] for r in rs]
        out.append(RankCollective(
            key[0], key[1], tuple(rs), np.array([p[0] for p in rows], dtype=np.int64),
            np.array([p[1] for p in rows], dtype=np.int64), tuple(int(p[2]) for p in rows),
            np.array([p[3].likely_ns if p[3] else 0.0 for p in rows]),
            np.array([p[3].uncertainty_ns if p[3] else 0.0 for p in rows])))
    out.sort(key=lambda c: int(c.arrivals.max()))
    return alignment, out


def _device_of(trace: Trace) -> dict[int, int]:
    """Each rank's device index (its streams' device; −1 when none)."""
    dev = trace.tracks.device
    out = {}
    for rank, tracks in ranks(trace).items():
        d = dev[tracks]
        out[rank] = int(d[d >= 0][0]) if (d >= 0).any() else -1
    return out


def _host_of(trace: Trace) -> dict[int, str]:
    """Each rank's host name from its file's metadata, else ``rank N``."""
    meta = trace.metadata.get("ranks")
    named = {r.get("rank"): r.get("host_name") for r in meta if isinstance(r, dict)} if isinstance(meta, list) else {}
    return {rank: str(named.get(rank) or f"rank {rank}") for rank in ranks(trace)}


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3g} ms" if ns >= 1e6 else f"{ns / 1e3:.3g} µs"


def _compute_of(trace: Trace, origin: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per rank: its compute kernels' (start, end) on its own clock, ns since ``origin``, sorted."""
    out = {}
    for w in device_work(trace, drop_last_step=False):
        keep = w.kind == KINDS.index("compute")
        out[w.rank] = ((w.start[keep] - origin).astype(np.float64), (w.end[keep] - origin).astype(np.float64))
    return out


def _busy(work: tuple[np.ndarray, np.ndarray], t0: float, t1: float) -> float:
    """Time ``work`` covers within [t0, t1)."""
    s, e = work
    lo, hi = np.searchsorted(e, t0, side="right"), np.searchsorted(s, t1, side="left")
    return float(np.sum(np.clip(np.minimum(e[lo:hi], t1) - np.maximum(s[lo:hi], t0), 0, None)))


def straggler(trace: Trace, alignment: list[RankAlignment], collectives: list[RankCollective],
              span_ns: float) -> Finding | None:
    """The ``straggler`` finding: the rank late (beyond the alignment's likely bound) at the most
    matched collectives, at least a third of them; None when no rank is."""
    late: dict[int, list[tuple[RankCollective, int]]] = defaultdict(list)
    for c in collectives:
        for r, by in c.late(c.likely_ns):
            late[r].append((c, by))
    if not late:
        return None
    rank = max(late, key=lambda r: (len(late[r]), sum(b for _, b in late[r])))
    hits = late[rank]
    if len(hits) < MIN_SHARE * len(collectives):
        return None
    proven = sum(1 for c, _ in hits if any(r == rank for r, _ in c.late(c.proven_ns)))
    cause, excess = _cause(trace, alignment, collectives, hits, rank)
    lost = sum(b for _, b in hits)
    device = _device_of(trace).get(rank, -1)
    likely = max(float(c.likely_ns.max()) for c, _ in hits)
    bound = max(float(c.proven_ns.max()) for c, _ in hits)
    who = f"rank {rank}" + (f" (GPU {device})" if device >= 0 else "")
    return Finding(
        "straggler", severity(lost, span_ns), int(hits[0][0].arrivals.min()), int(hits[-1][0].ends.max()), int(lost),
        f"{who} arrives last at {len(hits)} of {len(collectives)} collectives matched across ranks, "
        f"{_ms(lost / len(hits))} after the first rank on average; the others wait for it "
        f"(likely cause: {cause}); the clocks are aligned by the collectives, and "
        + _beyond(len(hits), proven, likely, bound),
        {"compute": f"{who} computes longer before its collectives than its peers: balance the work",
         "host": f"{who}'s host launches its collectives late: look at what its host thread does before them"}[cause],
        slices=[s for c, _ in hits for s in c.slices],
        evidence={"culprit": {"host": _host_of(trace)[rank], "device": device if device >= 0 else None, "rank": rank},
                  "cause": cause, "late_collectives": len(hits), "proven_late_collectives": proven,
                  "collectives": len(collectives), "mean_late_ns": round(lost / len(hits)),
                  "excess_compute_ns": round(excess)})


def _beyond(late: int, proven: int, likely: float, bound: float) -> str:
    """How far the lateness at ``late`` collectives stands beyond the clocks' error: past the
    likely error (how closely the kernels' ends agree) at each; past the proven bound at
    ``proven`` of them, all of them, or none (then clock error alone could explain it)."""
    text = (f"its lateness exceeds the likely clock error (±{_ms(likely)}, how closely the kernels' ends agree) "
            + ("at each" if late > 1 else "there"))
    if proven == late:
        return text + f", and the proven bound (±{_ms(bound)}) too"
    if proven:
        return text + f", and the proven bound (±{_ms(bound)}) at {proven} of them"
    return text + f", but not the proven bound (±{_ms(bound)}): clock error alone could explain it"


def _cause(trace: Trace, alignment: list[RankAlignment], collectives: list[RankCollective],
           hits: list[tuple[RankCollective, int]], rank: int) -> tuple[str, float]:
    """``compute`` when the rank ran more compute than its peers since their previous collective,
    by more than half its lateness; else ``host`` (its kernels were launched late)."""
    origin = int(trace.time_bounds()[0])
    work = _compute_of(trace, origin)
    shift = {a.rank: round(a.offset_ns) for a in alignment}
    none = (np.zeros(0), np.zeros(0))
    previous: dict[int, float] = {}  # each rank's previous collective end, on its own clock
    hit = {id(c) for c, _ in hits}
    excess = late = 0.0
    for c in collectives:
        own = {r: float(a + shift.get(r, 0) - origin) for r, a in zip(c.ranks, c.arrivals.tolist(), strict=True)}
        if id(c) in hit and rank in c.ranks:
            busy = {r: _busy(work.get(r, none), previous.get(r, -np.inf), own[r]) for r in c.ranks}
            excess += busy[rank] - float(np.median([busy[r] for r in c.ranks if r != rank]))
            late += float(c.arrivals[c.ranks.index(rank)] - c.arrivals.min())
        for r, e in zip(c.ranks, c.ends.tolist(), strict=True):
            previous[r] = float(e + shift.get(r, 0) - origin)
    return ("compute" if late > 0 and excess > 0.5 * late else "host"), excess


def rank_summary(trace: Trace, alignment: list[RankAlignment], collectives: list[RankCollective],
                 kernels: Kernels | None = None) -> dict[str, Any]:
    """What ``accelview analyze --json`` reports under ``communication`` for a multi-rank trace:
    the alignment, per rank compute vs communication, its NCCL kernels and its collectives' skew
    and transfer, and each matched collective."""
    kernels = nccl_kernels(trace) if kernels is None else kernels
    reference = alignment[0].reference if alignment else min(kernels, default=min(ranks(trace), default=0))
    split: dict[int, dict[str, float]] = defaultdict(lambda: {"skew_ns": 0.0, "transfer_ns": 0.0, "collectives": 0})
    for c in collectives:
        for r, s, t in zip(c.ranks, c.skew_ns.tolist(), c.transfer_ns.tolist(), strict=True):
            split[r]["skew_ns"] += s
            split[r]["transfer_ns"] += t
            split[r]["collectives"] += 1
    device, host = _device_of(trace), _host_of(trace)
    rows = []
    for b in temporal_breakdown(trace):
        row = split[b.rank]
        rows.append({"rank": b.rank, "host": host.get(b.rank, f"rank {b.rank}"), "device": device.get(b.rank, -1),
                     "span_ns": b.span, "compute_ns": b.compute, "communication_ns": b.communication,
                     "skew_ns": round(row["skew_ns"]), "transfer_ns": round(row["transfer_ns"]),
                     "collectives": int(row["collectives"]),
                     "nccl_kernels": sum(len(k) for k in kernels.get(b.rank, {}).values())})
    meta = trace.metadata.get("ranks")
    sizes = sorted({r.get("world_size") for r in meta if isinstance(r, dict) and isinstance(r.get("world_size"), int)}
                   ) if isinstance(meta, list) else []
    return {
        "collectives": len(collectives), "reference": reference, "ranks": rows, "world_sizes": sizes,
        "alignment": [{"rank": a.rank, "reference": a.reference, "offset_ns": round(a.offset_ns),
                       "proven_low_ns": round(a.low_ns), "proven_high_ns": round(a.high_ns),
                       "proven_uncertainty_ns": round(a.uncertainty_ns), "likely_uncertainty_ns": round(a.likely_ns),
                       "kernels": a.kernels} for a in alignment],
        "unaligned_ranks": sorted(set(ranks(trace)) - {a.rank for a in alignment} - {reference}),
        "matched": [{"stream": c.stream, "kind": c.kind, "ranks": list(c.ranks),
                     "arrival_ns": [round(x) for x in c.arrivals.tolist()],
                     "skew_ns": [round(x) for x in c.skew_ns.tolist()],
                     "transfer_ns": [round(x) for x in c.transfer_ns.tolist()],
                     "likely_uncertainty_ns": round(float(c.likely_ns.max())),
                     "proven_uncertainty_ns": round(float(c.proven_ns.max()))} for c in collectives],
    }
