"""Chrome trace JSON for the importer tests: writing a file, and a trace's contents to compare imports."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from accelview.model import Trace


def write(path: Path, doc: object, gz: bool = False) -> Path:
    """``doc`` as indented JSON at ``path``, gzipped when ``gz``."""
    data = json.dumps(doc, indent=1).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def contents(trace: Trace) -> dict[str, list]:
    """Every table row by row, string ids resolved, plus metadata: equal for equal imports."""
    out: dict[str, list] = {"metadata": [trace.metadata]}
    for name, table in trace.tables.items():
        cols = [[trace.name(int(v)) for v in table[c]] if c in {"name", "category", "host", "key", "str"}
                else table[c].tolist() for c in table.schema.names]
        out[name] = list(zip(*cols, strict=True))
    return out
