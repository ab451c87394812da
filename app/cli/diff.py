"""``accelview diff A B``: what changed between two runs, beyond run-to-run noise, and why."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from accelview.model.compare.diff import compare
from accelview.model.compare.inputs import check_comparable
from accelview.model.errors import AccelviewError
from accelview.model.loader import load_trace
from accelview.model.text.diff import format_diff, listed


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the diff command."""
    p.add_argument("a", help="the earlier run (baseline): capture (.h5) or trace (.json, .json.gz)")
    p.add_argument("b", help="the later run, compared with A")
    p.add_argument("--json", action="store_true", help="print the documented JSON object instead of text")
    p.add_argument("--min-change", type=float, default=1.0, metavar="PCT",
                   help="changes under PCT%% of A count as no significant change and are not listed (default 1)")
    p.add_argument("--top", type=int, default=20, metavar="N", help="changes to list as text (default 20)")


def run(args: argparse.Namespace) -> int:
    """Compare two files and print the diff."""
    if args.top < 1:
        raise AccelviewError("accelview diff: --top must be at least 1")
    if not args.min_change >= 0:
        raise AccelviewError(f"accelview diff: --min-change must be a percentage ≥ 0, got {args.min_change}")
    for path in (args.a, args.b):
        if Path(path).is_dir():
            raise AccelviewError(f"{path}: comparing directories of ranks or hosts is not supported yet; "
                                 "give one capture or trace per run")
    a, b = load_trace(args.a), load_trace(args.b)
    check_comparable(a, b, args.a, args.b)
    d = compare(a, b, args.min_change)
    if args.json:
        out = d.to_json()
        keep = {id(e) for e in listed(d)}
        out["entries"] = [e.to_json() for e in d.entries if id(e) in keep]
        print(json.dumps(out))
    else:
        print(format_diff(d, args.top))
    return 0

