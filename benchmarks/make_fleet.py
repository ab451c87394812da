"""Write a large simulated fleet, one capture per host, with stragglers, slow links and a
clock-stepped host planted, and what was planted in fleet-truth.json beside them.

    .venv/bin/python benchmarks/make_fleet.py --hosts 64 --devices 8 --out /tmp/fleet64 [--seed 0]

Prints the planted faults, the time taken (wall and CPU) and the peak memory.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

from accelview.capture.sim.cluster.fleet import FleetPlan, write_fleet


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, write the fleet, print what was planted."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", type=int, default=64)
    p.add_argument("--devices", type=int, default=8)
    p.add_argument("--out", required=True, help="folder for host0.h5 … and fleet-truth.json")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=4, help="data-parallel steps (simulated time grows with them)")
    p.add_argument("--delay-us", type=float, default=400.0, help="the latest straggler's delay per step")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    a = p.parse_args(argv)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        plan = FleetPlan.random(a.hosts, a.devices, a.seed, delay_us=a.delay_us, steps=a.steps)
        truth = write_fleet(plan, a.out, overwrite=a.force)
    except ValueError as e:
        print(f"make_fleet: {e}", file=sys.stderr)
        return 2
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    for r in truth["planted"]:
        what = f"{r['cause']}, {r['delay_us']:g} µs/step" if "cause" in r else f"+{r['jump_us']:g} µs"
        where = r["host"] + (f" device {r['device']}" if r["device"] is not None else "")
        print(f"planted {r['kind']:<18} {where:<18} {what}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"fleet: {a.hosts} hosts x {a.devices} devices, {truth['slices']:,} slices in {a.out}: "
          f"{wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {peak:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
