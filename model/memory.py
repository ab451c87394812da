"""Whether a file fits in the memory left, asked before it is loaded.

Loading reads a whole capture or trace into memory; one larger than the memory the system has
left would be read into swap (minutes of thrashing) or killed by the OOM killer half way. So the
readers estimate what loading will take (a capture from its row counts, a trace from its size)
and refuse with one line when it is more than ``MemAvailable`` of /proc/meminfo. The factors
are measured (``benchmarks/bench_memory_need.py``: peak RSS of ``load_trace`` over the bytes of a
synthetic capture's tables 1.55–1.8, over the text of its Chrome export 2.3–2.7, of real Kineto
traces at most 2.0) and rounded up.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from .errors import CaptureError
from .schema import TableSchema
from .text.values import format_bytes

MEMINFO = Path("/proc/meminfo")  # where the memory left is read (tests point it at a file of their own)
BASE_NEED = 32 << 20  # what a load costs beside the data: decoders, indexes, the interpreter's arenas
COLUMN_FACTOR = 2.0  # peak of a capture's load over the bytes its tables hold (1.55–1.8 measured)
JSON_FACTOR = 3.0  # peak of a JSON import over the decompressed text (2.3–2.7 measured)
GZIP_MAGIC = b"\x1f\x8b"
TRACE_SUFFIXES = (".json", ".json.gz")  # the files of a folder of traces that a folder's import reads


class NotEnoughMemory(CaptureError):
    """A file refused because loading it needs more memory than the system has left (nothing is
    wrong with the file)."""


def available_bytes() -> int | None:
    """The memory the system can give without swapping (``MemAvailable``), or None where it
    is not known (no /proc/meminfo, an old kernel): then nothing is refused."""
    try:
        text = MEMINFO.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "MemAvailable":
            parts = value.split()
            if parts and parts[0].isdigit():
                return int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    return None


def table_need(schema: TableSchema, rows: int) -> int:
    """Bytes ``rows`` rows of a table hold in memory (every column at its in-memory type)."""
    return rows * sum(np.dtype(d).itemsize for _c, d in schema.columns)


def capture_need(table_bytes: Iterable[int]) -> int:
    """Peak memory of loading a capture whose tables hold ``table_bytes`` in memory (its
    string table is read when it is opened, so the memory left already counts it)."""
    return int(BASE_NEED + COLUMN_FACTOR * sum(table_bytes))


def text_size(path: Path) -> int:
    """The size of a trace file's text: its gzip trailer's size for a gzip file (which holds the
    size modulo 2^32, so the smallest size consistent with it that is at least the compressed
    size: a lower bound), else its size on disk."""
    size = path.stat().st_size
    try:
        with open(path, "rb") as f:
            if f.read(2) != GZIP_MAGIC or size < 18:
                return size
            f.seek(-4, os.SEEK_END)
            stored = int.from_bytes(f.read(4), "little")
    except OSError:
        return size
    return stored + (max(0, size - stored) + (1 << 32) - 1) // (1 << 32) * (1 << 32)


def trace_need(path: str | Path) -> int:
    """Peak memory of importing the trace at ``path`` (a file, or a folder: its trace files)."""
    p = Path(path)
    files = [q for q in p.iterdir() if q.name.endswith(TRACE_SUFFIXES) and q.is_file()] if p.is_dir() else [p]
    return int(BASE_NEED + JSON_FACTOR * sum(text_size(q) for q in files))


def check_fits(path: str | Path, need: int, available: int | None = None) -> None:
    """Raise ``CaptureError`` naming ``path``, what it needs and what is left, when loading it
    needs more memory than is available (``available``: read from the system when None)."""
    left = available_bytes() if available is None else available
    if left is not None and need > left:
        raise NotEnoughMemory(path, f"needs about {format_bytes(need)} of memory to open, but only "
                                    f"{format_bytes(left)} is available: close other programs, or open it on a "
                                    "machine with more memory")
