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

from .counters import arg_values
from .stats import slices_of_kinds

SYNC_NAME = re.compile(r"synchron|sync\b|wait|barrier", re.IGNORECASE)
LAUNCH_NAME = re.compile(r"launch", re.IGNORECASE)
COPY_NAME = re.compile(r"memcpy|copy", re.IGNORECASE)


@dataclass
class Roles:
    """Slice id sets of one trace, computed once and shared by the passes."""

    trace: Trace

    @cached_property
    def device_ops(self) -> np.ndarray:
        """Work on execution units (or GPU streams, for imported traces)."""
        return slices_of_kinds(self.trace, (TrackKind.EXEC_UNIT, TrackKind.GPU_STREAM))

    @cached_property
    def transfers(self) -> np.ndarray:
        """Data moving over the PCIe link."""
        return slices_of_kinds(self.trace, (TrackKind.PCIE,))

    @cached_property
    def api_calls(self) -> np.ndarray:
        """Host runtime API calls."""
        return slices_of_kinds(self.trace, (TrackKind.RUNTIME_API,))

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
    def device_of_track(self) -> np.ndarray:
        """The device id of each track (-1 for host-side)."""
        return self.trace.tracks.device

    @cached_property
    def flow_into(self) -> tuple[np.ndarray, np.ndarray]:
        """(dst sorted, src) of all flows, to find a slice's sources by binary search."""
        o = np.argsort(self.trace.flows.dst, kind="stable")
        return self.trace.flows.dst[o], self.trace.flows.src[o]

    def sources(self, x: int) -> np.ndarray:
        """Slices with a flow into ``x``."""
        dst, src = self.flow_into
        return src[np.searchsorted(dst, x, "left"):np.searchsorted(dst, x, "right")]

    def root_call(self, x: int, limit: int = 16) -> int:
        """Follow flows back from ``x`` to the host API call that started its chain (-1: none)."""
        kinds = self.trace.tracks.kind
        for _ in range(limit):
            src = self.sources(x)
            if len(src) == 0:
                return -1
            calls = [int(s) for s in src if kinds[self.trace.slices.track[s]] == TrackKind.RUNTIME_API]
            if calls:
                return calls[0]
            x = int(src[0])
        return -1
