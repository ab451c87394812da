"""The statistics table as text: the cells the app's Statistics panel and ``accelview stats``
show, an aligned text table, and CSV with raw numbers (ns, FLOP/s, bytes/s) for spreadsheets."""

from __future__ import annotations

import csv
import io
import math

from accelview.model.analysis.stats_table import StatsTable

from .values import MISSING, format_bandwidth, format_count, format_duration, format_percent, format_value

HEADERS = ("count", "total", "mean", "p50", "p95", "p99", "share", "bottleneck", "FLOP/s", "bandwidth")
CSV_HEADERS = ("count", "total_ns", "mean_ns", "p50_ns", "p95_ns", "p99_ns", "share", "bottleneck",
               "flops_per_s", "bytes_per_s")


def headers(table: StatsTable) -> tuple[str, ...]:
    """Column titles: the grouping (name, lane or phase), then the statistics."""
    return (table.by, *HEADERS)


def cells(table: StatsTable, i: int) -> tuple[str, ...]:
    """Row ``i`` as it prints: durations, shares and rates in units a person reads."""
    return (table.keys[i], format_count(int(table.count[i])),
            *(format_duration(float(c[i])) for c in (table.total_ns, table.mean_ns, table.p50_ns, table.p95_ns,
                                                      table.p99_ns)),
            format_percent(float(table.share[i])), table.bottleneck[i] or MISSING,
            format_value(float(table.flops_per_s[i]), "FLOP/s"), format_bandwidth(float(table.bytes_per_s[i])))


def format_stats(table: StatsTable, top: int | None = None) -> str:
    """An aligned text table of the first ``top`` rows (all when None), with a line saying
    what was counted."""
    rows = [headers(table), *(cells(table, i) for i in range(len(table) if top is None else min(top, len(table))))]
    width = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    width[0] = min(width[0], 60)
    lines = []
    for r in rows:
        key = r[0] if len(r[0]) <= width[0] else r[0][: width[0] - 1] + "…"
        lines.append("  ".join([key.ljust(width[0]), *(v.rjust(w) for v, w in zip(r[1:], width[1:], strict=True))]))
    total = int(table.total_ns.sum())
    shown = "" if top is None or top >= len(table) else f", top {top} shown"
    head = (f"{format_count(int(table.count.sum()))} slices of device work in {format_count(len(table))} "
            f"{table.by}{'s' if len(table) != 1 else ''}{shown}, {format_duration(total)} in all")
    return "\n".join([head, *lines])


def stats_csv(table: StatsTable) -> str:
    """Every row as CSV with raw numbers (empty where a rate is unknown)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow((table.by, *CSV_HEADERS))
    for i in range(len(table)):
        row = table.row(i)
        w.writerow([row[table.by], *("" if isinstance(row[k], float) and math.isnan(row[k]) else row[k]
                                     for k in CSV_HEADERS)])
    return buf.getvalue()
