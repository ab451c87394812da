"""Write and read a synthetic capture; print write time, size, open time, window read, memory.

Run: .venv/bin/python benchmarks/bench_capture_io.py [--slices 10000000]
Targets (issue 2): <= 12 bytes/slice on disk, open <= 0.2 s, 1% window read <= 20 ms,
in-memory <= 40 bytes/slice.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

from accelview.capture.synthetic import SyntheticSpec, synthetic_trace
from accelview.model.store.reader import load_capture, open_capture
from accelview.model.store.writer import write_capture


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slices", type=int, default=10_000_000)
    ap.add_argument("--lanes", type=int, default=64)
    args = ap.parse_args()

    t = time.perf_counter()
    trace = synthetic_trace(SyntheticSpec(n_slices=args.slices, n_lanes=args.lanes))
    gen_s = time.perf_counter() - t
    n = len(trace.slices)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.h5"
        t = time.perf_counter()
        write_capture(trace, path)
        write_s = time.perf_counter() - t
        size = path.stat().st_size
        opens = []
        for _ in range(5):
            t = time.perf_counter()
            f = open_capture(path)
            opens.append(time.perf_counter() - t)
            f.close()
        t0, t1 = trace.time_bounds()
        lane = int(trace.slices.track[n // 2])
        width = (t1 - t0) // 100
        with open_capture(path) as f:
            reads, found = [], 0
            for i in range(20):
                w0 = t0 + (t1 - t0 - width) * i // 20
                t = time.perf_counter()
                ids, _rows = f.window(lane, w0, w0 + width)
                reads.append(time.perf_counter() - t)
                found += len(ids)
        in_memory = trace.slices.nbytes / n
        del trace
        t = time.perf_counter()
        loaded = load_capture(path)
        load_s = time.perf_counter() - t
    print(f"slices                    {n:,} on {args.lanes} lanes (generated in {gen_s:.2f} s)")
    print(f"write                     {write_s:.2f} s")
    print(f"on disk                   {size / n:.2f} bytes/slice ({size / 1e6:.1f} MB, all tables)")
    print(f"open (metadata+indexes)   {statistics.median(opens) * 1e3:.1f} ms median of 5")
    print(f"1% window of one track    {statistics.median(reads) * 1e3:.2f} ms median of 20 "
          f"({found / len(reads):.0f} slices each)")
    print(f"full load                 {load_s:.2f} s ({len(loaded.slices):,} slices)")
    print(f"in memory                 {in_memory:.1f} bytes/slice (slices table)")
    print(f"peak RSS                  {_peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
