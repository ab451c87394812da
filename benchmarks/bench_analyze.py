"""Time ``accelview analyze`` (all passes) on a synthetic capture; target ≤ 10 s for 10M slices.

Run: .venv/bin/python benchmarks/bench_analyze.py [--slices 10000000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from accelview.capture.synthetic import SyntheticSpec, synthetic_trace
from accelview.model.analysis.report import analyze
from accelview.model.store.reader import load_capture
from accelview.model.store.writer import write_capture


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slices", type=int, default=10_000_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.h5"
        write_capture(synthetic_trace(SyntheticSpec(n_slices=args.slices, args_every=50)), path)
        t = time.perf_counter()
        trace = load_capture(path)
        load_s = time.perf_counter() - t
        t = time.perf_counter()
        report = analyze(trace)
        analyze_s = time.perf_counter() - t
    print(f"slices            {len(trace.slices):,}")
    print(f"load              {load_s:.2f} s")
    print(f"analyze           {analyze_s:.2f} s ({len(report.ops.slice):,} ops labelled, {len(report.gaps):,} gaps, "
          f"{len(report.findings)} findings)")
    print(f"load + analyze    {load_s + analyze_s:.2f} s")


if __name__ == "__main__":
    main()
