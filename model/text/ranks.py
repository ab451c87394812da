"""The collectives-across-ranks section of ``accelview analyze`` for a multi-rank GPU trace: the
ranks' alignment with what it proves, compute vs communication and skew vs transfer per rank,
and the collectives with the largest skew (rank_collectives.rank_summary)."""

from __future__ import annotations

from typing import Any

from .values import format_duration


def _signed(ns: float) -> str:
    return ("+" if ns >= 0 else "−") + format_duration(abs(ns))


def format_ranks(comm: dict[str, Any], t0: int, top: int) -> list[str]:
    """The section's lines (``comm``: the report's ``communication`` of a multi-rank trace)."""
    ranks = comm["ranks"]
    ref = comm["reference"]
    kernels = {r["rank"]: r["nccl_kernels"] for r in ranks}
    lines = [f"\nCollectives across ranks (NCCL kernels matched across ranks, on rank {ref}'s clock)"]
    for a in comm["alignment"]:
        lines.append(f"  rank {a['rank']}: clock {_signed(a['offset_ns'])} from rank {a['reference']}'s, proven "
                     f"within {_signed(a['proven_low_ns'])} … {_signed(a['proven_high_ns'])} "
                     f"(±{format_duration(a['proven_uncertainty_ns'])}) by {a['kernels']} kernels; "
                     f"their ends agree to ±{format_duration(a['likely_uncertainty_ns'])}")
    if len(comm["world_sizes"]) > 1:
        lines.append(f"  the files name different world sizes ({', '.join(map(str, comm['world_sizes']))}): "
                     "not the ranks of one job")
    for r in comm["unaligned_ranks"]:
        lines.append(f"  rank {r}: no NCCL kernels; not aligned" if not kernels.get(r) else
                     f"  rank {r}: no NCCL kernel sequence consistent with rank {ref}'s within ±50 ms: not one job's "
                     "ranks, or traces that do not overlap in time; its collectives are left out")
    lines.append(f"  {'rank':>4} {'device':>6} {'compute':>10} {'communication':>14} {'skew':>10} {'transfer':>10}"
                 f" {'collectives':>12}")
    for r in ranks:
        lines.append(f"  {r['rank']:>4} {r['device']:>6} {format_duration(r['compute_ns']):>10} "
                     f"{format_duration(r['communication_ns']):>14} {format_duration(r['skew_ns']):>10} "
                     f"{format_duration(r['transfer_ns']):>10} {r['collectives']:>12}")
    if not comm["matched"]:
        return lines
    worst = sorted(comm["matched"], key=lambda c: -max(c["skew_ns"]))[:top]
    lines.append(f"  {len(comm['matched'])} collectives matched; the largest skews (skew / transfer per rank):")
    for c in worst:
        per = ", ".join(f"rank {r} {format_duration(s)} / {format_duration(t)}"
                        for r, s, t in zip(c["ranks"][:8], c["skew_ns"], c["transfer_ns"], strict=False))
        more = f", … {len(c['ranks']) - 8} more" if len(c["ranks"]) > 8 else ""
        lines.append(f"    {c['kind']} on {c['stream']} at {format_duration(max(c['arrival_ns']) - t0)}: {per}{more} "
                     f"(clock ±{format_duration(c['likely_uncertainty_ns'])} likely, "
                     f"±{format_duration(c['proven_uncertainty_ns'])} proven)")
    return lines
