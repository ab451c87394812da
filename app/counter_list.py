"""The list of counters that can get a strip under the timeline: the trace's base counter
tracks and the derived metrics (utilisation %, GB/s) the model can compute from them.
Checked entries get a strip; the series come from the model and are cached per trace."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from accelview.model.analysis.metrics.defaults import Series, default_strips
from accelview.model.text.clip import clip
from accelview.model.view.counter_lod import CounterLOD
from accelview.model.view.counter_order import counter_label, counter_order
from PySide6.QtCore import QAbstractListModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import QWidget

from .state import ViewState

_Index = QModelIndex | QPersistentModelIndex
MAX_METRIC_SAMPLES = 5_000_000  # derived series are computed eagerly; skip them beyond this


@dataclass(frozen=True)
class CounterEntry:
    """One selectable series: a counter track (``track`` >= 0) or a derived metric."""

    label: str
    unit: str
    description: str
    track: int = -1
    metric: str = ""
    device: int = 0


def _derived(trace, entries: list[CounterEntry]) -> tuple[list[CounterEntry], dict[int, tuple]]:
    """Derived-metric entries the model can evaluate on this trace, with their series."""
    try:
        from accelview.model.analysis.metrics.evaluate import counter_tracks_for, metric_series, sampled_metrics
        from accelview.model.analysis.metrics.taxonomy import MetricRegistry

        reg = MetricRegistry.load()
        names = sampled_metrics(trace, reg)
    except Exception:  # no taxonomy, or one this trace's counters do not fit: base counters only
        return [], {}
    # the devices with counters (host counters are on device -1 and feed no device metric)
    devices = sorted({int(trace.tracks.device[t]) for t in trace.counter_tracks.track.tolist()} - {-1})
    out, series = [], {}
    for name in names:
        m = reg.metrics[name]
        for d in devices:
            if not all(counter_tracks_for(trace, reg, b, d) for b in reg.inputs_of(name)):
                continue
            try:
                ts, vals = metric_series(trace, reg, name, d)
            except Exception:  # e.g. a constant the device spec lacks
                continue
            suffix = f" (dev {d})" if len(devices) > 1 else ""
            series[len(entries) + len(out)] = (ts, vals)
            out.append(CounterEntry(f"{name}{suffix}", m.unit, f"derived: {m.expr}", metric=name, device=d))
    return out, series


class CounterListModel(QAbstractListModel):
    """Base counters then derived metrics, checkable: checked rows get a strip."""

    def __init__(self, state: ViewState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.entries: list[CounterEntry] = []
        self.checked: list[int] = []  # rows, in strip order
        self._series: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._lods: dict[int, CounterLOD] = {}
        self._means: dict[tuple[int, int, int], float] = {}
        state.trace_changed.connect(self.reload)
        self.reload()

    def reload(self) -> None:
        """Re-read the counters of the current trace; the model's default strips start checked."""
        self.beginResetModel()
        tr = self.state.trace
        self.entries, self._series, self._lods, self._means = [], {}, {}, {}
        if tr is not None:
            ct = tr.counter_tracks
            for i in counter_order(tr):  # link counters beside their device's PCIe counters
                self.entries.append(CounterEntry(clip(counter_label(tr, i)), tr.strings[ct.unit[i]],
                                                 tr.strings[ct.description[i]], track=int(ct.track[i])))
            if len(tr.counters) <= MAX_METRIC_SAMPLES:
                derived, series = _derived(tr, self.entries)
                self.entries += derived
                self._series.update(series)
        self.checked = default_strips(self._described(tr)) if tr is not None else []
        self.endResetModel()

    def _described(self, tr) -> list[Series]:
        """Each entry as the model's default-strip rule sees it (name, block, number of samples)."""
        ct = tr.counter_tracks
        counts = np.bincount(tr.counters.track, minlength=len(tr.tracks)) if len(tr.counters) else None
        block = {int(t): tr.strings[ct.block[i]] for i, t in enumerate(ct.track.tolist())}
        out = []
        for row, e in enumerate(self.entries):
            if e.track >= 0:
                n = int(counts[e.track]) if counts is not None and e.track < len(counts) else 0
                out.append(Series(e.label, block=block.get(e.track, ""), samples=n))
            else:
                out.append(Series(e.label, metric=e.metric, samples=len(self._series[row][0])))
        return out

    def lod(self, row: int) -> CounterLOD:
        """The min/max index of one entry's series (built once per trace)."""
        if row not in self._lods:
            self._lods[row] = CounterLOD(*self.series(row))
        return self._lods[row]

    def range_mean(self, row: int, t0: int, t1: int) -> float:
        """An entry's mean over absolute [t0, t1) as the model computes it (time-weighted for
        gauges; a derived metric over the window); NaN when it cannot. Cached per range."""
        key = (row, int(t0), int(t1))
        if key not in self._means:
            e, tr = self.entries[row], self.state.trace
            try:
                if e.track >= 0:
                    from accelview.model.analysis.metrics.counters import window_mean

                    value = window_mean(tr, e.track, int(t0), int(t1))
                else:
                    from accelview.model.analysis.metrics.evaluate import window_metric
                    from accelview.model.analysis.metrics.taxonomy import MetricRegistry

                    value = window_metric(tr, MetricRegistry.load(), e.metric, int(t0), int(t1), e.device)
            except Exception:  # no analysis module, or the window has no samples
                value = float("nan")
            if len(self._means) > 256:
                self._means.clear()
            self._means[key] = value
        return self._means[key]

    def series(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """(ts_ns, value) of one entry."""
        e = self.entries[row]
        if e.track >= 0:
            return self.state.trace.counter_series(e.track)
        return self._series[row]

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.entries)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid() or not 0 <= index.row() < len(self.entries):
            return None
        e = self.entries[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{e.label} ({e.unit})" if e.unit else e.label
        if role == Qt.ItemDataRole.CheckStateRole:
            return Qt.CheckState.Checked if index.row() in self.checked else Qt.CheckState.Unchecked
        if role == Qt.ItemDataRole.ToolTipRole:
            return e.description or None
        return None

    def flags(self, index: _Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsUserCheckable

    def setData(self, index: _Index, value: object, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid() or role != Qt.ItemDataRole.CheckStateRole:
            return False
        row = index.row()
        on = value in (Qt.CheckState.Checked, Qt.CheckState.Checked.value, 2, True)
        if on and row not in self.checked:
            self.checked.append(row)
        elif not on and row in self.checked:
            self.checked.remove(row)
        self.dataChanged.emit(index, index, [role])
        return True
