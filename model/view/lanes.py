"""Vertical layout of the timeline: which lanes (track, depth rows) are shown, in what order,
at what y. Follows the track tree (hosts → threads, devices → units), honouring hidden tracks
and collapsed groups. Pure Python; the lane tree widget and the painter both use it.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from ..schema import TrackKind
from ..trace import Trace
from .fit import DEVICE_KINDS
from .lod import TraceLOD

ROW_H = 18  # one depth row of slices
COMPACT_MAX_H = 2 * ROW_H  # a devices-together row when few devices leave room for it
HEADER_H = 20  # a group (host, device) title row
GAP = 3  # space under each track
HEADER = -1  # Lane.depth of a group's title row
SUMMARY = -2  # Lane.depth of a collapsed group's summary row: its descendants' busy coverage
INSTANTS = -3  # Lane.depth of the marker row above a track that has both slices and instants
INSTANT_H = 9  # its height: enough for a marker, so markers never cover slices or their labels
COMPACT_MIN_H = 3  # the thinnest row of a device in the "devices together" arrangement
UNIT_KINDS = (TrackKind.EXEC_UNIT, TrackKind.GPU_STREAM)  # what a compact device row summarises


def track_children(trace: Trace, order: dict[int, float] | None = None) -> dict[int, list[int]]:
    """Children of each track id (-1: the roots), ordered by (sort, id); counters excluded.
    Link lanes (chip-to-chip, network) sit beside PCIe: right after a device's PCIe lanes, and a
    host's network lanes before its devices, wherever the capture sorted them.
    ``order`` overrides a track's sort key (the user reordered lanes)."""
    tr = trace.tracks
    kids: dict[int, list[int]] = {}
    for t in range(len(tr)):
        if int(tr.kind[t]) == TrackKind.COUNTER:
            continue
        p = int(tr.parent[t])
        kids.setdefault(p if 0 <= p < len(tr) else -1, []).append(t)
    order = order or {}
    for v in kids.values():
        links = _link_sort(tr, v)
        v.sort(key=lambda t: (order.get(t, links.get(t, float(tr.sort[t]))), t))
    return kids


def _link_sort(tr, siblings: list[int]) -> dict[int, float]:
    """Sort keys that move link lanes among ``siblings`` next to PCIe: after the last PCIe lane,
    else before the first device; none when there is neither."""
    kinds = {t: int(tr.kind[t]) for t in siblings}
    links = [t for t in siblings if kinds[t] == TrackKind.NETWORK_LINK]
    pcie = [float(tr.sort[t]) for t in siblings if kinds[t] == TrackKind.PCIE]
    devices = [float(tr.sort[t]) for t in siblings if kinds[t] == TrackKind.DEVICE]
    if not links or not (pcie or devices):
        return {}
    at = max(pcie) + 0.5 if pcie else min(devices) - 0.5
    return {t: at + i * 1e-6 for i, t in enumerate(sorted(links, key=lambda t: (float(tr.sort[t]), t)))}


@dataclass(frozen=True)
class Lane:
    """One drawn row: a track's depth row, a group's title (``depth`` HEADER), a collapsed
    group's summary (``depth`` SUMMARY) or a track's instant markers (``depth`` INSTANTS)."""

    track: int
    depth: int
    y: int
    h: int
    level: int  # nesting level in the tree, for indenting names


class LaneLayout:
    """The rows shown for a set of hidden and collapsed tracks."""

    def __init__(self, trace: Trace, lod: TraceLOD, hidden: set[int] | None = None,
                 collapsed: set[int] | None = None, order: dict[int, float] | None = None,
                 together: bool = False, fit_h: int = 0) -> None:
        """``together``: the "devices together" arrangement - hosts keep their threads on top,
        and every device of every host follows as one compact row (its execution units'
        busy coverage), the rows sharing what is left of ``fit_h`` pixels so many ranks fit;
        when the hosts' lanes would take more than half of ``fit_h``, each host is one such
        row too."""
        self.lanes: list[Lane] = []
        self.summary: dict[int, list[int]] = {}  # collapsed group -> its descendants with slices
        self.compact: list[int] = []  # tracks shown as one compact row each (``together``): devices, hosts
        self.compact_names: dict[int, str] = {}  # a compact row's title: "host · device"
        self._row_of: dict[int, int] = {}  # each track under a compact row -> that row's track
        hidden = hidden or set()
        collapsed = collapsed or set()
        kids = track_children(trace, order)
        roots = set(device_roots(trace)) if together else set()
        inst = trace.instants.track
        with_instants = set(np.unique(inst).tolist()) if len(inst) else set()
        y = 0

        def descendants(t: int) -> list[int]:
            out = []
            for c in kids.get(t, []):
                out.append(c)
                out.extend(descendants(c))
            return out

        def visit(t: int, level: int) -> None:
            nonlocal y
            if t in hidden or t in roots:  # devices of the "together" arrangement come last
                return
            depths = lod.depth_count(t)
            children = kids.get(t, [])
            if depths == 0 and (t in with_instants or not children):
                depths = 1  # a leaf lane shows even while empty; instants need a row too
            if children:
                self.lanes.append(Lane(t, HEADER, y, HEADER_H, level))
                y += HEADER_H
                if t in collapsed:
                    busy = [d for d in descendants(t) if d not in hidden and lod.depth_count(d)]
                    if busy:
                        self.summary[t] = busy
                        self.lanes.append(Lane(t, SUMMARY, y, ROW_H, level + 1))
                        y += ROW_H + GAP
            if t in with_instants and lod.depth_count(t):
                self.lanes.append(Lane(t, INSTANTS, y, INSTANT_H, level))
                y += INSTANT_H
            for d in range(depths):
                self.lanes.append(Lane(t, d, y, ROW_H, level))
                y += ROW_H
            if depths:
                y += GAP
            if t not in collapsed:
                for c in children:
                    visit(c, level + 1)

        for root in kids.get(-1, []):
            visit(root, 0)
        if together:
            self.compact = _in_tree_order(kids, roots, hidden)  # folded groups' devices too
            hosts = [t for t in kids.get(-1, []) if t not in hidden and t not in roots]
            if fit_h > 0 and y > fit_h // 2 and len(hosts) > 1:
                # Many hosts: their threads would push the devices off screen, so each host is one
                # compact row too (its threads, queues and links), above its devices' rows.
                self.lanes, self.summary, y = [], {}, 0
                self.compact = hosts + self.compact
            y = self._compact_rows(lod, kids, hidden, y, fit_h, roots)
        self.height = y
        self._ys = [ln.y for ln in self.lanes]
        self._by_key = {(ln.track, ln.depth): ln for ln in self.lanes}

    def _compact_rows(self, lod: TraceLOD, kids: dict[int, list[int]], hidden: set[int], y: int,
                      fit_h: int, devices: set[int]) -> int:
        """One row per track of ``compact`` (a device: its execution units; a host: everything
        under it but its devices), sharing the height left of ``fit_h`` (at least half of it);
        returns the y under them."""
        if not self.compact:
            return y
        avail = max(fit_h - y, fit_h // 2)
        h = max(COMPACT_MIN_H, min(COMPACT_MAX_H, avail // len(self.compact))) if fit_h > 0 else ROW_H
        trace = lod.trace
        kinds, parent = trace.tracks.kind, trace.tracks.parent
        for dev in self.compact:
            top = dev
            while 0 <= int(parent[top]) != top:
                top = int(parent[top])
            name = trace.track_name(dev)
            self.compact_names[dev] = name if top == dev else f"{trace.track_name(top)} · {name}"
            tree, stack = [], [dev]
            while stack:
                u = stack.pop()
                if u in hidden or (u in devices and u != dev):
                    continue
                tree.append(u)
                self._row_of[u] = dev
                stack.extend(kids.get(u, []))
            busy = [u for u in tree if lod.depth_count(u)]
            units = [u for u in busy if int(kinds[u]) in UNIT_KINDS]
            self.summary[dev] = sorted(units or busy)
            self.lanes.append(Lane(dev, SUMMARY, y, h, 0 if top == dev and dev not in devices else 1))
            y += h
        return y + GAP

    def lane_at(self, y: float) -> Lane | None:
        """The lane drawn at content y (None in a gap or outside)."""
        i = bisect_right(self._ys, y) - 1
        if i < 0:
            return None
        ln = self.lanes[i]
        return ln if y < ln.y + ln.h else None

    def lane_of(self, track: int, depth: int) -> Lane | None:
        """The lane of a (track, depth) row (or INSTANTS, SUMMARY, HEADER), None when not shown."""
        return self._by_key.get((track, depth))

    def lane_for(self, track: int, depth: int) -> Lane | None:
        """The lane that shows a (track, depth) row's slices: its own, else the compact row of
        its device ("devices together"), else None."""
        ln = self._by_key.get((track, depth))
        if ln is None and track in self._row_of:
            return self._by_key.get((self._row_of[track], SUMMARY))
        return ln

    def visible(self, y0: float, y1: float) -> list[Lane]:
        """Lanes intersecting content rows [y0, y1)."""
        i = max(bisect_right(self._ys, y0) - 1, 0)
        out = []
        for ln in self.lanes[i:]:
            if ln.y >= y1:
                break
            if ln.y + ln.h > y0:
                out.append(ln)
        return out


def device_roots(trace: Trace) -> list[int]:
    """The devices of a trace: device-kind tracks (devices, execution units, GPU streams) whose
    parent is not one, in track order."""
    tr = trace.tracks
    dev = np.isin(tr.kind, DEVICE_KINDS)
    return np.flatnonzero(dev & ~np.isin(tr.parent, np.flatnonzero(dev))).tolist()


def _in_tree_order(kids: dict[int, list[int]], wanted: set[int], hidden: set[int]) -> list[int]:
    """The ``wanted`` tracks in the order the lane tree shows them, skipping hidden subtrees."""
    out, stack = [], list(reversed(kids.get(-1, [])))
    while stack:
        t = stack.pop()
        if t in hidden:
            continue
        if t in wanted:
            out.append(t)
            continue
        stack.extend(reversed(kids.get(t, [])))
    return out


def filter_lanes(trace: Trace, text: str) -> tuple[set[int], set[int]]:
    """(tracks to hide, groups to open) for a lane filter: lanes whose name contains ``text``
    (case-insensitive) stay with their parents, so the tree still says where they are, and
    their children; the parents of matches open. Nothing is hidden for empty text."""
    needle = text.strip().lower()
    if not needle:
        return set(), set()
    kids = track_children(trace)
    parent = {c: p for p, cs in kids.items() for c in cs}
    keep: set[int] = set()
    opened: set[int] = set()
    for t in (c for cs in kids.values() for c in cs):
        if needle in trace.track_name(t).lower():
            stack = [t]
            while stack:  # the match and everything under it
                u = stack.pop()
                keep.add(u)
                stack.extend(kids.get(u, []))
            p = parent.get(t, -1)
            while p >= 0:
                keep.add(p)
                opened.add(p)
                p = parent.get(p, -1)
    return {c for cs in kids.values() for c in cs} - keep, opened
