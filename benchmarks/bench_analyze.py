"""Time ``accelview analyze`` (all passes) on a synthetic capture; target ≤ 10 s for 10M slices.

The critical path is walked in a forked helper on the other core (model/analysis/helper.py):
CPU time is printed for both processes beside the wall time. Run:
.venv/bin/python benchmarks/bench_analyze.py [--slices 10000000]
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

import machine_speed
from accelview.capture.synthetic import SyntheticSpec, synthetic_trace
from accelview.model.analysis.report import analyze
from accelview.model.forking import reap
from accelview.model.store.reader import load_capture
from accelview.model.store.writer import write_capture


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slices", type=int, default=10_000_000)
    args = ap.parse_args()
    print(machine_speed.reference())
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.h5"
        write_capture(synthetic_trace(SyntheticSpec(n_slices=args.slices, args_every=50)), path)
        reap(block=True)
        t, c = time.perf_counter(), time.process_time()
        trace = load_capture(path)
        load_s, load_c = time.perf_counter() - t, time.process_time() - c
        helper_c0 = _children_cpu()
        t, c = time.perf_counter(), time.process_time()
        report = analyze(trace)
        analyze_s, analyze_c = time.perf_counter() - t, time.process_time() - c
        reap(block=True)  # the helper's CPU counts once it is reaped
        helper_c = _children_cpu() - helper_c0
    print(f"slices            {len(trace.slices):,}")
    print(f"load              {load_s:.2f} s wall, {load_c:.2f} s CPU")
    print(f"analyze           {analyze_s:.2f} s wall, {analyze_c:.2f} s CPU here + {helper_c:.2f} s CPU in the helper "
          f"({len(report.ops.slice):,} ops labelled, {len(report.gaps):,} gaps, {len(report.findings)} findings)")
    print(f"load + analyze    {load_s + analyze_s:.2f} s wall (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
