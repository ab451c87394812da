"""Chrome Trace Event Format importer (JSON object or array form, plain or gzipped).

Reads any trace that chrome://tracing or Perfetto UI opens: complete (X) and begin/end (B/E)
slices, instants (i/I), counters (C), async slices (b/n/e, and the legacy S/F), flows (s/t/f
with binding points), and process/thread names and sort order (M). Other phases are skipped
and counted in ``trace.metadata["import_stats"]``. Timestamps are µs in the file, ns in the
model. ``import_files`` is shared with the Kineto importer, which changes only the policy
(``Profile``): what lanes are, which args are kept, how files are placed in time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..builder import TraceBuilder
from ..errors import CaptureError, TraceInvariantError
from ..jsonvalues import bounded
from ..schema import TrackKind
from ..trace import Trace
from .pipeline.assemble import Assembler, Lanes
from .pipeline.digest_worker import Helper, HelperFailed, helper_allowed
from .pipeline.export_header import check_header
from .pipeline.reading import digester, read_file
from .pipeline.stream import nested_too_deep

Progress = Callable[[float], None]


@dataclass
class Profile:
    """How a family of Chrome-JSON traces maps onto the model."""

    format: str = "chrome-json"
    lanes: Lanes = field(default_factory=Lanes)
    skip_args: frozenset[str] = frozenset()
    skip_flow_cats: frozenset[str] = frozenset()
    keep_marked: tuple[bytes, ...] = ()  # skipped events whose raw arguments hold one of these keep them
    categories: tuple[str, ...] = ()  # interned first, so that their ids stay small

    def root(self, meta: dict[str, Any], index: int, path: Path) -> tuple[str, str, int] | None:
        """(name, host, sort order) of a track above one file's processes, or None for none."""
        return None

    def offset_ns(self, meta: dict[str, Any]) -> int:
        """Nanoseconds added to one file's timestamps."""
        return 0

    def describe(self, builder: TraceBuilder, metas: list[dict[str, Any]], paths: Sequence[Path]) -> None:
        """Put what the files say about themselves into ``builder.metadata``."""
        builder.metadata["trace_metadata"] = _jsonable_scalars(metas[0]) if len(metas) == 1 else [
            _jsonable_scalars(m) for m in metas]


def _jsonable_scalars(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if isinstance(v, str | int | float | bool) and len(str(v)) < 1000}


def import_files(paths: Sequence[Path], profile: Profile, progress: Progress | None = None,
                 source: str = "") -> Trace:
    """Import one or more trace files (e.g. one per rank) into one ``Trace``."""
    b = TraceBuilder()
    for cat in profile.categories:
        b.strings.intern(cat)
    asm = Assembler(b)
    metas: list[dict[str, Any]] = []
    restored: dict[str, Any] | None = None  # the metadata accelview's own export carries (perhaps none)
    total: Counter = Counter()
    per_file: dict[str, dict[str, int]] = {}
    work = digester(profile.skip_args, profile.skip_flow_cats, profile.keep_marked)
    helper = Helper(work) if helper_allowed(paths) else None
    try:
        for i, path in enumerate(paths):
            def file_progress(f: float, i: int = i) -> None:
                if progress is not None:
                    progress((i + f) / len(paths))

            try:
                try:
                    collected, meta = read_file(path, work, file_progress, helper)
                except HelperFailed:  # e.g. a batch cut inside a string: read the file again, alone
                    helper.close()
                    helper = None
                    collected, meta = read_file(path, work, file_progress)
            except RecursionError:  # wherever the decoder met it (the stream names most places)
                raise CaptureError(path, nested_too_deep("the file")) from None
            metas.append(meta)
            explicit = meta.get("accelview") if isinstance(meta.get("accelview"), dict) else None
            if explicit is not None and "tracks" in explicit:
                try:
                    check_header(explicit)
                    asm.add_file(collected, profile.lanes, 0, -1, explicit=explicit)
                except (ValueError, TypeError, KeyError) as e:
                    raise CaptureError(path, f"broken accelview track table: {e}") from None
                kept = explicit.get("metadata")
                restored = restored or {}
                if isinstance(kept, dict):
                    restored.update(bounded(kept))
                else:
                    collected.stats["export_metadata_not_an_object"] += 1
            else:
                root = profile.root(meta, i, path)
                parent = -1 if root is None else b.add_track(root[0], TrackKind.HOST, host=root[1], sort=root[2])
                try:
                    offset = profile.offset_ns(meta)
                except ValueError as e:
                    raise CaptureError(path, str(e)) from None
                asm.add_file(collected, profile.lanes, offset, parent)
            per_file[path.name] = dict(collected.stats)
            total.update(collected.stats)
    finally:
        if helper is not None:
            helper.close()
    if restored is not None:
        b.metadata.update(restored)
    else:
        profile.describe(b, metas, paths)
        b.metadata["format"] = profile.format
    stats: dict[str, Any] = dict(sorted(total.items()))
    if len(paths) > 1:
        stats["files"] = per_file
    b.metadata["import_stats"] = stats
    try:
        trace = b.build(source=source or str(paths[0]))
    except TraceInvariantError as e:
        raise CaptureError(source or paths[0], str(e)) from None
    if progress is not None:
        progress(1.0)
    return trace


def sniff(head: bytes, path: Path) -> bool:
    """True when ``head`` (the first decompressed bytes) looks like Chrome trace JSON, or the
    file is named .json/.json.gz (so that a broken one gets a precise error from ``load``)."""
    if path.name.endswith((".json", ".json.gz")):
        return True
    s = head.lstrip(b" \t\r\n\xef\xbb\xbf")
    if s[:1] == b"{":
        return b'"traceEvents"' in s
    if s[:1] == b"[":
        return b'"ph"' in s or s[1:].strip() in (b"", b"]")
    return False


def load(path: str | Path, progress: Progress | None = None) -> Trace:
    """Import a Chrome trace JSON file (.json or .json.gz)."""
    return import_files([Path(path)], Profile(), progress)
