"""Importers of other tools' traces, as a small registry in priority order.

Each importer has ``sniff(first_bytes, path) -> bool`` (``first_bytes``: the file's first
decompressed bytes; empty for a directory) and ``load(path, progress=None) -> Trace``.
``find_importer`` asks them in order and returns the first that accepts the file;
``import_trace`` loads with it, or raises ``CaptureError`` for a format nobody reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import NOT_A_FILE, CaptureError
from ..trace import Trace
from . import chrome_json, kineto

Progress = Callable[[float], None]
HEAD_BYTES = 65536
SUFFIXES = (".json", ".json.gz")  # for file dialogs; a directory of such files also opens (ranks)


@dataclass(frozen=True)
class Importer:
    """One trace format: its name, how to recognise it, how to load it."""

    name: str
    description: str
    sniff: Callable[[bytes, Path], bool]
    load: Callable[..., Trace]
    directories: bool = False  # whether it opens a directory (e.g. of per-rank files)


IMPORTERS: list[Importer] = [
    Importer("kineto", "PyTorch profiler (Kineto) trace, .json or .json.gz, or a directory of ranks",
             kineto.sniff, kineto.load, directories=True),
    Importer("chrome-json", "Chrome Trace Event Format JSON, .json or .json.gz", chrome_json.sniff, chrome_json.load),
]


def register(importer: Importer, first: bool = False) -> None:
    """Add an importer (at the front with ``first``, else last)."""
    IMPORTERS.insert(0, importer) if first else IMPORTERS.append(importer)


def find_importer(path: str | Path) -> Importer | None:
    """The first importer that recognises ``path``, or None."""
    p = Path(path)
    if p.is_dir():
        return next((imp for imp in IMPORTERS if imp.directories and imp.sniff(b"", p)), None)
    head = kineto.read_head(p, HEAD_BYTES)
    return next((imp for imp in IMPORTERS if imp.sniff(head, p)), None)


def import_trace(path: str | Path, progress: Progress | None = None) -> Trace:
    """Load a trace of another tool; ``CaptureError`` when no importer reads it."""
    p = Path(path)
    if not p.exists():
        raise CaptureError(p, "no such file or directory")
    if not (p.is_file() or p.is_dir()):
        raise CaptureError(p, NOT_A_FILE)
    importer = find_importer(p)
    if importer is None:
        if p.is_file() and p.stat().st_size == 0:
            raise CaptureError(p, "empty file")
        raise CaptureError(p, "not a trace format accelview imports (Chrome trace JSON, PyTorch profiler trace)")
    return importer.load(p, progress)


__all__ = ["IMPORTERS", "SUFFIXES", "Importer", "find_importer", "import_trace", "register"]
