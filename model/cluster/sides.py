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

from ..analysis.distributed import bounds_of, collectives_of, distributed_findings
from ..analysis.findings import Finding
from ..analysis.hostextract import host_extract
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
    aligned: bool = False  # the members share one timebase already (taken from a merged capture)

    @property
    def size(self) -> int:
        """How many hosts or ranks the run had (its cluster's hosts, its job's world size), given or not."""
        t = next(iter(self.members.values()))
        if self.kind == RANKS:
            world = t.metadata.get("world_size")
            return world if isinstance(world, int) and world >= len(self.members) else len(self.members)
        cluster = t.metadata.get("capture", {}).get("cluster", {}) if isinstance(t.metadata.get("capture"), dict) \
            else {}
        hosts = cluster.get("hosts") if isinstance(cluster, dict) else None
        return hosts if isinstance(hosts, int) and hosts >= len(self.members) else len(self.members)


def _files(paths: Sequence[str | Path]) -> list[tuple[Path, int]]:
    """Every file the paths stand for, each with its place in its folder (for ranks without a number)."""
    from ..importers.kineto import rank_files

    out: list[tuple[Path, int]] = []
    for i, p in enumerate(map(Path, paths)):
        if not p.exists():
            raise CaptureError(p, "no such file or folder")
        if not p.is_dir():
            out.append((p, i))  # a file given by itself: its place among the files given
            continue
        captures, ranks = sorted(p.glob("*.h5")), rank_files(p)
        if captures and ranks:
            raise CaptureError(p, f"a folder with both host captures ({captures[0].name}) and PyTorch (Kineto) traces "
                                  f"({ranks[0].name}): one run is either hosts or ranks")
        found = captures or ranks
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


def read_sides(a: Sequence[str | Path], b: Sequence[str | Path]) -> tuple[Side, Side]:
    """The hosts or ranks of two runs, of one kind (both hosts, or both ranks); every folder is
    looked into before any file is read. Raises ``AccelviewError`` (one line naming
    the file) for a folder with nothing to compare or with captures and Kineto traces mixed, a file
    that is neither a host capture of a cluster nor a Kineto trace, captures mixed with Kineto
    traces, a host or rank given twice, hosts of clusters of different shapes, ranks of jobs of
    different sizes, and hosts compared with ranks."""
    files_a, files_b = _files(a), _files(b)
    side_a, side_b = _read(files_a, a), _read(files_b, b)
    if side_a.kind != side_b.kind:
        what = {HOSTS: "host captures", RANKS: "PyTorch (Kineto) rank traces"}
        raise AccelviewError(f"{side_b.label}: {what[side_b.kind]}, but {side_a.label} holds {what[side_a.kind]}: "
                             "compare hosts with hosts, ranks with ranks")
    return side_a, side_b


def _read(files: list[tuple[Path, int]], paths: Sequence[str | Path]) -> Side:
    from ..loader import load_trace

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
            side.aligned = True
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
    n = len(side.members)
    more = " …" if len(given) > 2 else ""
    side.label = f"{', '.join(given[:2])}{more} ({n} {side.kind if n > 1 else side.kind[:-1]})"
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



def cluster_findings(side: Side) -> list[Finding]:
    """The findings of the distributed analysis of a run's hosts read together, on host0's clock
    (a straggler and who it is); none for ranks, whose collectives the analysis does not match."""
    if side.kind != HOSTS or len(side.members) < 2:
        return []
    from .load import align_cluster

    traces = list(side.members.values())
    if not side.aligned:
        traces, _ = align_cluster(traces)
    extracts = [host_extract(t) for t in traces]
    begin, end = bounds_of(extracts)
    return distributed_findings(collectives_of(extracts), begin, max(end - begin, 1))
