"""One side of a diff of two distributed runs: its hosts or its ranks, each one trace, by name.

A side is given as files, folders, or both: a folder of host captures (``accelview profile`` of
a cluster workload writes one ``hostN.h5`` per host), a merged cluster capture (``accelview
merge``), or a folder of PyTorch profiler (Kineto) traces, one per rank. Hosts are named
``host0`` … from the captures' metadata, ranks ``rank N`` from ``distributedInfo`` (else the
file's place in its folder), so that two runs are matched member by member. Each member is
read on its own clock: a diff compares durations per iteration, which no clock offset changes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import AccelviewError, CaptureError
from ..trace import Trace
from .inputs import cluster_inputs, is_cluster_capture
from .split import split_hosts

HOSTS, RANKS = "hosts", "ranks"


@dataclass
class Side:
    """The members of one run (host or rank name → trace, in host or rank order) and where each came from."""

    kind: str  # HOSTS or RANKS
    members: dict[str, Trace] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    label: str = ""  # what the side was read from, in a few words


def _files(paths: Sequence[str | Path]) -> list[tuple[Path, int]]:
    """Every file the paths stand for, each with its place in its folder (for ranks without a number)."""
    from ..importers.kineto import rank_files

    out: list[tuple[Path, int]] = []
    for p in map(Path, paths):
        if not p.exists():
            raise CaptureError(p, "no such file or folder")
        if not p.is_dir():
            out.append((p, 0))
            continue
        found = sorted(p.glob("*.h5")) or rank_files(p)
        if not found:
            raise CaptureError(p, "a folder with no host captures (*.h5) and no PyTorch (Kineto) traces to compare")
        out += [(f, i) for i, f in enumerate(found)]
    return out


def _rank(trace: Trace, place: int) -> int:
    ranks = trace.metadata.get("ranks")
    if isinstance(ranks, list) and len(ranks) == 1 and isinstance(ranks[0], dict):
        r = ranks[0].get("rank")
        if isinstance(r, int) and r >= 0:
            return r
    return place


def read_side(paths: Sequence[str | Path]) -> Side:
    """The hosts or ranks of one run. Raises ``AccelviewError`` (one line naming the file) for a
    folder with nothing to compare, a file that is neither a host capture of a cluster nor a Kineto
    trace, captures mixed with Kineto traces, a host or rank given twice, or hosts of clusters of
    different shapes."""
    from ..loader import load_trace

    files = _files(paths)
    side: Side | None = None
    hosts: list[tuple[Path, Trace]] = []
    for path, place in files:
        trace = load_trace(path)
        merged = "merged" in trace.metadata
        kind = HOSTS if merged or is_cluster_capture(trace) else RANKS if trace.metadata.get("format") == "kineto" \
            else None
        if kind is None:
            raise CaptureError(path, "neither a host capture of a cluster nor a PyTorch (Kineto) rank trace: a "
                                     "folder diff compares the hosts or the ranks of two runs")
        if side is None:
            side = Side(kind)
        elif kind != side.kind:
            first = next(iter(side.sources.values()), str(hosts[0][0]) if hosts else "")
            raise CaptureError(path, f"{'host captures' if kind == HOSTS else 'Kineto traces'} mixed with "
                                     f"{'host captures' if side.kind == HOSTS else 'Kineto traces'} ({first}): "
                                     "one run is either hosts or ranks")
        if merged:
            for t in split_hosts(trace):
                _add(side, f"host{int(t.metadata['capture']['host_index'])}", t, path)
        elif kind == HOSTS:
            hosts.append((path, trace))
        else:
            world = trace.metadata.get("world_size")
            _add(side, f"rank {_rank(trace, place)}", trace, path, world)
    if hosts:
        assert side is not None
        for path, trace in cluster_inputs([p for p, _ in hosts], [t for _, t in hosts]):
            _add(side, f"host{int(trace.metadata['capture']['host_index'])}", trace, path)
    if side is None or not side.members:
        raise AccelviewError("no hosts or ranks given")
    side.members = dict(sorted(side.members.items(), key=lambda kv: int(kv[0].lstrip("hostrank "))))
    given = [str(p) for p in paths]
    side.label = f"{', '.join(given[:2])}{' …' if len(given) > 2 else ''} ({len(side.members)} {side.kind})"
    return side


def _add(side: Side, name: str, trace: Trace, path: Path, world: object = None) -> None:
    if name in side.members:
        raise CaptureError(path, f"{name} twice: {side.sources[name]} is {name} too")
    if world is not None:
        others = {m.metadata.get("world_size") for m in side.members.values()} - {None}
        if others and world not in others:
            raise CaptureError(path, f"a rank of a job of {world} ranks, but {next(iter(side.sources.values()))} is "
                                     f"from one of {others.pop()}: one run's ranks come from one job")
    side.members[name] = trace
    side.sources[name] = str(path)

