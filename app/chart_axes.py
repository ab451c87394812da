"""pyqtgraph axes that speak in the units a person reads: durations (``1.20 ms``) and
percentages, for the charts beside the timeline."""

from __future__ import annotations

import math
from typing import Any

import pyqtgraph as pg
from accelview.model.text.values import format_bandwidth, format_duration


class DurationAxis(pg.AxisItem):
    """Tick labels as durations; ``offset`` (ns) is subtracted first, so a chart whose x is ns
    from the trace start can count from the ruler's origin instead."""

    def __init__(self, orientation: str, **kwargs: Any) -> None:
        super().__init__(orientation, **kwargs)
        self.offset = 0.0
        self.log10 = False  # x is log10(ns): label 10**x

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        if self.log10:
            return [format_duration(10.0 ** v, 2) for v in values]
        shifted = [v - self.offset for v in values]
        widest = max((abs(v) for v in shifted), default=0.0)
        # enough significant digits that neighbouring ticks differ (ticks 1 ns apart at 235 µs: 7)
        digits = 3 if not spacing or widest <= spacing else min(max(3, int(math.log10(widest / spacing)) + 2), 10)
        return [format_duration(v, digits) for v in shifted]


class BandwidthAxis(pg.AxisItem):
    """Tick labels as bandwidth (``26.0 GB/s``) for charts without a known peak."""

    def __init__(self, orientation: str, **kwargs: Any) -> None:
        super().__init__(orientation, **kwargs)
        self.enableAutoSIPrefix(False)  # the labels carry their prefix

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        return [format_bandwidth(v) for v in values]
