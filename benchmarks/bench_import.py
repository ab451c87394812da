"""Import the largest real trace (MTIA, 456k events) against Holistic Trace Analysis.

Whole processes, one after the other: ``python -c "import_trace(...)"`` (``--repeat`` runs)
and, when a Python with HTA is given, ``TraceAnalysis(trace_dir=...)`` on the same file; wall
time and peak RSS of each (ours: the importing process plus its helper process, added up,
an upper bound since they share pages), and their ratios. Then events per second in-process
(median and best of ``--repeat`` runs). The load average is printed with the figures: the
machine is shared, and timings are only comparable at a similar load. accelview's modules
are compiled to bytecode first, as an installed package's are (machine_speed.compile_accelview).
Targets (issue 7): whole process ≥ 10× faster than HTA with ≤ ⅓ of its memory; ≥ 1M events/s.

Run: .venv/bin/python benchmarks/bench_import.py [--hta /tmp/hta-venv/bin/python] [--trace PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import machine_speed
from accelview.model.importers import import_trace

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "kineto"
TRACE = TRACES / "mtia_1rank_inference_accelerator.json.gz"
# Peak RSS in KB of the process itself and of its children (the helper), printed at the end.
PEAKS = "import resource as r; print(*(r.getrusage(w).ru_maxrss for w in (r.RUSAGE_SELF, r.RUSAGE_CHILDREN)))"
# The helper is reaped after the import returns (forking.reap): wait for it, so that its peak counts.
OURS = ("from accelview.model.importers import import_trace; from accelview.model import forking; import sys; "
        f"import_trace(sys.argv[1]); forking.reap(block=True); {PEAKS}")
HTA = ("import logging, sys; logging.disable(logging.WARNING); from hta.trace_analysis import TraceAnalysis; "
       f"TraceAnalysis(trace_dir=sys.argv[1]); {PEAKS}")


def run(python: str, code: str, arg: str) -> tuple[float, float]:
    """(wall s, peak RSS MB: the process's own plus its children's) of one child process."""
    t = time.perf_counter()
    out = subprocess.run([python, "-c", code, arg], check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t
    own, children = (int(v) for v in out.split()[-2:])
    return wall, (own + children) / 1024


def load() -> str:
    """The 1-minute load average (2 cores: 2.0 means both busy with other work)."""
    return f"load {os.getloadavg()[0]:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--hta", help="a Python interpreter with holistictraceanalysis installed")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    machine_speed.compile_accelview()
    print(f"{args.trace.name}, {load()}")
    print(machine_speed.reference())
    ours = [run(sys.executable, OURS, str(args.trace)) for _ in range(args.repeat)]
    walls, peaks = [w for w, _ in ours], [m for _, m in ours]
    best, med = min(walls), statistics.median(walls)
    print(f"accelview import, whole process   {med:6.2f} s median, {best:.2f} s best of {len(ours)}  "
          f"{max(peaks):6.0f} MB peak RSS  ({load()})")
    if args.hta:
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / args.trace.name).symlink_to(args.trace.resolve())
            hta_s, hta_mb = run(args.hta, HTA, d)
        print(f"HTA TraceAnalysis, whole process  {hta_s:6.2f} s {'':19}  {hta_mb:6.0f} MB peak RSS  ({load()})")
        print(f"ratio                             {hta_s / med:6.1f}× faster (median), {hta_s / best:.1f}× (best), "
              f"{max(peaks) / hta_mb:.2f}× the memory")
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        trace = import_trace(args.trace)
        times.append(time.perf_counter() - t)
    n = trace.metadata["import_stats"]["events"]
    best, med = min(times), statistics.median(times)
    print(f"in-process import                 {med:6.2f} s median, {best:.2f} s best: "
          f"{n / med / 1e6:.2f}M events/s median, {n / best / 1e6:.2f}M best "
          f"({n:,} events, {len(trace.slices):,} slices; {load()})")


if __name__ == "__main__":
    main()
