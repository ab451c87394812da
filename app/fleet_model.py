"""The fleet view's table: one row per analysed host of a FleetReport (``analyze_fleet``'s dict),
with its rank, lateness, lost time, one chosen metric and its utilisation strip, sortable by any
numeric field the report gives a host (nested ones too, as ``clock.error_ns``)."""

from __future__ import annotations

import math
import re
from typing import Any

from accelview.model.text.values import MISSING, format_duration
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor

Index = QModelIndex | QPersistentModelIndex
RANK, HOST, LATE, LOST, METRIC, STRIP = range(6)
FIXED = {RANK: "rank", HOST: "host", LATE: "late_ns", LOST: "lost_ns", STRIP: "busy"}
BUSY = "busy"  # the mean of a host's utilisation strip: a sort key, not a field of the report
SKIP = {"utilisation", "map", "path", "host"}  # not metrics (lists, the clock map, names)
STRIP_ROLE = Qt.ItemDataRole.UserRole + 1  # the row's utilisation list, for the strip delegate
HOST_ROLE = Qt.ItemDataRole.UserRole + 2  # the row's host name


LABELS = {BUSY: "busy (mean)", "host": "host name"}  # keys whose name alone reads poorly


def label(key: str) -> str:
    """How a metric key reads in the sort box and the header: ``late_ns`` → ``late``,
    ``clock.error_ns`` → ``clock error``."""
    return LABELS.get(key) or key.removesuffix("_ns").replace("_", " ").replace(".", " ")


def metric_keys(report: dict[str, Any]) -> list[str]:
    """Every numeric metric the report gives its hosts (``a.b`` for nested ones), rank, lateness
    and lost time first, then the mean busy fraction, then the rest in the report's order."""
    keys: list[str] = []

    def walk(d: dict[str, Any], prefix: str) -> None:
        for k, v in d.items():
            if k in SKIP:
                continue
            if isinstance(v, dict):
                walk(v, f"{prefix}{k}.")
            elif isinstance(v, int | float) and not isinstance(v, bool) and f"{prefix}{k}" not in keys:
                keys.append(f"{prefix}{k}")

    for h in report.get("hosts", []):
        walk(h, "")
    first = [k for k in ("rank", "late_ns", "lost_ns") if k in keys]
    return first + [BUSY, "host"] + [k for k in keys if k not in first]


def busy(host: dict[str, Any]) -> float:
    """The mean busy fraction of a host's utilisation strip (NaN bins are no data)."""
    vals = [float(v) for v in host.get("utilisation") or () if v is not None and not math.isnan(float(v))]
    return sum(vals) / len(vals) if vals else math.nan


def value(host: dict[str, Any], key: str) -> Any:
    """A host's value of metric ``key`` (NaN when it has none)."""
    if key == BUSY:
        return busy(host)
    v: Any = host
    for part in key.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    if key == "host":
        return str(v or "")
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else math.nan


def _natural(name: str) -> tuple[Any, ...]:
    """host2 before host10."""
    return tuple(int(p) if p.isdigit() else p.lower() for p in re.split(r"(\d+)", name))


def text(key: str, v: Any) -> str:
    """A metric's value as a cell shows it: durations in their unit, fractions as percentages."""
    if isinstance(v, str):
        return v
    if v is None or math.isnan(v):
        return MISSING
    if key.endswith("_ns"):
        return format_duration(v)
    if key == BUSY:
        return f"{v:.0%}"
    return str(int(v)) if float(v).is_integer() else f"{v:.3g}"


def default_order(key: str) -> Qt.SortOrder:
    """Rank and name ascending (rank 1 first); every other metric largest first."""
    return Qt.SortOrder.AscendingOrder if key in ("rank", "host") else Qt.SortOrder.DescendingOrder


class FleetModel(QAbstractTableModel):
    """The report's hosts as rows in a sortable order; ``metric`` is the key of the METRIC column."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.hosts: list[dict[str, Any]] = []
        self.order: list[int] = []
        self.metric = "compute_ns"
        self.sort_key, self.sort_order = "rank", Qt.SortOrder.AscendingOrder
        self.stragglers: set[str] = set()  # hosts a straggler finding names: their names in ``mark``
        self.mark: QColor | None = None

    def set_report(self, report: dict[str, Any] | None) -> None:
        """Show ``report``'s hosts (None: none), kept in the current sort."""
        self.beginResetModel()
        self.hosts = list((report or {}).get("hosts", []))
        self.order = list(range(len(self.hosts)))
        self._sort()
        self.endResetModel()

    def key_of(self, column: int) -> str:
        """The metric a column shows."""
        return self.metric if column == METRIC else FIXED[column]

    def set_metric(self, key: str) -> None:
        """Show metric ``key`` in the METRIC column."""
        self.metric = key
        self.headerDataChanged.emit(Qt.Orientation.Horizontal, METRIC, METRIC)
        self.dataChanged.emit(self.index(0, METRIC), self.index(self.rowCount() - 1, METRIC))

    def host_at(self, row: int) -> dict[str, Any]:
        """The host shown at ``row``."""
        return self.hosts[self.order[row]]

    def row_of(self, name: str) -> int:
        """The row showing host ``name`` (-1: none)."""
        return next((r for r, i in enumerate(self.order) if self.hosts[i].get("host") == name), -1)

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.layoutAboutToBeChanged.emit()
        self.sort_key, self.sort_order = self.key_of(column), order
        self._sort()
        self.layoutChanged.emit()

    def _sort(self) -> None:
        key, hosts = self.sort_key, self.hosts

        def rank(i: int) -> float:
            r = value(hosts[i], "rank")
            return math.inf if math.isnan(r) else r

        by_rank = sorted(range(len(hosts)), key=rank)  # ties keep rank order (the sorts are stable)
        desc = self.sort_order == Qt.SortOrder.DescendingOrder
        if key == "host":
            self.order = sorted(by_rank, key=lambda i: _natural(value(hosts[i], key)), reverse=desc)
            return
        known = [i for i in by_rank if not math.isnan(value(hosts[i], key))]
        unknown = [i for i in by_rank if math.isnan(value(hosts[i], key))]  # no value: last either way
        self.order = sorted(known, key=lambda i: value(hosts[i], key), reverse=desc) + unknown

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self.hosts)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else 6

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < 6:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            if section in (STRIP, HOST):  # the strip's: a time ruler; the names need no "name"
                return "host" if section == HOST else ""
            return label(self.key_of(section))
        if role == Qt.ItemDataRole.ToolTipRole:
            return {RANK: "1 = the host the others wait for most", LATE: "total time it arrived after the median "
                    "participant", LOST: "time the other participants waited for it",
                    STRIP: "compute-busy fraction of its devices over the fleet's span (dark: idle, bright: "
                    "busy; collectives count as idle); sorts by the mean"}.get(section)
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self.order):
            return None
        host, col = self.host_at(index.row()), index.column()
        if role == Qt.ItemDataRole.DisplayRole and col != STRIP:
            key = self.key_of(col)
            return text(key, value(host, key))
        if role == STRIP_ROLE:
            return host.get("utilisation") or []
        if role == HOST_ROLE:
            return str(host.get("host", ""))
        if role == Qt.ItemDataRole.ToolTipRole:
            return (f"{host.get('host')}: rank {text('rank', value(host, 'rank'))}, "
                    f"late {text('late_ns', value(host, 'late_ns'))}, "
                    f"others lost {text('lost_ns', value(host, 'lost_ns'))}, "
                    f"busy {text(BUSY, busy(host))}\n{host.get('path', '')}\nEnter or double-click: its timeline")
        if role == Qt.ItemDataRole.ForegroundRole and col == HOST and host.get("host") in self.stragglers:
            return self.mark
        if role == Qt.ItemDataRole.TextAlignmentRole and col not in (HOST, STRIP):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None
