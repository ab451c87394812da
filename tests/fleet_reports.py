"""Hand-made FleetReports (the dict ``analyze_fleet`` returns) for the fleet view's tests: a
fleet of ``n`` hosts whose late hosts idle their peers, with failures when asked."""

from __future__ import annotations

from typing import Any

import numpy as np

BINS = 512


def fake_report(n: int = 8, late: tuple[int, ...] = (3,), failures: dict[str, str] | None = None,
                seed: int = 0, folder: str = "/fleet") -> dict[str, Any]:
    """``n`` hosts ``host0..``; the hosts in ``late`` arrive late at every step (their peers idle
    waiting), ranked first; ``failures``: capture name → one line, the answer then partial."""
    rng = np.random.default_rng(seed)
    late = tuple(h for h in late if h < n)
    steps = 12
    t = np.linspace(0.0, steps, BINS, endpoint=False) % 1.0
    hosts = []
    for h in range(n):
        is_late = h in late
        busy = np.where(t < (0.80 if is_late else 0.55), 0.9, 0.08) + rng.normal(0, 0.04, BINS)
        late_ns = int((4_000_000 if is_late else 0) + rng.integers(0, 60_000))
        hosts.append({
            "host": f"host{h}", "path": f"{folder}/host{h}.h5", "rank": 0,
            "late_ns": late_ns, "lost_ns": int(late_ns * (n - 1) * 0.5),
            "compute_ns": int(rng.integers(8e8, 9e8)), "communication_ns": int(rng.integers(1e8, 3e8)),
            "skew_ns": int(rng.integers(0, 5e6)), "transfer_ns": int(rng.integers(1e7, 5e7)), "devices": 8,
            "clock": {"steps": int(h == n - 1), "error_ns": float(rng.uniform(10, 80)), "map": {"segments": []}},
            "utilisation": np.clip(busy, 0.0, 1.0).round(4).tolist(),
        })
    for r, i in enumerate(sorted(range(n), key=lambda i: -hosts[i]["lost_ns"]), 1):
        hosts[i]["rank"] = r
    findings = [{"kind": "straggler", "severity": "high", "time_lost_ns": hosts[h]["lost_ns"],
                 "summary": f"host host{h} arrives last at 12 of 12 collectives",
                 "suggestion": "look at its host thread",
                 "culprit": {"host": f"host{h}", "device": None}} for h in late]
    findings.append({"kind": "gpu-idle", "severity": "medium", "time_lost_ns": 2_000_000,
                     "summary": "devices idle between steps", "suggestion": "overlap the next step"})
    return {"hosts": hosts, "span_ns": [0, 2_400_000_000], "findings": findings, "communication": {},
            "failures": dict(failures or {}), "partial": bool(failures)}
