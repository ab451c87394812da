"""``analyze`` of one trace in a forked helper (:mod:`.helper`) while this process does other
work: ``accelview diff`` analyses its two runs at once this way.

The report crosses as plain data: a JSON header (phases, findings, the small tables) and numpy
columns (op labels, gaps, the critical path, the findings' slices), with the sets of the trace's
roles the analysis found (device ops, copies, blocking calls, flow roots ...), so the caller
does not find them again.
"""

from __future__ import annotations

import mmap
from dataclasses import asdict, fields
from typing import Any

import numpy as np
from accelview.model.trace import Trace

from . import helper
from .critical_path import CriticalPath, path_columns, path_of
from .findings import Finding
from .gaps import Gaps
from .op_classes import OpLabels
from .report import Phase, Report, analyze
from .roles import Roles
from .stats import OpStat

_OPS = [f.name for f in fields(OpLabels)]
_GAPS = [f.name for f in fields(Gaps)]
# Roles' cached sets sent with the report (arrays, or the pair ``chain``): those a diff uses
# (compare/runs.py); the others are cheaper to find again than to send (``end``: 80 MB at 10M slices)
_ROLES = ("device_ops", "copies", "blocking_calls", "chain")


class ForkedAnalysis:
    """``analyze(trace, tables=tables)`` running in a forked helper; :meth:`result` waits for it."""

    def __init__(self, trace: Trace, running: helper.Helper) -> None:
        self.trace, self._helper = trace, running

    def result(self) -> tuple[Report, Roles] | None:
        """The helper's report and the trace's roles it found on the way, or None when it failed
        (analyse in-process then)."""
        out = self._helper.result()
        return None if out is None else from_plain(self.trace, *out)

    def cancel(self) -> None:
        """Stop the helper without its report."""
        self._helper.cancel()


def start(trace: Trace, tables: bool = True, min_slices: int | None = None) -> ForkedAnalysis | None:
    """Start analysing ``trace`` in a helper, or None where that is unsafe or not worth it
    (:func:`.helper.start`)."""
    def work() -> tuple[dict[str, Any], helper.Columns]:
        roles = Roles(trace)
        return to_plain(analyze(trace, roles, tables=tables), roles)

    running = helper.start(work, len(trace.slices), min_slices)
    return None if running is None else ForkedAnalysis(trace, running)


def to_plain(r: Report, roles: Roles | None = None) -> tuple[dict[str, Any], helper.Columns]:
    """A report (and the sets its roles computed) as a JSON-able header and named columns."""
    cols: helper.Columns = {f"ops.{k}": getattr(r.ops, k) for k in _OPS}
    for k, v in (vars(roles) if roles is not None else {}).items():
        if k in _ROLES:  # cached sets: an array, or a tuple of them
            cols |= {f"roles.{k}": v} if isinstance(v, np.ndarray) else {f"roles.{k}.{i}": x for i, x in enumerate(v)}
    cols |= {f"gaps.{k}": getattr(r.gaps, k) for k in _GAPS}
    path_head: dict[str, int] | None = None
    if r.critical_path is not None:
        path_head, path_cols = path_columns(r.critical_path)
        cols |= {f"path.{k}": v for k, v in path_cols.items()}
    findings = []
    for i, f in enumerate(r.findings):
        cols[f"finding.{i}"] = np.asarray(f.slices, np.int64)
        findings.append({k: v for k, v in asdict(f).items() if k != "slices"})
    head = {"phases": [asdict(p) for p in r.phases], "findings": findings,
            "stats": [asdict(s) for s in r.stats], "critical_path_by_resource": r.critical_path_by_resource,
            "gpu": r.gpu, "lane_busy": list(r.lane_busy.items()), "transfer_overlap": r.transfer_overlap,
            "path": path_head, "communication": r.communication}
    return head, cols


def from_plain(trace: Trace, head: dict[str, Any], cols: helper.Columns) -> tuple[Report, Roles]:
    """The report and roles :func:`to_plain` took, on ``trace``."""
    path: CriticalPath | None = None
    if head["path"] is not None:
        path = path_of(head["path"], {k[len("path."):]: v for k, v in cols.items() if k.startswith("path.")})
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


def pack(r: Report, roles: Roles | None = None) -> bytearray:
    """A report's bytes as the helper sends them (for tests)."""
    return helper.pack(*to_plain(r, roles))


def decode(trace: Trace, buf: bytearray | mmap.mmap) -> tuple[Report, Roles]:
    """The report and roles in :func:`pack`'s bytes."""
    return from_plain(trace, *helper.decode(buf))
