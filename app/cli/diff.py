"""``accelview diff A B``: what changed between two runs, beyond run-to-run noise, and why.

A and B are each one capture or trace, or a distributed run: a folder of host captures or of
PyTorch (Kineto) rank traces, a merged cluster capture beside a folder, or several files given
with ``--a FILE… --b FILE…``; then the hosts or ranks are compared member by member."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from accelview.model.errors import AccelviewError


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the diff command."""
    p.add_argument("a", nargs="?", help="the earlier run (baseline): capture (.h5), trace (.json, .json.gz), or a "
                                        "folder of host captures or of PyTorch (Kineto) rank traces")
    p.add_argument("b", nargs="?", help="the later run, compared with A")
    p.add_argument("--a", dest="a_files", nargs="+", metavar="FILE",
                   help="run A as several files (host captures or rank traces), instead of A")
    p.add_argument("--b", dest="b_files", nargs="+", metavar="FILE", help="run B as several files, instead of B")
    p.add_argument("--json", action="store_true", help="print the documented JSON object instead of text")
    p.add_argument("--min-change", type=float, default=1.0, metavar="PCT",
                   help="changes under PCT%% of A count as no significant change (default 1); this filters no "
                        "entry out: they are listed after the significant ones, and --json has every entry")
    p.add_argument("--top", type=int, default=20, metavar="N",
                   help="changes to list as text (default 20); --json lists them all")


def _sides(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """Run A's and run B's files: A B, --a FILE… --b FILE…, or one run as files and the other positional."""
    given = [p for p in (args.a, args.b) if p]
    if args.a_files and args.b_files and not given:
        return args.a_files, args.b_files
    if bool(args.a_files) != bool(args.b_files) and len(given) == 1:
        return (args.a_files, given) if args.a_files else (given, args.b_files)
    if not args.a_files and not args.b_files and len(given) == 2:
        return [given[0]], [given[1]]
    raise AccelviewError("accelview diff: give the two runs either as A B or with --a FILE… --b FILE…")


def run(args: argparse.Namespace) -> int:
    """Compare two runs and print the diff."""
    if args.top < 1:
        raise AccelviewError("accelview diff: --top must be at least 1")
    if not args.min_change >= 0:
        raise AccelviewError(f"accelview diff: --min-change must be a percentage ≥ 0, got {args.min_change}")
    a, b = _sides(args)
    if args.a_files or args.b_files or len(a) > 1 or len(b) > 1 or any(Path(p).is_dir() for p in (*a, *b)):
        return _run_members(args, a, b)
    from accelview.model.compare.diff import compare
    from accelview.model.compare.inputs import check_comparable
    from accelview.model.loader import load_trace
    from accelview.model.text.diff import format_diff

    ta, tb = load_trace(a[0]), load_trace(b[0])
    check_comparable(ta, tb, a[0], b[0])
    d = compare(ta, tb, args.min_change)
    print(json.dumps(d.to_json()) if args.json else format_diff(d, args.top))
    return 0


def _run_members(args: argparse.Namespace, a: list[str], b: list[str]) -> int:
    """Two distributed runs (hosts or ranks) compared member by member."""
    from accelview.model.cluster.sides import cluster_findings, read_sides
    from accelview.model.compare.clusters import compare_members
    from accelview.model.text.cluster_diff import format_cluster_diff

    side_a, side_b = read_sides(a, b)
    try:
        d = compare_members(side_a.kind, side_a.members, side_b.members, args.min_change,
                            (side_a.label, side_b.label), (cluster_findings(side_a), cluster_findings(side_b)))
    except ValueError as e:
        raise AccelviewError(f"{side_a.label} vs {side_b.label}: {e}") from None
    if side_a.size != side_b.size:
        d.notes.append(f"A is a run of {side_a.size} {side_a.kind}, B of {side_b.size}")
    print(json.dumps(d.to_json()) if args.json else format_cluster_diff(d, args.top))
    return 0
