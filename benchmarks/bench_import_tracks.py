"""Import Chrome traces with one event in each of N distinct processes: the time to assemble
tracks must grow linearly with N (issue 23: 20k pids took 14 s, 200k over a minute, when each
process scanned every thread). Prints seconds and µs per process for each N.

Run: .venv/bin/python benchmarks/bench_import_tracks.py [--pids 20000 200000]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from accelview.model.loader import load_trace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pids", type=int, nargs="+", default=[20_000, 200_000])
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.pids:
            path = Path(tmp) / f"pids{n}.json"
            path.write_text(json.dumps({"traceEvents": [
                {"ph": "X", "pid": i, "tid": i, "ts": i, "dur": 1, "name": "op"} for i in range(n)]}))
            start = time.perf_counter()
            trace = load_trace(path)
            took = time.perf_counter() - start
            print(f"{n:>8,} pids ({path.stat().st_size / 1e6:.1f} MB): {took:.2f} s, "
                  f"{took / n * 1e6:.1f} µs per process, {len(trace.tracks):,} tracks")


if __name__ == "__main__":
    main()
