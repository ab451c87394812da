"""Import the largest real trace (MTIA, 456k events) against Holistic Trace Analysis.

Whole processes, one after the other: ``python -c "import_trace(...)"`` and, when a Python
with HTA is given, ``TraceAnalysis(trace_dir=...)`` on the same file; wall time and peak RSS
of each, and their ratios. Then events per second in-process (median of ``--repeat`` runs).
Targets (issue 7): whole process ≥ 10× faster than HTA with ≤ ⅓ of its memory; ≥ 1M events/s.

Run: .venv/bin/python benchmarks/bench_import.py [--hta /tmp/hta-venv/bin/python] [--trace PATH]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from accelview.model.importers import import_trace

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "kineto"
TRACE = TRACES / "mtia_1rank_inference_accelerator.json.gz"
OURS = "from accelview.model.importers import import_trace; import sys; import_trace(sys.argv[1])"
HTA = ("import logging, sys; logging.disable(logging.WARNING); from hta.trace_analysis import TraceAnalysis; "
       "TraceAnalysis(trace_dir=sys.argv[1])")


def run(python: str, code: str, arg: str) -> tuple[float, float]:
    """(wall s, peak RSS MB) of one child process."""
    t = time.perf_counter()
    subprocess.run([python, "-c", code, arg], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--hta", help="a Python interpreter with holistictraceanalysis installed")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    ours_s, ours_mb = run(sys.executable, OURS, str(args.trace))
    print(f"accelview import, whole process   {ours_s:6.2f} s  {ours_mb:6.0f} MB peak RSS")
    if args.hta:
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / args.trace.name).symlink_to(args.trace.resolve())
            hta_s, hta_mb = run(args.hta, HTA, d)
        hta_mb = max(hta_mb, ours_mb)  # RUSAGE_CHILDREN keeps the largest child so far
        print(f"HTA TraceAnalysis, whole process  {hta_s:6.2f} s  {hta_mb:6.0f} MB peak RSS")
        print(f"ratio                             {hta_s / ours_s:6.1f}× faster, {ours_mb / hta_mb:.2f}× the memory")
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        trace = import_trace(args.trace)
        times.append(time.perf_counter() - t)
    n = trace.metadata["import_stats"]["events"]
    best, med = min(times), statistics.median(times)
    print(f"in-process import                 {med:6.2f} s median, {best:.2f} s best: "
          f"{n / med / 1e6:.2f}M events/s median ({n:,} events, {len(trace.slices):,} slices)")


if __name__ == "__main__":
    main()
