"""A layered left-to-right layout of a drawn graph, Qt-free (pure Python and numpy).

Layers follow time: nodes are taken in start order and each joins the current layer unless a
dependency of it is already there (then it opens the next), so every edge points right and a
node is never left of one that started before it. Within a layer, bands keep host calls on
top and device work at the bottom, as on the timeline; inside a band the order comes from
barycentre sweeps (each node moves to the mean slot of its neighbours in other layers,
alternating predecessors and successors), the crossing reduction of Sugiyama layouts done for
all layers at once with numpy. docs/GRAPH.md says why this rather than a layout package.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NODE_W, NODE_H = 170.0, 30.0  # world units: a node's box
GAP_X, GAP_Y, BAND_GAP = 70.0, 12.0, 30.0
SWEEPS = 6


@dataclass(frozen=True)
class Layout:
    """Each node's layer and slot, and its box's top-left corner in world units."""

    layer: np.ndarray
    row: np.ndarray  # slot from the top, bands included
    x: np.ndarray
    y: np.ndarray

    @property
    def size(self) -> tuple[float, float]:
        """Width and height of the whole drawing."""
        if not len(self.x):
            return 0.0, 0.0
        return float(self.x.max() + NODE_W), float(self.y.max() + NODE_H)


def time_layers(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Layers of nodes given in start order: monotone in that order, each edge forward."""
    fwd = src < dst
    s, d = src[fwd], dst[fwd]
    o = np.argsort(d, kind="stable")
    s, d = s[o].tolist(), d[o].tolist()
    layer = [0] * n
    cur, j, m = 0, 0, len(d)
    for v in range(n):
        need = cur
        while j < m and d[j] == v:
            need = max(need, layer[s[j]] + 1)
            j += 1
        layer[v] = cur = need
    return np.array(layer, np.int64)


def _slots(layer: np.ndarray, band: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Each node's rank inside its (layer, band), ordered by ``key``."""
    o = np.lexsort((key, band, layer))
    grp = np.zeros(len(o), bool)
    if len(o):
        grp[0] = True
        grp[1:] = (layer[o][1:] != layer[o][:-1]) | (band[o][1:] != band[o][:-1])
    first = np.maximum.accumulate(np.where(grp, np.arange(len(o)), 0))
    slot = np.empty(len(o), np.int64)
    slot[o] = np.arange(len(o)) - first
    return slot


def layered_layout(src: np.ndarray, dst: np.ndarray, band: np.ndarray, hint: np.ndarray,
                   sweeps: int = SWEEPS) -> Layout:
    """Lay out a graph whose nodes are in start order; ``band`` is each node's band (top to
    bottom), ``hint`` its first order inside a band (its lane)."""
    n = len(band)
    layer = time_layers(n, src, dst)
    slot = _slots(layer, band, hint.astype(np.float64))
    cross = layer[src] != layer[dst]
    for it in range(sweeps):
        a, b = (src, dst) if it % 2 == 0 else (dst, src)
        a, b = a[cross], b[cross]
        total = np.bincount(b, weights=slot[a], minlength=n)
        count = np.bincount(b, minlength=n)
        bary = np.where(count > 0, total / np.maximum(count, 1), slot)
        slot = _slots(layer, band, bary + hint * 1e-9)
    height = np.zeros(int(band.max()) + 1 if n else 0, np.int64)
    if n:
        np.maximum.at(height, band, slot + 1)
    base = np.concatenate(([0], np.cumsum(height)[:-1])) if n else np.zeros(0, np.int64)
    row = (base[band] + slot) if n else np.zeros(0, np.int64)
    x = layer * (NODE_W + GAP_X)
    y = row * (NODE_H + GAP_Y) + (band * BAND_GAP if n else 0)
    return Layout(layer, row, x.astype(np.float64), np.asarray(y, np.float64))
