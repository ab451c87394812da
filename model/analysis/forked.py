"""``analyze`` of one trace in a forked helper on the other core, while this process does other
work (``accelview diff`` analyses its two runs at once this way).

The helper inherits the trace through ``fork`` (nothing is copied) and sends its report back
through a pipe as plain data: one JSON header (phases, findings, the small tables) and raw numpy
columns (op labels, gaps, the critical path, the findings' slices), never pickle. Where forking
is unsafe or not worth it (:func:`~accelview.model.forking.fork_safe`), or the helper fails, the
caller analyses in-process, so results and errors are the same either way.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from dataclasses import asdict, fields
from typing import Any

import numpy as np
from accelview.model.forking import fork_safe, release
from accelview.model.trace import Trace

from .critical_path import CriticalPath
from .findings import Finding
from .gaps import Gaps
from .op_classes import OpLabels
from .report import Phase, Report, analyze
from .roles import Roles
from .stats import OpStat

MIN_SLICES = 200_000  # below this a helper costs more than it saves
_LEN = struct.Struct("<Q")


class ForkedAnalysis:
    """``analyze(trace, tables=tables)`` running in a forked helper; :meth:`report` waits for it.

    The helper writes the encoded report into an anonymous memory file made before the fork and
    then its size into a pipe; this process maps the file copy-on-write, so the columns are
    neither copied through the pipe nor made again here."""

    def __init__(self, trace: Trace, tables: bool = True) -> None:
        self.trace = trace
        self._file = os.memfd_create("accelview-analysis")
        read, write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the helper: never returns into the caller's code
            status = 1
            try:
                os.close(read)
                roles = Roles(trace)
                size, parts = encode(analyze(trace, roles, tables=tables), roles)
                os.ftruncate(self._file, size)
                raw = np.frombuffer(mmap.mmap(self._file, size), np.uint8)
                for at, part in parts:
                    raw[at:at + len(part)] = part
                os.write(write, _LEN.pack(size))
                status = 0
            finally:
                os._exit(status)
        os.close(write)
        self._read = read

    def result(self) -> tuple[Report, Roles] | None:
        """The helper's report and the trace's roles it found on the way, or None when it failed
        (analyse in-process then)."""
        try:
            with os.fdopen(self._read, "rb") as f:
                head = f.read(_LEN.size)  # the helper's size line, or nothing when it died
            if len(head) < _LEN.size:
                return None
            size = _LEN.unpack(head)[0]
            return decode(self.trace, mmap.mmap(self._file, size, flags=mmap.MAP_PRIVATE,
                                                prot=mmap.PROT_READ | mmap.PROT_WRITE))
        finally:
            os.close(self._file)  # the mapping keeps the pages
            release(self.pid)  # reaped later: its memory is torn down on the other core


def start(trace: Trace, tables: bool = True, min_slices: int | None = None) -> ForkedAnalysis | None:
    """Start analysing ``trace`` in a helper, or None where that is unsafe or not worth it
    (fewer than ``min_slices`` slices, MIN_SLICES by default)."""
    if len(trace.slices) < (MIN_SLICES if min_slices is None else min_slices) or not fork_safe():
        return None
    return ForkedAnalysis(trace, tables)


def _plain(o: Any) -> Any:
    """numpy scalars and arrays in the JSON header as Python values."""
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"{type(o).__name__} is not plain data")


_OPS = [f.name for f in fields(OpLabels)]
_GAPS = [f.name for f in fields(Gaps)]
_PATH = ["kind", "start_ns", "end_ns", "slice_id", "via"]
# Roles' cached sets sent with the report: arrays, or pairs of arrays (device_busy, chain)
_ROLES = ("device_ops", "transfers", "ops_order", "device_busy", "copies", "api_calls", "sync_calls", "kinds", "end",
          "chain", "blocking_calls")


def encode(r: Report, roles: Roles | None = None) -> tuple[int, list[tuple[int, np.ndarray]]]:
    """A report (and the roles that made it: their sets computed so far) as bytes: its size, and
    (offset, uint8 array) parts that fill it: the header's length, the JSON header, then each
    column's raw bytes (8-aligned)."""
    cols: dict[str, np.ndarray] = {f"ops.{k}": getattr(r.ops, k) for k in _OPS}
    for k, v in (vars(roles) if roles is not None else {}).items():
        if k in _ROLES:  # cached sets: an array, or a tuple of them
            cols |= {f"roles.{k}": v} if isinstance(v, np.ndarray) else {f"roles.{k}.{i}": x for i, x in enumerate(v)}
    cols |= {f"gaps.{k}": getattr(r.gaps, k) for k in _GAPS}
    if r.critical_path is not None:
        cols |= {f"path.{k}": getattr(r.critical_path, k) for k in _PATH}
    findings = []
    for i, f in enumerate(r.findings):
        cols[f"finding.{i}"] = np.asarray(f.slices, np.int64)
        findings.append({k: v for k, v in asdict(f).items() if k != "slices"})
    layout, offset, data = [], 0, []
    for name, a in cols.items():
        if a.dtype.hasobject:
            raise TypeError(f"{name}: object columns are not plain data")
        a = np.ascontiguousarray(a).reshape(-1)
        layout.append((name, a.dtype.str, len(a), offset))
        data.append((offset, a.view(np.uint8)))
        offset += -(-a.nbytes // 8) * 8
    head = {"layout": layout, "phases": [asdict(p) for p in r.phases], "findings": findings,
            "stats": [asdict(s) for s in r.stats], "critical_path_by_resource": r.critical_path_by_resource,
            "gpu": r.gpu, "lane_busy": list(r.lane_busy.items()), "transfer_overlap": r.transfer_overlap,
            "path_by_resource": r.critical_path.by_resource_ns if r.critical_path is not None else None,
            "communication": r.communication}
    text = json.dumps(head, default=_plain).encode()
    text += b" " * (-len(text) % 8)
    base = _LEN.size + len(text)
    parts = [(0, np.frombuffer(_LEN.pack(len(text)) + text, np.uint8))]
    parts += [(base + at, a) for at, a in data]
    return base + offset, parts


def pack(r: Report, roles: Roles | None = None) -> bytearray:
    """:func:`encode`'s bytes in one buffer."""
    size, parts = encode(r, roles)
    buf = bytearray(size)
    raw = np.frombuffer(buf, np.uint8)
    for at, part in parts:
        raw[at:at + len(part)] = part
    return buf


def decode(trace: Trace, buf: bytearray | mmap.mmap) -> tuple[Report, Roles]:
    """The report and roles :func:`encode` took, on ``trace`` (the columns are views of ``buf``)."""
    n = _LEN.unpack_from(buf)[0]
    head = json.loads(bytes(buf[_LEN.size:_LEN.size + n]))
    base = _LEN.size + n
    cols = {}
    for name, dtype, count, at in head["layout"]:
        cols[name] = np.frombuffer(buf, np.dtype(dtype), count, base + at)
    path = None
    if head["path_by_resource"] is not None:
        path = CriticalPath(*(cols[f"path.{k}"] for k in _PATH), by_resource_ns=head["path_by_resource"])
    findings = [Finding(**f, slices=cols[f"finding.{i}"].tolist()) for i, f in enumerate(head["findings"])]
    roles = Roles(trace)
    for name, col in cols.items():
        if name.startswith("roles."):
            key, _, i = name[len("roles."):].partition(".")
            if not i:
                vars(roles)[key] = col  # what the cached property would compute
            elif i == "0":
                vars(roles)[key] = tuple(cols[f"roles.{key}.{j}"] for j in range(2))
    return Report(trace, OpLabels(*(cols[f"ops.{k}"] for k in _OPS)), Gaps(*(cols[f"gaps.{k}"] for k in _GAPS)),
                  [Phase(**p) for p in head["phases"]], findings, [OpStat(**s) for s in head["stats"]],
                  head["critical_path_by_resource"], head["gpu"], {int(k): v for k, v in head["lane_busy"]},
                  head["transfer_overlap"], path, head["communication"]), roles
