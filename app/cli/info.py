"""``accelview info FILE``: what is in a capture or trace, and over how long."""

from __future__ import annotations

import argparse
import json


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the info command."""
    p.add_argument("file", help="capture (.h5), trace (.json, .json.gz) or a directory of per-rank traces")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def run(args: argparse.Namespace) -> int:
    """Print the summary."""
    from accelview.model.loader import load_trace
    from accelview.model.text.summary import format_summary, summarize

    summary = summarize(load_trace(args.file))
    print(json.dumps(summary, indent=2, default=str) if args.json else format_summary(summary))
    return 0
