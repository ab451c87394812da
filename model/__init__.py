"""accelview's trace model: columnar tables, HDF5 captures and the analyses over them.

Pure Python + numpy + h5py + networkx; never imports Qt.
"""

from .builder import TraceBuilder
from .errors import AccelviewError, CaptureError, TraceInvariantError
from .schema import ArgKind, TrackKind
from .strings import StringTable
from .table import Table
from .trace import Trace

__all__ = [
    "AccelviewError",
    "ArgKind",
    "CaptureError",
    "StringTable",
    "Table",
    "Trace",
    "TraceBuilder",
    "TraceInvariantError",
    "TrackKind",
]
