"""What each slice is, from what a trace reports: device ops, transfers, host API calls, syncs.

Track kinds say where a slice ran; names and arguments say what it was. Importers and the
capture follow the same conventions (docs/FORMAT.md, "Conventions"), so the passes work on both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from accelview.model.schema import TrackKind
from accelview.model.trace import Trace

from . import intervals as iv
from .metrics.counters import arg_values
from .stats import slices_of_kinds

# Host calls that block until the device is done (cudaDeviceSynchronize, cudaStreamSynchronize,
# ...); a stream's wait on an event (cudaStreamWaitEvent) does not block the host.
SYNC_NAME = re.compile(r"synchroni[sz]e|\bsync\b|barrier", re.IGNORECASE)
HOST_COPY_NAME = re.compile(r"^memcpy\s*(htod|dtoh|ptop|htoh)", re.IGNORECASE)
PAGEABLE_NAME = re.compile(r"pageable", re.IGNORECASE)
PINNED_NAME = re.compile(r"pinned", re.IGNORECASE)
# Device-side waits that profilers draw on streams (Kineto's "Stream Wait Event", category
# cuda_sync): a call that queued one did not wait for it, so it never makes the call blocking.
DEVICE_WAIT_NAME = re.compile(r"\bwait\b|event sync", re.IGNORECASE)
# Categories of runtime API calls that profilers draw on host threads (Kineto's cuda_runtime ...).
RUNTIME_CATEGORIES = ("cuda_runtime", "cuda_driver", "hip_runtime", "mtia_runtime", "xpu_runtime", "runtime")


def slice_id_type(n: int) -> type[np.signedinteger]:
    """The integer type of per-slice arrays of slice ids (-1: none) for ``n`` slices: int32 while
    it holds them, halving the arrays that every slice of a large capture gets."""
    return np.int32 if n < 2**31 else np.int64


@dataclass
class Roles:
    """Slice id sets of one trace, computed once and shared by the passes."""

    trace: Trace

    @cached_property
    def device_ops(self) -> np.ndarray:
        """Work on execution units (or GPU streams, for imported traces); annotations that
        profilers draw on stream lanes (``gpu_user_annotation``) are not work."""
        ids = slices_of_kinds(self.trace, (TrackKind.EXEC_UNIT, TrackKind.GPU_STREAM))
        cats = [c for c in range(len(self.trace.strings)) if "annotation" in self.trace.strings[c]]
        return ids[~np.isin(self.trace.slices.category[ids], cats)] if cats else ids

    @cached_property
    def transfers(self) -> np.ndarray:
        """Data moving over the PCIe link."""
        return slices_of_kinds(self.trace, (TrackKind.PCIE,))

    @cached_property
    def ops_order(self) -> np.ndarray:
        """Positions in ``device_ops`` that sort them by start (one sort shared by the passes)."""
        return np.argsort(self.trace.slices.start_ns[self.device_ops], kind="stable")

    @cached_property
    def device_busy(self) -> tuple[np.ndarray, np.ndarray]:
        """When any device ran any op: the union of all device ops, sorted and disjoint."""
        ids = self.device_ops[self.ops_order]
        s = self.trace.slices.start_ns[ids]
        return iv.union(s, s + self.trace.slices.dur_ns[ids], presorted=True)

    @cached_property
    def copies(self) -> np.ndarray:
        """One slice per copy: the DMA engine's (it carries bytes, direction, pinned); traces
        without DMA lanes fall back to the PCIe slices, then to host↔device memcpys that
        profilers draw on GPU streams (Kineto's ``Memcpy HtoD (Pinned -> Device)``)."""
        dma = slices_of_kinds(self.trace, (TrackKind.DMA_ENGINE,))
        if len(dma) or len(self.transfers):
            return dma if len(dma) else self.transfers
        return self.named(self.device_ops, HOST_COPY_NAME)

    def pinned(self, ids: np.ndarray) -> np.ndarray:
        """Per copy: 1 from pinned host memory, 0 from pageable, NaN when the trace does not say
        (a ``pinned`` argument, else the memcpy's name: ``(Pageable -> Device)``)."""
        out = self.arg("pinned", ids)
        names = self.trace.slices.name[ids]
        for n in np.unique(names[np.isnan(out)]).tolist():
            text = self.trace.strings[n]
            m = np.isnan(out) & (names == n)
            out[m] = 0.0 if PAGEABLE_NAME.search(text) else 1.0 if PINNED_NAME.search(text) else np.nan
        return out

    @cached_property
    def api_calls(self) -> np.ndarray:
        """Host runtime API calls: slices on runtime API lanes, and runtime calls that profilers
        draw on host threads (by category: ``cuda_runtime`` ...)."""
        t = self.trace
        lanes = slices_of_kinds(t, (TrackKind.RUNTIME_API,))
        cats = [c for c in (t.strings.lookup(n) for n in RUNTIME_CATEGORIES) if c >= 0]
        if not cats:
            return lanes
        threads = slices_of_kinds(t, (TrackKind.HOST_THREAD,))
        return np.union1d(lanes, threads[np.isin(t.slices.category[threads], cats)])

    def named(self, ids: np.ndarray, pattern: re.Pattern[str]) -> np.ndarray:
        """The ids whose slice name matches ``pattern``."""
        names = self.trace.slices.name[ids]
        uniq = np.unique(names)
        hits = [n for n in uniq if pattern.search(self.trace.strings[n])]
        return ids[np.isin(names, hits)]

    @cached_property
    def sync_calls(self) -> np.ndarray:
        """Host calls that block until the device (or an event) is done."""
        return self.named(self.api_calls, SYNC_NAME)

    def arg(self, key: str, ids: np.ndarray) -> np.ndarray:
        """A numeric argument of each slice (NaN where absent)."""
        return arg_values(self.trace, key, ids)

    @cached_property
    def kinds(self) -> np.ndarray:
        """The track kind of every slice."""
        return self.trace.tracks.kind[self.trace.slices.track]

    @cached_property
    def end(self) -> np.ndarray:
        """The end of every slice (start + duration), made once for the passes that need it."""
        return self.trace.slices.start_ns + self.trace.slices.dur_ns

    @cached_property
    def chain(self) -> tuple[np.ndarray, np.ndarray]:
        """Per slice: the runtime API call at the root of its flow chain, and the slice that
        submitted it to the device (its flow source); -1 where none. Followed a few hops back
        for the flow destinations only, all at once."""
        t = self.trace
        n = len(t.slices)
        is_api = np.zeros(n, bool)
        is_api[self.api_calls] = True
        parent = np.full(n, -1, slice_id_type(n))
        parent[t.flows.dst] = t.flows.src
        root = np.full(n, -1, slice_id_type(n))
        root[self.api_calls] = self.api_calls
        targets = np.unique(t.flows.dst)
        found = root[targets]
        cur = parent[targets]
        for _ in range(6):
            ok = cur >= 0
            safe = np.maximum(cur, 0)
            hit = ok & (found < 0) & is_api[safe]
            found[hit] = cur[hit]
            cur = np.where(ok, parent[safe], -1)
        root[targets] = found
        return root, parent

    @cached_property
    def blocking_calls(self) -> np.ndarray:
        """Host calls that waited for the device: synchronising calls, and calls (a synchronous
        copy) that returned only after the device work they started had finished."""
        t = self.trace
        root, _ = self.chain
        end = self.end
        work = np.concatenate((self.device_ops, self.copies))
        names = t.slices.name[work]
        waits = [n for n in np.unique(names).tolist() if DEVICE_WAIT_NAME.search(t.strings[n])]
        work = work[(root[work] >= 0) & ~np.isin(names, waits)]
        calls = self.api_calls  # sorted: each work's root call found by search, no array of every slice
        work_end = np.full(len(calls), -1, np.int64)
        np.maximum.at(work_end, np.searchsorted(calls, root[work]), end[work])
        waited = calls[(work_end >= 0) & (end[calls] >= work_end)]
        return np.union1d(self.sync_calls, waited)

