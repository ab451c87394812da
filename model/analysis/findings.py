"""Findings: what a pass found, with its evidence, the time it cost and what to change."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

KINDS = (
    "pageable-transfer", "small-transfers", "pcie-saturation", "launch-bound", "low-hbm-efficiency",
    "host-sync", "transfer-not-overlapped", "redundant-transfer", "fusion-candidate", "gpu-idle",
    "sync-copy", "sync-in-loop", "launch-outliers", "step-starvation", "low-comm-overlap", "stream-serialisation",
    "cpu-bound",
)


@dataclass
class Finding:
    """One problem found in a capture. ``slices`` are the evidence, by slice id."""

    kind: str
    severity: str  # "high", "medium", "low"
    start_ns: int
    end_ns: int
    time_lost_ns: int
    summary: str
    suggestion: str
    slices: list[int] = field(default_factory=list)
    tracks: list[int] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A plain dict (the documented ``findings`` entry of ``accelview analyze --json``)."""
        d = asdict(self)
        d["slices"] = [int(s) for s in self.slices[:1000]]
        d["tracks"] = [int(t) for t in self.tracks]
        if "culprit" in self.evidence:  # a straggler names who holds the others back at the top level
            d["culprit"] = self.evidence["culprit"]
        return d


def severity(time_lost_ns: float, span_ns: float) -> str:
    """high: ≥ 10% of the run lost; medium: ≥ 2%; low: less."""
    share = time_lost_ns / span_ns if span_ns > 0 else 0.0
    return "high" if share >= 0.10 else "medium" if share >= 0.02 else "low"


def ranked(findings: list[Finding]) -> list[Finding]:
    """Findings by time lost, largest first."""
    return sorted(findings, key=lambda f: -f.time_lost_ns)
