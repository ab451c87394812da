"""Paint time of one 1920×1080 timeline frame of a simulated cluster, grouped by host and device
and with the devices together, a collective selected (its participants and skew drawn).

Simulates ``dp-straggler`` with ``--hosts`` × ``--devices``, reads the host captures as one
cluster (``load_cluster``) and paints the frame around one all-reduce. Prints figures (warm
median wall and CPU ms over the frames after the first); not a timed test.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_cluster_view.py [--hosts 16 --devices 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from accelview.app.paint import TimelinePainter
from accelview.app.render import ensure_gui_app
from accelview.app.state import ViewState
from accelview.app.theme import DARK
from accelview.capture.sim import workloads
from accelview.model.cluster import load_cluster
from accelview.model.store.writer import write_capture
from PySide6.QtGui import QImage, QPainter

W, H = 1920, 1080
FRAMES = 30


def main() -> None:
    """Simulate, merge, paint; print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    ensure_gui_app()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (other processes skew the figures)")
    with tempfile.TemporaryDirectory() as tmp:
        params = {"hosts": args.hosts, "devices": args.devices, "steps": args.steps}
        for h, t in enumerate(workloads.run_cluster("dp-straggler", params, seed=0).traces()):
            write_capture(t, Path(tmp) / f"host{h}.h5")
        t0 = time.perf_counter()
        trace = load_cluster(tmp)
        print(f"{args.hosts} hosts × {args.devices} devices: {len(trace.slices):,} slices, "
              f"load_cluster {time.perf_counter() - t0:.2f} s")
    state = ViewState(trace)
    painter = TimelinePainter(state, DARK)
    state.set_width(painter.content_width(W))
    state.set_fit_height(H - 54)
    img = QImage(W, H, QImage.Format.Format_ARGB32_Premultiplied)
    for together in (False, True):
        state.set_together(together)
        t0 = time.perf_counter()
        found = state.collectives.all()
        match_ms = (time.perf_counter() - t0) * 1000
        marks = found[len(found) // 2]
        state.select(int(marks.slices[0]))
        skew = max(float(marks.skew_ns.max()), 1.0)
        state.show_window(float(marks.arrivals.min()) - skew, marks.last_arrival_ns + skew)
        wall, cpu = [], []
        for _ in range(FRAMES + 1):
            c, t = time.process_time(), time.perf_counter()
            p = QPainter(img)
            painter.paint(p, W, H)
            p.end()
            wall.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
        name = "devices together" if together else "grouped"
        print(f"    {name:>16}: {len(state.layout.lanes)} rows, first frame {wall[0]:.1f} ms, warm median "
              f"{statistics.median(wall[1:]):.1f} ms (CPU {statistics.median(cpu[1:]):.1f}); "
              f"{len(marks.slices)} participants highlighted; collectives matched in {match_ms:.0f} ms")


if __name__ == "__main__":
    main()
