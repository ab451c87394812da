"""A fleet query's table as CSV (raw numbers), JSON (the rows as objects, with what was asked and
what failed) or aligned text (durations with units) for a terminal."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

from accelview.model.text.values import format_duration

from .optable import OpTable

TIME_COLUMNS = ("total_ns", "mean_ns", "p50_ns", "p95_ns", "max_p50_ns", "max_p95_ns", "max_ns")
UPPER_BOUND = "p50/p95 of a group that merges several summary rows are the largest of theirs (an upper bound)"


def to_csv(table: OpTable) -> str:
    """A header line of column names, then one line per row; a missing value is empty."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(table.columns)
    for r in table.rows:
        w.writerow(["" if v is None else v for v in r])
    return buf.getvalue()


def to_json(table: OpTable, *, query: str, captures: int, failures: Mapping[str, str], computed: int) -> str:
    """One JSON object: the query, the grouping, how many captures answered (and were computed
    rather than read from their cache), the failures by capture, whether the percentiles are
    exact, the column names and the rows as objects."""
    doc: dict[str, Any] = {
        "query": query, "by": list(table.by), "captures": captures, "computed": computed,
        "failures": dict(failures), "partial": bool(failures),
        "percentiles": "exact" if table.exact else "largest of the merged rows", "columns": list(table.columns),
    }
    head = ",\n".join(f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in doc.items())
    rows = ",\n".join("  " + json.dumps(dict(zip(table.columns, r, strict=True)), ensure_ascii=False)
                      for r in table.rows)
    return f"{{\n{head},\n \"rows\": [{chr(10) + rows + chr(10) + ' ' if rows else ''}]\n}}\n"


def to_text(table: OpTable) -> str:
    """Aligned columns for a terminal: names left, numbers right, durations with units; a note
    under the table when its percentiles are upper bounds."""
    def cell(col: str, v: Any) -> str:
        if v is None:
            return "—"
        if col in TIME_COLUMNS:
            return format_duration(v)
        return f"{v:,}" if col == "count" else str(v)

    body = [[cell(c, v) for c, v in zip(table.columns, r, strict=True)] for r in table.rows]
    widths = [max([len(c)] + [len(b[i]) for b in body]) for i, c in enumerate(table.columns)]
    right = [c not in ("host", "lane", "op", "class") for c in table.columns]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)).rstrip()

    lines = [line(list(table.columns)), *(line(b) for b in body)]
    if not table.rows:
        lines.append("(no row matches)")
    if not table.exact:
        lines.append(f"note: {UPPER_BOUND}")
    return "\n".join(lines) + "\n"
