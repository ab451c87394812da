"""The order and names of counters in the counter list: chip-to-chip link and network counters
sit right after the PCIe counters of their device (a host's network counters after its last PCIe
counter), wherever the capture put them, and a link counter named without its device gets it."""

from __future__ import annotations

import numpy as np

from ..trace import Trace, track_roots

LINK_BLOCKS = ("c2c", "network")



def counter_order(trace: Trace) -> list[int]:
    """Rows of ``counter_tracks`` in list order: link counters moved after their device's (or,
    for a host's network counters, their host's) last PCIe counter; the rest as captured."""
    ct, tr = trace.counter_tracks, trace.tracks
    blocks = [trace.strings[int(b)] for b in ct.block]
    root = track_roots(tr.parent.astype(np.int64))
    track = ct.track.astype(np.int64)
    dev = tr.device[track].astype(np.int64)
    host = root[track]
    last_pcie: dict[tuple[int, int], int] = {}
    for i, b in enumerate(blocks):
        if b == "pcie":
            last_pcie[(int(host[i]), int(dev[i]))] = i
            last_pcie[(int(host[i]), -1)] = i
    after: dict[int, list[int]] = {}
    order: list[int] = []
    for i, b in enumerate(blocks):
        anchor = last_pcie.get((int(host[i]), int(dev[i]))) if b in LINK_BLOCKS else None
        if anchor is None:
            order.append(i)
        else:
            after.setdefault(anchor, []).append(i)
    out: list[int] = []
    for i in order:
        out.append(i)
        out += after.get(i, [])
    return out


def counter_label(trace: Trace, row: int) -> str:
    """A counter's name in the list: a link counter of a device that its name does not mention
    is prefixed with the device's (``device 3 C2C TX bytes``)."""
    ct, tr = trace.counter_tracks, trace.tracks
    t = int(ct.track[row])
    name = trace.track_name(t)
    d = int(tr.device[t])
    if trace.strings[int(ct.block[row])] in LINK_BLOCKS and d >= 0 and f"device {d}" not in name:
        return f"device {d} {name}"
    return name
