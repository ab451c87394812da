"""Open any file accelview reads: an HDF5 capture, or a trace of another tool via the importers."""

from __future__ import annotations

from pathlib import Path

from .errors import NOT_A_FILE, CaptureError
from .memory import check_fits, trace_need
from .store.h5io import is_hdf5
from .store.reader import Cancel, Progress, load_capture, open_capture
from .trace import Trace

CAPTURE_SUFFIXES = (".h5", ".hdf5")


def load_trace(path: str | Path, progress: Progress | None = None, cancel: Cancel | None = None) -> Trace:
    """Load a capture (.h5) or an imported trace into memory.

    Raises ``CaptureError`` with a one-line message for a missing, unreadable or unknown file, or
    one that needs more memory than the system has left (``model/memory.py``)."""
    p = Path(path)
    if not p.exists():
        raise CaptureError(p, "no such file")
    if not (p.is_file() or p.is_dir()):  # reading a pipe or a device could wait, or never end
        raise CaptureError(p, NOT_A_FILE)
    if p.is_file() and (is_hdf5(p) or p.suffix.lower() in CAPTURE_SUFFIXES):
        return load_capture(p, progress, cancel)
    from .importers import find_importer

    importer = find_importer(p)
    if importer is None:
        what = "holds no trace accelview reads" if p.is_dir() else "is not a capture or a trace accelview reads"
        raise CaptureError(p, f"{what} (expected an accelview .h5 capture, Chrome trace JSON or a PyTorch trace)")
    check_fits(p, memory_need(p))  # before the import, which holds the decoded text and the tables at once
    return importer.load(p, progress)


def memory_need(path: str | Path) -> int:
    """The estimated peak memory of ``load_trace(path)`` (``model/memory.py``); ``CaptureError``
    for a file that cannot be opened, as loading it would raise."""
    p = Path(path)
    if not p.exists():
        raise CaptureError(p, "no such file")
    if not (p.is_file() or p.is_dir()):
        raise CaptureError(p, NOT_A_FILE)
    if p.is_file() and (is_hdf5(p) or p.suffix.lower() in CAPTURE_SUFFIXES):
        with open_capture(p) as f:
            return f.memory_need()
    try:
        return trace_need(p)
    except OSError as e:
        raise CaptureError(p, f"cannot read: {e.strerror or e}") from None
