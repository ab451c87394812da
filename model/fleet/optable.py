"""A fleet's op statistics as one table: gathered from the per-capture summaries (cached beside
each capture, computed on the fleet engine only where missing), filtered by a query, grouped.

Reading the cache needs neither the captures' HDF5 nor Dask: a query over captures that were all
summarised before starts, reads a few KB of JSON per host and answers, without importing the
engine. Only when a summary is missing or stale is ``engine.map_captures`` called, on a Dask
client when a scheduler or a number of workers is given, else in this process.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelview.model.errors import AccelviewError

from .cache import cached
from .opstats import SECTION, capture_ops
from .query import FIELDS, Predicate

if TYPE_CHECKING:
    from distributed import Client

GROUP_KEYS = ("host", "device", "lane", "op", "class")
ROW_KEYS = ("host", "device", "lane", "op")  # a summary row's identity: grouping by these merges nothing
MIXED = "mixed"  # the class of a group whose rows are of several classes


class _Missing(Exception):
    """The cache has no current summary for a capture (raised instead of computing one)."""


def _refuse() -> dict[str, Any]:
    raise _Missing


@dataclass
class FleetOps:
    """The rows of a fleet's summaries (tuples in ``FIELDS`` order) and what each capture gave:
    ``captures`` answered, ``failures`` (path → one line) not, ``computed`` the paths whose
    summary was not cached and was computed for this query."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    captures: list[str] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    computed: list[str] = field(default_factory=list)


def _cached_summary(path: str) -> dict[str, Any] | None:
    """The current cached summary of ``path``, or None when it must be computed (none cached, or
    the capture changed since)."""
    try:
        return cached(path, SECTION, _refuse)
    except _Missing:
        return None


def gather_ops(paths: Sequence[str | os.PathLike[str]], *, scheduler: str | None = None, workers: int | None = None,
               timeout_s: float = 600.0, progress: Callable[[int, int], None] | None = None,
               dashboard: Callable[[str], None] | None = None, client: Client | None = None) -> FleetOps:
    """The op statistics of every capture of ``paths``: cached summaries where current, the rest
    computed with ``engine.map_captures`` (on ``client``, or on a Dask client opened for them when
    ``scheduler`` or ``workers`` is given, else in this process; ``dashboard`` is told the link of
    a LocalCluster's dashboard).
    A capture that cannot be read or summarised lands in ``failures``; the others still answer."""
    out = FleetOps()
    summaries: dict[str, dict[str, Any]] = {}
    missing: list[str] = []
    paths = list(dict.fromkeys(map(str, paths)))  # a capture named twice answers once
    for p in paths:
        if not os.path.isfile(p):
            out.failures[p] = f"{p}: no such file" if not os.path.exists(p) else f"{p}: not a regular file"
            continue
        try:
            s = _cached_summary(p)
        except OSError as e:
            out.failures[p] = f"{p}: {e.strerror or e}"
            continue
        if s is None:
            missing.append(p)
        else:
            summaries[p] = s
    if missing:
        summaries.update(_compute(missing, out, scheduler, workers, timeout_s, progress, dashboard, client))
    per_capture: list[tuple[str, list[tuple[Any, ...]]]] = []
    for p in paths:
        s = summaries.get(p)
        if s is None:
            continue
        try:
            per_capture.append((p, _rows_of(s)))
        except (KeyError, TypeError, ValueError):
            out.failures[p] = f"{p}: its cached op summary is damaged (delete .{Path(p).name}.fleet.json beside it)"
    for p, rows in _name_hosts(per_capture):
        out.captures.append(p)
        out.rows += rows
    return out


def _compute(missing: list[str], out: FleetOps, scheduler: str | None, workers: int | None, timeout_s: float,
             progress: Callable[[int, int], None] | None,
             dashboard: Callable[[str], None] | None, client: Client | None) -> dict[str, dict[str, Any]]:
    """Summaries of the captures in ``missing``, computed on the engine (Dask imported only here)."""
    from . import engine

    own = engine.open_client(scheduler, workers) if client is None and (scheduler or workers) else None
    if own is not None and dashboard is not None and not scheduler and own.dashboard_link:
        dashboard(own.dashboard_link)
    try:
        result = engine.map_captures(capture_ops, missing, client=client or own, timeout_s=timeout_s,
                                     progress=progress)
    finally:
        if own is not None:
            engine.close_client(own)
    out.failures.update(result.failures)
    out.computed = [p for p in missing if p in result.results]
    return result.results


def _rows_of(summary: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The rows of one summary, as tuples in ``FIELDS`` order."""
    cols = summary["columns"]
    n = int(summary["rows"])
    columns = [cols[f] for f in FIELDS]
    if any(len(c) != n for c in columns):
        raise ValueError("columns of different lengths")
    return list(zip(*columns, strict=True))


def _name_hosts(per_capture: list[tuple[str, list[tuple[Any, ...]]]]) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Every capture's rows with host names unique in the fleet: a host no capture names is
    called after its file; a name that several captures give (copies of one host's capture) is
    followed by the file's name, in each of them."""
    owners: dict[str, set[str]] = {}
    for p, rows in per_capture:
        for r in rows:
            owners.setdefault(r[0], set()).add(p)
    names: dict[str, int] = {}
    for p, _ in per_capture:
        names[Path(p).name] = names.get(Path(p).name, 0) + 1
    out = []
    for p, rows in per_capture:
        name = Path(p).name if names[Path(p).name] == 1 else p  # the path where file names repeat too
        renamed = {h: (f"{h} ({name})" if h else Path(p).stem) for h in {r[0] for r in rows}
                   if not h or len(owners[h]) > 1}
        out.append((p, [(renamed[r[0]], *r[1:]) if r[0] in renamed else r for r in rows] if renamed else rows))
    return out


@dataclass(frozen=True)
class OpTable:
    """Rows grouped by ``by``: ``columns`` name the values of each row of ``rows``. ``exact``
    tells whether the percentile columns are the rows' own (every group one summary row) or the
    largest of the merged rows' (``max_p50_ns``, ``max_p95_ns``)."""

    by: tuple[str, ...]
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    exact: bool


def parse_by(text: str) -> tuple[str, ...]:
    """``--by host,op`` as a tuple of group keys; AccelviewError for an unknown or repeated key."""
    keys = tuple(k.strip() for k in text.split(",") if k.strip())
    bad = [k for k in keys if k not in GROUP_KEYS]
    if bad or not keys:
        raise AccelviewError(f"--by {text}: group by one or more of {', '.join(GROUP_KEYS)} (comma separated)")
    if len(set(keys)) != len(keys):
        raise AccelviewError(f"--by {text}: a key given twice")
    return keys


def table_columns(by: Sequence[str]) -> tuple[str, ...]:
    """The columns of a table grouped ``by`` these keys (known before any capture is read)."""
    exact = set(ROW_KEYS) <= set(by)
    return (*by, *(("class",) if "class" not in by else ()), "count", "total_ns", "mean_ns",
            *(("p50_ns", "p95_ns") if exact else ("max_p50_ns", "max_p95_ns")), "max_ns")


def check_sort(column: str | None, by: Sequence[str]) -> None:
    """AccelviewError unless ``column`` (None: the default) is a column of the table grouped ``by``."""
    columns = table_columns(by)
    if column is not None and column not in columns:
        raise AccelviewError(f"--sort {column}: sort by one of {', '.join(columns)}")


def group(rows: Sequence[tuple[Any, ...]], by: Sequence[str]) -> OpTable:
    """``rows`` (tuples in ``FIELDS`` order) grouped by the keys ``by``: count and total summed,
    mean recomputed, max the largest; percentiles the rows' own when ``by`` names host, device,
    lane and op (no group can merge rows), else the largest of the group's (an upper bound, named
    ``max_p50_ns``/``max_p95_ns`` whatever the data); class, when not a key, the group's rows' one
    class, or ``mixed`` when they are of several (no one class answers for all their count and time)."""
    by = tuple(by)
    at = {f: i for i, f in enumerate(FIELDS)}
    keys = [at[k] for k in by]
    exact = set(ROW_KEYS) <= set(by)
    c_count, c_total, c_p50, c_p95, c_max, c_class = (at[f] for f in ("count", "total_ns", "p50_ns", "p95_ns",
                                                                      "max_ns", "class"))
    acc: dict[tuple[Any, ...], list[Any]] = {}
    for r in rows:
        k = tuple(r[i] for i in keys)
        a = acc.get(k)
        if a is None:
            acc[k] = [r[c_count], r[c_total], r[c_p50], r[c_p95], r[c_max], {r[c_class]: r[c_total]}]
            continue
        a[0] += r[c_count]
        a[1] += r[c_total]
        a[2] = max(a[2], r[c_p50])
        a[3] = max(a[3], r[c_p95])
        a[4] = max(a[4], r[c_max])
        a[5][r[c_class]] = a[5].get(r[c_class], 0) + r[c_total]
    with_class = "class" not in by
    columns = table_columns(by)
    out = []
    for k, (count, total, p50, p95, longest, classes) in acc.items():
        cls = ((next(iter(classes)) if len(classes) == 1 else MIXED),) if with_class else ()
        out.append((*k, *cls, count, total, round(total / count) if count else 0, p50, p95, longest))
    return OpTable(by, columns, out, exact)


def _natural(value: Any) -> tuple[Any, ...]:
    """A sort key that puts host2 before host10 and None last."""
    if value is None:
        return (2,)
    if isinstance(value, str):
        return (1, tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", value) if t))
    return (0, value)


def sort_rows(table: OpTable, by: str | None = None, top: int | None = None) -> OpTable:
    """``table`` with its rows ordered by the column ``by`` (numbers largest first, names in
    natural order; default: total_ns), ties by the group keys; the first ``top`` only."""
    check_sort(by, table.by)
    col = by or "total_ns"
    i = table.columns.index(col)
    keys = list(range(len(table.by)))
    numeric = col not in GROUP_KEYS  # device numbers sort as keys do, ascending

    def key(r: tuple[Any, ...]) -> tuple[Any, ...]:
        first = (-r[i],) if numeric else (_natural(r[i]),)
        return (*first, *(_natural(r[k]) for k in keys))

    rows = sorted(table.rows, key=key)
    return OpTable(table.by, table.columns, rows[:top] if top else rows, table.exact)


def select(rows: Sequence[tuple[Any, ...]], predicate: Predicate) -> list[tuple[Any, ...]]:
    """The rows ``predicate`` keeps."""
    return [r for r in rows if predicate(r)]
