"""Time ``accelview diff`` of two synthetic 10M-slice captures (load both, analyse both, compare);
target ≤ 10 s.

The second capture is the first made with another seed: the same lanes and op names with other
durations, so every op family is tested on its ops. Run:
.venv/bin/python benchmarks/bench_diff.py [--slices 10000000]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import machine_speed
from accelview.capture.synthetic import SyntheticSpec, synthetic_trace
from accelview.model.analysis.report import analyze
from accelview.model.compare.diff import compare
from accelview.model.forking import reap
from accelview.model.store.reader import load_capture
from accelview.model.store.writer import write_capture


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slices", type=int, default=10_000_000)
    args = ap.parse_args()
    print(machine_speed.reference())
    with tempfile.TemporaryDirectory() as d:
        paths = [Path(d) / "a.h5", Path(d) / "b.h5"]
        for seed, path in enumerate(paths):
            write_capture(synthetic_trace(SyntheticSpec(n_slices=args.slices, args_every=50, seed=seed)), path)
        t, c = time.perf_counter(), time.process_time()
        traces = [load_capture(p) for p in paths]
        load_s, load_c = time.perf_counter() - t, time.process_time() - c
        t, c = time.perf_counter(), time.process_time()
        diff = compare(*traces)  # both analyses (B's in a forked helper on the other core), then the comparison
        compare_s, compare_c = time.perf_counter() - t, time.process_time() - c
        reap(block=True)  # the helper's CPU counts once it is reaped
        helper_c = resource.getrusage(resource.RUSAGE_CHILDREN)
        helper_c = helper_c.ru_utime + helper_c.ru_stime
        t, c = time.perf_counter(), time.process_time()
        analyze(traces[0], tables=False)  # one of the diff's two analyses, alone
        analyze_s, analyze_c = time.perf_counter() - t, time.process_time() - c
    # CPU time beside wall time: on a shared machine the wall time grows with the neighbours' load.
    print(f"slices            {len(traces[0].slices):,} + {len(traces[1].slices):,}")
    print(f"load both         {load_s:.2f} s wall, {load_c:.2f} s CPU")
    significant = sum(e.significant for e in diff.entries)
    print(f"analyze + compare {compare_s:.2f} s wall, {compare_c:.2f} s CPU here + {helper_c:.2f} s CPU in the "
          f"helper that analysed B ({len(diff.entries)} entries, {significant} significant)")
    print(f"  one of the two analyses again, alone: {analyze_s:.2f} s wall, {analyze_c:.2f} s CPU; the comparison's "
          f"own share ≈ {compare_c - analyze_c:.2f} s CPU (with B's report taken in)")
    print(f"total             {load_s + compare_s:.2f} s wall, {load_c + compare_c + helper_c:.2f} s CPU on both cores "
          "(target ≤ 10 s wall)")
    print(f"summary           {diff.summary}")


if __name__ == "__main__":
    main()
