"""Every domain's alignment to the reference, from each domain's fit against its parent.

A device is fitted against its host (PCIe brackets), a host against the reference host (PTP
brackets), or against another host in a tree of exchanges; composing along the chain places
every domain on the reference clock, the error bounds adding up on the way.
"""

from __future__ import annotations

from collections.abc import Mapping

from .segments import ClockMap, compose


def align_chain(fits: Mapping[str, tuple[str, ClockMap]], reference: str) -> dict[str, ClockMap]:
    """``fits[domain] = (parent, the domain's map to its parent clock)`` → each domain's map to
    ``reference`` (which maps to itself). Raises ValueError on a domain whose chain of parents
    never reaches the reference."""
    out: dict[str, ClockMap] = {reference: ClockMap.identity()}

    def resolve(name: str, seen: tuple[str, ...]) -> ClockMap:
        if name in out:
            return out[name]
        if name not in fits or name in seen:
            raise ValueError(f"clock domain {name!r} does not reach the reference {reference!r}")
        parent, m = fits[name]
        parent_map = resolve(parent, (*seen, name))
        out[name] = compose(m, parent_map)
        return out[name]

    for name in fits:
        resolve(name, ())
    return out
