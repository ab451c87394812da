"""How close the memory estimates that refuse a file too large (model/memory.py) come to what
loading really takes: peak RSS of ``load_trace`` in a fresh process, above its RSS once the
modules are imported, against the estimate, for a synthetic capture and its Chrome JSON export.

Run: .venv/bin/python benchmarks/bench_memory_need.py [--slices 1000000 4000000]
An estimate under the measured peak would let a file through that swaps: it must stay above.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import json, sys, time
from accelview.model.loader import load_trace, memory_need
def rss(key="VmRSS"):  # VmHWM, not ru_maxrss: that one keeps the parent's peak across the exec
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))
need = memory_need(sys.argv[1])
base = rss()
t, c = time.perf_counter(), time.process_time()
trace = load_trace(sys.argv[1])
print(json.dumps({"need": need, "peak": rss("VmHWM") - base,
                  "slices": len(trace.slices), "wall": time.perf_counter() - t, "cpu": time.process_time() - c}))
"""


def measure(path: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slices", type=int, nargs="*", default=[1_000_000, 4_000_000])
    ap.add_argument("--files", nargs="*", default=[], help="also these captures or traces (real ones)")
    args = ap.parse_args()
    for f in map(Path, args.files):
        report(f.name, f)
    from accelview.capture.synthetic import SyntheticSpec, synthetic_trace
    from accelview.model.export.chrome import export_chrome
    from accelview.model.store.writer import write_capture

    with tempfile.TemporaryDirectory() as d:
        for n in args.slices:
            trace = synthetic_trace(SyntheticSpec(n_slices=n, n_lanes=64))
            files = {"capture": Path(d) / f"s{n}.h5", "json": Path(d) / f"s{n}.json"}
            write_capture(trace, files["capture"])
            export_chrome(trace, files["json"])
            del trace
            for kind, path in files.items():
                report(kind, path)


def report(kind: str, path: Path) -> None:
    """Measure one file and print its line."""
    t = time.perf_counter()
    m = measure(path)
    size = path.stat().st_size / 1e6
    print(f"{kind} {m['slices']:,} slices ({size:.0f} MB file): peak {m['peak'] / 1e6:.0f} MB above "
          f"the imports, estimated {m['need'] / 1e6:.0f} MB ({m['need'] / m['peak']:.2f}x); "
          f"load {m['wall']:.1f} s wall, {m['cpu']:.1f} s CPU ({time.perf_counter() - t:.1f} s in all)", flush=True)


if __name__ == "__main__":
    main()
