"""PyTorch profiler (Kineto) traces: Chrome JSON with GPU streams, launches and ranks.

The Chrome importer with Kineto's policy: device processes become DEVICE tracks of GPU streams,
CPU threads stay host threads; a runtime call and the device ops it launched are linked by an
``ac2g`` flow built from ``args.correlation``; each file sits under a ``rank N`` track, with
absolute ns timestamps, so a directory of ranks opens as one trace (docs/IMPORT.md).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..builder import TraceBuilder
from ..errors import CaptureError
from ..jsonvalues import bounded
from ..schema import TrackKind
from ..trace import Trace
from .chrome_json import Profile, Progress, import_files
from .pipeline.assemble import Lane, Lanes, _sort
from .pipeline.events import MAX_NS
from .pipeline.stream import open_maybe_gzip

DEVICE_CATEGORIES = frozenset({
    "kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "gpu_user_annotation", "mtia_ccp_events",
    "Kernel", "Memcpy", "Memset",
})
HOST_CATEGORIES = ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "mtia_runtime", "python_function")
DEVICE_LABELS = ("GPU", "MTIA", "HPU", "XPU", "NPU")
# Op arguments (input shapes, sequence numbers) are the bulk of a trace's bytes; they are kept
# only with ``all_args``, or for the ops that PyTorch's ``with_flops`` gave a FLOP count (the
# analysis classes the kernels they launched by it). Runtime and device events keep theirs.
SKIP_ARGS = frozenset({"cpu_op", "user_annotation", "python_function", "fwdbwd"})
KEEP_MARKED = (b'"flops"',)
TRACE_SUFFIXES = (".json", ".json.gz")


class KinetoLanes(Lanes):
    """Host processes and threads; device processes with streams."""

    def process(self, pid: Any, meta: dict[tuple, Any], cats: set[str]) -> Lane:
        """A GPU/accelerator process is a DEVICE track; a host process a PROCESS track."""
        labels = str(meta.get(("process_labels", pid, None), ""))
        name = meta.get(("process_name", pid, None))
        sort = _sort(meta.get(("process_sort_index", pid, None)))
        if _small_int(pid, 2**15) and (labels.startswith(DEVICE_LABELS) or cats & DEVICE_CATEGORIES):
            return Lane(TrackKind.DEVICE, labels or f"GPU {pid}", device=pid, sort=sort)
        if not isinstance(pid, int):
            return Lane(TrackKind.OTHER, str(pid) or "trace", sort=sort)
        return Lane(TrackKind.PROCESS, f"{name} ({pid})" if name else f"process {pid}", sort=sort)

    def thread(self, pid: Any, tid: Any, meta: dict[tuple, Any], cats: set[str], proc: Lane) -> Lane:
        """Device threads are streams (or DMA engines); host threads stay threads."""
        name = str(meta.get(("thread_name", pid, tid), "")).strip()
        sort = _sort(meta.get(("thread_sort_index", pid, tid)))
        if proc.kind is TrackKind.DEVICE:
            kind = TrackKind.DMA_ENGINE if "dma" in name.lower() else TrackKind.GPU_STREAM
            return Lane(kind, name or f"stream {tid}", device=proc.device, sort=sort)
        if proc.kind is TrackKind.OTHER:
            return Lane(TrackKind.OTHER, name or str(tid), sort=sort)
        return Lane(TrackKind.HOST_THREAD, name or f"thread {tid}", sort=sort)

    def correlate(self) -> bool:
        """Kineto links runtime calls to device work by correlation id."""
        return True


class KinetoProfile(Profile):
    """The Kineto policy for ``import_files``."""

    def __init__(self, all_args: bool = False) -> None:
        super().__init__(format="kineto", lanes=KinetoLanes(), skip_args=frozenset() if all_args else SKIP_ARGS,
                         keep_marked=() if all_args else KEEP_MARKED,
                         skip_flow_cats=frozenset({"ac2g", "async_cpu_to_gpu"}),
                         categories=(*sorted(DEVICE_CATEGORIES), *HOST_CATEGORIES, "ac2g", "fwdbwd"))

    def root(self, meta: dict[str, Any], index: int, path: Path) -> tuple[str, str, int] | None:
        """A ``rank N`` track (host name as its host, ordered by rank) above each file."""
        rank = rank_of(meta, index)
        return f"rank {rank}", str(meta.get("host_name", "")), rank

    def offset_ns(self, meta: dict[str, Any]) -> int:
        """Kineto writes timestamps relative to ``baseTimeNanoseconds`` when it has one (an
        integer in [0, 2**61] ns, else ``ValueError``: timestamps would wrap around int64)."""
        base = meta.get("baseTimeNanoseconds", 0)
        if not isinstance(base, int) or isinstance(base, bool):
            return 0
        if not 0 <= base <= MAX_NS:
            raise ValueError(f"baseTimeNanoseconds {base} is out of range (0 to {MAX_NS:,} ns)")
        return base

    def describe(self, builder: TraceBuilder, metas: list[dict[str, Any]], paths: Sequence[Path]) -> None:
        """Ranks, world size, backend and device properties into the metadata."""
        super().describe(builder, metas, paths)
        ranks = []
        for i, (meta, path) in enumerate(zip(metas, paths, strict=True)):
            info = meta.get("distributedInfo") if isinstance(meta.get("distributedInfo"), dict) else {}
            ranks.append({"rank": rank_of(meta, i), "world_size": info.get("world_size"),
                          "backend": info.get("backend"), "file": path.name,
                          "host_name": meta.get("host_name"),
                          "baseTimeNanoseconds": meta.get("baseTimeNanoseconds")})
        builder.metadata["ranks"] = ranks = bounded(ranks)
        sizes = {r["world_size"] for r in ranks if _small_int(r["world_size"])}
        builder.metadata["world_size"] = max(sizes) if sizes else len(ranks)
        first = metas[0]
        if isinstance(first.get("distributedInfo"), dict):
            builder.metadata["distributedInfo"] = bounded(first["distributedInfo"])
        if isinstance(first.get("deviceProperties"), list):
            builder.metadata["deviceProperties"] = bounded(first["deviceProperties"])


def _small_int(v: Any, limit: int = 2**31) -> bool:
    """A non-negative int (not a bool) below ``limit``: what a track's sort order (int32) or
    device number (int16, ``limit`` 2**15) can hold."""
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < limit


def rank_of(meta: dict[str, Any], index: int) -> int:
    """The file's rank from ``distributedInfo`` (a non-negative int32), else its position in the directory."""
    info = meta.get("distributedInfo")
    rank = info.get("rank") if isinstance(info, dict) else None
    return rank if _small_int(rank) else index


KINETO_MARKERS = (b'"schemaVersion"', b'"distributedInfo"', b'"deviceProperties"', b'"ac2g"', b'"cuda_runtime"')


def sniff(head: bytes, path: Path) -> bool:
    """True for a Kineto trace file, or a directory holding some."""
    if path.is_dir():
        return bool(rank_files(path))
    s = head.lstrip(b" \t\r\n\xef\xbb\xbf")
    if b'"accelviewExport"' in s[:200]:  # accelview's own export: the Chrome importer rebuilds its tracks
        return False
    return s[:1] == b"{" and any(m in s for m in KINETO_MARKERS)


def read_head(path: Path, n: int = 65536) -> bytes:
    """The first ``n`` decompressed bytes of a file (b"" when it cannot be read)."""
    parts: list[bytes] = []
    try:
        stream, raw = open_maybe_gzip(path)
        with raw, stream:
            while sum(map(len, parts)) < n:
                chunk = stream.read(8192)
                if not chunk:
                    break
                parts.append(chunk)
    except (OSError, EOFError, zlib.error):  # the reader reports it
        pass
    return b"".join(parts)[:n]


def rank_files(directory: Path) -> list[Path]:
    """The Kineto trace files directly inside ``directory``, in name order."""
    files = sorted((p for p in directory.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES)),
                   key=lambda p: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name)])  # rank-2 < rank-10
    return [p for p in files if sniff(read_head(p), p)]


def load(path: str | Path, progress: Progress | None = None, all_args: bool = False) -> Trace:
    """Import a Kineto trace file, or a directory of per-rank files as one multi-rank trace."""
    p = Path(path)
    files = rank_files(p) if p.is_dir() else [p]
    if not files:
        raise CaptureError(p, "directory holds no PyTorch profiler (Kineto) trace files")
    return import_files(files, KinetoProfile(all_args), progress, source=str(p))


def is_rank_file(path: Path) -> bool:
    """Whether ``path`` is one Kineto trace file (a rank of a multi-rank run, perhaps)."""
    return path.is_file() and path.name.endswith(TRACE_SUFFIXES) and sniff(read_head(path), path)


def load_ranks(paths: Sequence[str | Path], progress: Progress | None = None) -> Trace:
    """Import several Kineto trace files, one per rank, as one multi-rank trace (as a directory
    of them is); ``CaptureError`` naming the file when two are the same rank."""
    files = [Path(p) for p in paths]
    trace = import_files(files, KinetoProfile(), progress, source=", ".join(map(str, files)))
    by_name = {p.name: p for p in files}
    seen: dict[Any, Path] = {}
    for r in trace.metadata.get("ranks", []):
        if not isinstance(r, dict):
            continue
        path = by_name.get(str(r.get("file")), files[0])
        if r.get("rank") in seen:
            raise CaptureError(path, f"rank {r['rank']} twice: {seen[r['rank']]} is rank {r['rank']} too")
        seen[r.get("rank")] = path
    return trace
