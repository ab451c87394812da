"""The simulator's rare records (op cost templates, copies, events, graph replays) and its device
spec as plain lists and back, in place of pickles: the service rebuilds them from numbers,
strings and numeric arrays only, so a crafted stream can make nothing else."""

from __future__ import annotations

import dataclasses
from operator import attrgetter
from typing import Any

import numpy as np

from ..convert.records import DmaBytes, OpShape, Rare, op_shape
from ..convert.replays import ReplayRun, patch_row
from ..sim.device.command import Command
from ..sim.device.costs import OpCost
from ..sim.device.hbm import AccessPattern
from ..sim.device.opcounters import CostColumns
from ..sim.device.replay import GraphLayout, GraphRun
from ..sim.device.specs import FORMAT_TAG, DeviceSpec, parse_spec
from ..sim.device.transfer import DmaJob
from .plain import array, unarray

_JOB_FIELDS = attrgetter(*(f.name for f in dataclasses.fields(DmaJob)))  # read in C: copies come by the thousand
_COLUMN_FIELDS = [f.name for f in dataclasses.fields(CostColumns)]
_PATTERNS: dict[tuple[str, int], AccessPattern] = {}


def cost_plain(c: OpCost) -> list[Any]:
    """An op's cost: its work's fields, then its own (``OpCost`` field order)."""
    w = c.work
    work = [w.op, w.unit, w.dtype, w.flops, w.bytes_read, w.bytes_written,
            [w.read_pattern.kind, w.read_pattern.run_bytes], [w.write_pattern.kind, w.write_pattern.run_bytes],
            None if w.gemm is None else list(w.gemm), w.work_items]
    return [work, c.launch_ns, c.compute_ns, c.memory_ns, c.floor_ns, c.jitter, c.limiter, c.utilisation,
            c.dram_read_bytes, c.dram_write_bytes, c.ideal_ns, c.clock_hz, c.shape]


def _columns_plain(c: CostColumns) -> list[Any]:
    return [array(getattr(c, f)) for f in _COLUMN_FIELDS]


def _columns_of(p: list[Any]) -> CostColumns:
    return CostColumns(*map(unarray, p))


def layout_plain(g: GraphLayout) -> list[Any]:
    """What every replay of a graph shares."""
    return [g.name, g.names, array(g.units), array(g.which), g.base_args, g.base_limiters, _columns_plain(g.nodes),
            array(g.inner), g.launch, array(g.touched), array(g.touched_nodes), array(g.touched_pick),
            sorted(g.units_used)]


def layout_of(p: list[Any]) -> GraphLayout:
    """The layout :func:`layout_plain` wrote."""
    (name, names, units, which, base_args, base_limiters, nodes, inner, launch, touched, touched_nodes,
     touched_pick, used) = p
    return GraphLayout(str(name), [str(n) for n in names], unarray(units), unarray(which), list(base_args),
                       [str(x) for x in base_limiters], _columns_of(nodes), unarray(inner),
                       None if launch is None else float(launch), unarray(touched), unarray(touched_nodes),
                       unarray(touched_pick), frozenset(str(u) for u in used))


def run_plain(r: GraphRun, layout: int) -> list[Any]:
    """One replay; ``layout``: its layout's place in the frame's list of layouts."""
    return [layout, [cost_plain(c) for c in r.patch], r.patch_args, r.patch_limiters, array(r.jitter),
            array(r.body), array(r.end_off)]


def run_of(p: list[Any], layouts: list[GraphLayout]) -> ReplayRun:
    """The replay :func:`run_plain` wrote, as the converter reads it (no ``OpCost`` made)."""
    layout, patch, args, limiters, jitter, body, end_off = p
    return ReplayRun(layouts[layout], [_patch_row(c) for c in patch], list(args), [str(x) for x in limiters],
                     unarray(jitter), unarray(body), unarray(end_off))


def _patch_row(p: list[Any]) -> tuple[float, ...]:
    """A patched template's cost numbers from what :func:`cost_plain` wrote."""
    flops, read, written = p[0][3:6]
    return patch_row(*(float(v) for v in p[1:6]), float(p[10]), float(p[11]), int(read) + int(written),
                     float(flops), int(p[8]), int(p[9]), str(p[6]))


class FrameTables:
    """What the rare commands of one frame share, sent once: graph layouts, DMA jobs (by identity:
    copies of one size share one) and every command's progress segments as one float column."""

    def __init__(self) -> None:
        self.layouts: dict[int, tuple[int, GraphLayout]] = {}
        self.jobs: dict[int, tuple[int, DmaJob]] = {}
        self.segments: list[float] = []  # t0, t1, bytes moved, sharers of each segment, back to back

    def plain(self) -> dict[str, Any]:
        """The layouts and jobs, in place order (the segments go as a column of their own)."""
        return {"layouts": [layout_plain(lay) for _, lay in sorted(self.layouts.values(), key=lambda x: x[0])],
                "jobs": [list(_JOB_FIELDS(job)) for _, job in sorted(self.jobs.values(), key=lambda x: x[0])]}


def command_plain(c: Command, t: FrameTables) -> list[Any]:
    """A command that is not an op (copy, event record or wait, graph replay): the fields the
    service reads, its job, layout and segments as places in the frame's tables ``t``."""
    job = -1
    if c.job is not None:
        job = t.jobs.setdefault(id(c.job), (len(t.jobs), c.job))[0]
    run = None
    if c.graph is not None:
        lay = c.graph.layout
        run = run_plain(c.graph, t.layouts.setdefault(id(lay), (len(t.layouts), lay))[0])
    segments = c.segments
    for seg in segments:
        t.segments += seg
    return [c.cid, c.kind, c.stream, c.name, job, c.direction, run, c.args, c.start_ns, c.end_ns, c.engine, c.cause,
            c.data_start_ns, c.data_end_ns, len(segments)]


def shape_of(p: list[Any]) -> OpShape:
    """The op shape of a cost :func:`cost_plain` wrote (no ``OpCost`` made)."""
    _, unit, dtype, flops, read, written = p[0][:6]
    return op_shape(str(unit), str(dtype), int(read), int(written), float(flops), *(float(v) for v in p[1:5]),
                    str(p[6]), int(p[8]), int(p[9]), float(p[10]), float(p[11]))


def rares_of(others: list[Any], tables: dict[str, Any], segments: np.ndarray) -> list[tuple[int, Rare]]:
    """The frame's rare commands as records, with their places, from what :func:`command_plain`
    and :meth:`FrameTables.plain` wrote and the segment column."""
    layouts = [layout_of(p) for p in tables["layouts"]]
    jobs = [DmaBytes(int(f[1]), int(f[2]), int(f[6]), int(f[7]), int(f[8]), int(f[9])) for f in tables["jobs"]]
    if len(segments) % 4:
        raise ValueError(f"{len(segments)} numbers do not make whole progress segments")
    quads = [(a, b, m, int(n)) for a, b, m, n in segments.reshape(-1, 4).tolist()]
    out, at = [], 0
    for place, (cid, kind, stream, name, job, direction, run, args, start, end, engine, cause, dstart, dend,
                n) in others:
        if not isinstance(args, dict):
            raise ValueError(f"a command's arguments must be a map, not {type(args).__name__}")
        # every field by position (keywords cost twice as much: a pageable copy is a command a chunk)
        out.append((place, Rare(-1, kind, cid, stream, name, args, start, end, cause, engine, direction, dstart,
                                dend, quads[at:at + n], jobs[job] if job >= 0 else None,
                                None if run is None else run_of(run, layouts))))
        at += n
    if at != len(quads):
        raise ValueError(f"{len(quads)} progress segments for {at}")
    return out


def spec_plain(spec: DeviceSpec) -> dict[str, Any]:
    """A device spec as the JSON object of a spec file (what :func:`spec_of` reads back)."""
    raw = dataclasses.asdict(spec)
    return {"format": FORMAT_TAG, "source": raw.pop("source"), "spec": raw}


def spec_of(p: dict[str, Any]) -> DeviceSpec:
    """The spec :func:`spec_plain` wrote, checked as a spec file is."""
    raw = dict(p["spec"])
    raw["format"] = p["format"]
    return parse_spec(raw, str(p["source"]))
