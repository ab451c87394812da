"""Stragglers named right: dp-straggler over random settings (hosts, devices, the slow host or
device, the delay and its cause), analysed from the host captures read together; prints each
setting and whether the top finding is the straggler with the right culprit and cause, then the
share that is right. Target (issue 19): ≥ 95%.

Run: .venv/bin/python benchmarks/bench_straggler.py [--runs 30] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from accelview.capture.sim import workloads
from accelview.model.analysis.distributed import analyze_cluster
from accelview.model.cluster import align_cluster

CAUSES = ("compute", "host", "pcie", "network")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    right = culprit_right = 0
    t0 = time.perf_counter()
    for run in range(args.runs):
        hosts, devices = int(rng.integers(2, 5)), int(rng.choice([2, 4, 8]))
        slow_host = int(rng.integers(0, hosts))
        slow_device = -1 if rng.random() < 0.3 else int(rng.integers(0, devices))
        cause = str(rng.choice(CAUSES))
        delay = float(rng.uniform(150, 600))
        params = {"hosts": hosts, "devices": devices, "steps": 4, "slow_host": slow_host, "slow_device": slow_device,
                  "cause": cause, "delay_us": round(delay, 1)}
        cluster = workloads.run_cluster("dp-straggler", params, seed=run)
        aligned, _ = align_cluster(cluster.traces())  # each host in its own raw time: onto host0's clock
        report = analyze_cluster(aligned)
        top = report["findings"][0] if report["findings"] else {}
        want = {"host": f"host{slow_host}", "device": None if slow_device < 0 else slow_device}
        got_culprit = top.get("kind") == "straggler" and top.get("culprit") == want
        got = got_culprit and top["evidence"]["cause"] == cause
        right += got
        culprit_right += got_culprit
        said = f"{top.get('culprit')} {top.get('evidence', {}).get('cause')}" if top else "no finding"
        print(f"{run:3d}  {hosts}x{devices}  slow {want}  {cause:<8} {delay:5.0f} us  → {said}  "
              f"{'right' if got else 'WRONG'}")
    print(f"straggler right (culprit and cause): {right}/{args.runs} = {right / args.runs:.0%}; "
          f"culprit alone: {culprit_right}/{args.runs} = {culprit_right / args.runs:.0%} "
          f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
