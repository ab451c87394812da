"""``accelview metrics``: the counter taxonomy, and optionally its values for a capture."""

from __future__ import annotations

import argparse
import json

from accelview.model.analysis.metrics.taxonomy import MetricRegistry
from accelview.model.text.values import format_percent


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the metrics command."""
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--definitions", metavar="FILE", help="metric definitions to check and list instead of the built-in")


def run(args: argparse.Namespace) -> int:
    """List base counters, device constants and derived metrics."""
    reg = MetricRegistry.load(args.definitions)
    if args.json:
        print(json.dumps({
            "base_counters": [vars(c) for c in reg.counters.values()],
            "constants": [vars(c) for c in reg.constants.values()],
            "metrics": [vars(m) for m in reg.metrics.values()],
        }, indent=2))
        return 0
    print(f"Base counters (what the hardware reports) — {len(reg.counters)}")
    for c in reg.counters.values():
        print(f"  {c.name:<26} {c.unit:<7} {c.block:<18} {c.scope:<8} {c.description}")
    print(f"\nDevice constants (from the device spec) — {len(reg.constants)}")
    for k in reg.constants.values():
        print(f"  {k.name:<26} {k.unit:<9} {k.description}")
    print(f"\nDerived metrics — {len(reg.metrics)}")
    for m in sorted(reg.metrics.values(), key=lambda m: (m.group, m.name)):
        flag = f"  (flag at {format_percent(m.threshold, 0)})" if m.threshold is not None else ""
        print(f"  {m.group:<9} {m.name:<26} {m.unit:<8} = {m.expr}{flag}")
    return 0
