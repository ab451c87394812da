"""Bookmarks: named marks kept beside a trace in a plain-JSON sidecar (``run.h5.accelview.json``),
so they survive reopening without ever writing into the capture itself. Reading is validated
JSON only (never code); a bad sidecar or an unwritable folder raises ``BookmarkError``."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SIDECAR_SUFFIX = ".accelview.json"
SIDECAR_VERSION = 1
MAX_BOOKMARKS = 10_000  # a sidecar larger than this is not one accelview wrote
MAX_NAME = 200
MAX_BYTES = 4 << 20


class BookmarkError(Exception):
    """A sidecar that cannot be read or written; the message is one line for the status bar."""


@dataclass(frozen=True)
class Bookmark:
    """A named span [start_ns, end_ns] on the trace's own (absolute) timebase."""

    name: str
    start_ns: int
    end_ns: int


def sidecar_path(trace_path: str | Path) -> Path:
    """The sidecar beside ``trace_path`` (a file or a folder of per-rank traces)."""
    p = Path(trace_path)
    return p.parent / (p.name + SIDECAR_SUFFIX)


def parse_bookmarks(data: object) -> list[Bookmark]:
    """Validate a decoded sidecar; raises ``BookmarkError`` naming the first thing wrong."""
    if not isinstance(data, dict) or not isinstance(data.get("bookmarks"), list):
        raise BookmarkError("not an accelview bookmarks file (no 'bookmarks' list)")
    if data.get("version") != SIDECAR_VERSION:
        raise BookmarkError(f"unsupported bookmarks version {data.get('version')!r}")
    items = data["bookmarks"]
    if len(items) > MAX_BOOKMARKS:
        raise BookmarkError(f"{len(items)} bookmarks (at most {MAX_BOOKMARKS})")
    out = []
    for i, b in enumerate(items):
        ok = (isinstance(b, dict) and isinstance(b.get("name"), str) and len(b["name"]) <= MAX_NAME
              and all(type(b.get(k)) is int for k in ("start_ns", "end_ns")))
        if not ok or b["end_ns"] < b["start_ns"]:
            raise BookmarkError(f"bookmark {i + 1} is not a name with start_ns <= end_ns")
        out.append(Bookmark(b["name"], b["start_ns"], b["end_ns"]))
    return out


def load_bookmarks(trace_path: str | Path) -> list[Bookmark]:
    """The bookmarks beside ``trace_path``; [] when there is no sidecar."""
    side = sidecar_path(trace_path)
    try:
        if side.stat().st_size > MAX_BYTES:
            raise BookmarkError(f"{side.name}: larger than {MAX_BYTES >> 20} MiB")
        text = side.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as e:
        raise BookmarkError(f"{side.name}: cannot read ({e.__class__.__name__})") from e
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise BookmarkError(f"{side.name}: not valid JSON") from e
    try:
        return parse_bookmarks(data)
    except BookmarkError as e:
        raise BookmarkError(f"{side.name}: {e}") from None


def save_bookmarks(trace_path: str | Path, bookmarks: Sequence[Bookmark]) -> Path | None:
    """Write the sidecar atomically (a crash never leaves half a file). With no bookmarks and no
    sidecar yet, writes nothing and returns None."""
    side = sidecar_path(trace_path)
    if not bookmarks and not side.exists():
        return None
    doc = {"version": SIDECAR_VERSION,
           "bookmarks": [{"name": b.name[:MAX_NAME], "start_ns": int(b.start_ns), "end_ns": int(b.end_ns)}
                         for b in bookmarks]}
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=side.name, suffix=".tmp", dir=side.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, side)
    except OSError as e:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise BookmarkError(f"cannot save bookmarks to {side.name}: {e.strerror or e}") from e
    return side


def reconcile(bookmarks: Sequence[Bookmark], marks: Sequence[tuple[int, int]]) -> list[Bookmark]:
    """The bookmarks for the view's ``marks`` (absolute spans, in order): a mark keeps the name of
    the bookmark at the same span, a new one is named "Mark N" (N past the highest used)."""
    free = {}
    for b in bookmarks:
        free.setdefault((b.start_ns, b.end_ns), []).append(b.name)
    used = [int(b.name[5:]) for b in bookmarks if b.name.startswith("Mark ") and b.name[5:].isdigit()]
    n = max(used, default=0)
    out = []
    for a, b in marks:
        names = free.get((int(a), int(b)))
        if names:
            out.append(Bookmark(names.pop(0), int(a), int(b)))
        else:
            n += 1
            out.append(Bookmark(f"Mark {n}", int(a), int(b)))
    return out
