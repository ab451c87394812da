"""Which counters get a strip when a trace opens: the rule, so the app only displays it.

A simulator capture shows what explains a device's time: its matrix and vector units' busy
share, and HBM and PCIe bandwidth. A trace without those (an imported GPU trace) shows its
sampled device counters first and the host's (RSS, CPU) after them; a series of fewer than
two samples draws no line and is chosen last.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

STRIPS = 4
# the informative series of a simulator capture, in strip order: (base track name's end | derived metric)
PREFERRED: tuple[tuple[str, ...], ...] = (
    ("matrix busy",), ("vector busy",), ("hbm_bandwidth",), ("pcie_h2d_bandwidth", "pcie_d2h_bandwidth"))


@dataclass(frozen=True)
class Series:
    """What the rule knows of one selectable series: a base counter track's name and block, or a
    derived metric's name; and how many samples it has."""

    name: str
    metric: str = ""
    block: str = ""
    samples: int = 0


def _matches(s: Series, key: str) -> bool:
    return s.metric == key if s.metric else (s.name == key or s.name.endswith(" " + key))


def default_strips(series: Sequence[Series], limit: int = STRIPS) -> list[int]:
    """Indices into ``series`` of the strips shown first, in order (at most ``limit``)."""
    chosen: list[int] = []
    for keys in PREFERRED:
        hit = next((i for key in keys for i, s in enumerate(series)
                    if s.samples > 1 and i not in chosen and _matches(s, key)), None)
        if hit is not None:
            chosen.append(hit)
    if chosen:
        return chosen[:limit]
    rest = sorted((i for i, s in enumerate(series) if s.samples > 0),
                  key=lambda i: (series[i].samples < 2, series[i].block == "host"))
    return rest[:limit]
