"""Per-capture summaries cached beside the capture, so a second fleet query reads JSON, not HDF5.

The sidecar of ``DIR/NAME`` is ``DIR/.NAME.fleet.json``: plain JSON (never pickle), holding one
entry per section (e.g. "ops", "extract"), each stored with the key it was computed under: the
capture's size and mtime_ns and the cache format version. A changed capture, a new format or a
damaged sidecar simply means the section is computed again. Writes go to a temporary file that is
renamed over the sidecar, so a reader never sees half a file; a folder that cannot be written
(read-only shared storage) costs the cache, never the analysis.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1


def sidecar_path(path: str | os.PathLike[str]) -> Path:
    """Where the cache of the capture at ``path`` lies: ``.NAME.fleet.json`` in its folder."""
    capture = Path(path)
    return capture.with_name(f".{capture.name}.fleet.json")


def capture_key(path: str | os.PathLike[str]) -> dict[str, int]:
    """The key a cached section must match: the capture's size, mtime_ns and the format version."""
    stat = os.stat(path)
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "version": FORMAT_VERSION}


def cached(path: str, section: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``section``'s value for the capture at ``path``: from the sidecar when its key still matches
    the capture, else ``compute()``'s, stored in the sidecar (when the folder allows) and returned.
    """
    try:
        key = capture_key(path)
    except OSError:  # no capture to key a cache by: compute() says what is wrong with it
        return json.loads(json.dumps(compute()))
    side = sidecar_path(path)
    sections = _read(side)
    entry = sections.get(section)
    if isinstance(entry, dict) and entry.get("key") == key and isinstance(entry.get("value"), dict):
        return entry["value"]
    # Through JSON once, so the first answer is the same as every cached one (tuples become
    # lists, keys strings); a value JSON cannot hold is a bug of the caller and raises here.
    value = json.loads(json.dumps(compute()))
    # Another process may have stored other sections meanwhile: read again just before writing.
    sections = _read(side)
    sections[section] = {"key": key, "value": value}
    _write(side, sections)
    return value


def _read(side: Path) -> dict[str, Any]:
    """The sidecar's sections, or none when it is missing, unreadable or not the JSON we write."""
    try:
        with open(side, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("sections"), dict):
        return {}
    return dict(data["sections"])


def _write(side: Path, sections: dict[str, Any]) -> None:
    """Store ``sections`` atomically; a folder we cannot write to leaves the cache unstored."""
    text = json.dumps({"format": FORMAT_VERSION, "sections": sections}, separators=(",", ":"))
    temp = side.with_name(f"{side.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(temp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temp, side)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink()
