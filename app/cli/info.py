"""``accelview info FILE``: what is in a capture or trace, and over how long."""

from __future__ import annotations

import argparse
import json


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the info command."""
    p.add_argument("file", nargs="+", help="capture (.h5), trace (.json, .json.gz), a directory of per-rank traces, "
                                           "or a cluster's host captures (several, or their directory)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def run(args: argparse.Namespace) -> int:
    """Print the summary."""
    from accelview.app.cli.cluster_input import load_input
    from accelview.model.text.summary import format_summary, summarize

    summary = summarize(load_input(args.file))
    print(json.dumps(summary, indent=2, default=str) if args.json else format_summary(summary))
    return 0
