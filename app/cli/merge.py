"""``accelview merge run/*.h5 -o cluster.h5``: a cluster's host captures as one capture on host0's
clock, every raw timestamp recoverable through the stored clock segments (docs/FORMAT.md)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the merge command."""
    p.add_argument("files", nargs="+", help="the host captures of one cluster (host0.h5 …), or their directory")
    p.add_argument("-o", "--output", required=True, help="the merged capture (.h5)")
    p.add_argument("--force", action="store_true", help="overwrite OUTPUT if it exists")


def run(args: argparse.Namespace) -> int:
    """Align and merge the host captures, write the result, say how well each host was placed."""
    from accelview.model.cluster import load_cluster
    from accelview.model.cluster.inputs import expand
    from accelview.model.errors import AccelviewError, CaptureError
    from accelview.model.store.writer import write_capture
    from accelview.model.text.values import format_count, format_duration

    out = Path(args.output)
    if out.suffix.lower() not in (".h5", ".hdf5"):
        raise AccelviewError(f"{out}: merge writes a capture (.h5)")
    if out.exists() and not args.force:
        raise CaptureError(out, "already exists (use --force to overwrite it)")
    files = expand(args.files)
    if out.exists() and any(out.resolve() == f.resolve() for f in files if f.exists()):
        raise CaptureError(out, "is one of the inputs: write the merge to another file")
    t0 = time.perf_counter()
    trace = load_cluster(files)
    if len(files) == 1 and "merged" in trace.metadata:  # load_cluster gives a merged capture back as it is
        raise CaptureError(files[0], "already a merged cluster capture")
    write_capture(trace, out, overwrite=True)
    merged = trace.metadata["merged"]
    bounds = ", ".join(f"{h} ±{format_duration(a['error_ns'])}" + ("" if a["synced"] else " (no sync samples)")
                       for h, a in merged["alignment"].items() if h != "host0")
    print(f"wrote {out} ({len(merged['hosts'])} hosts on host0's clock, {format_count(len(trace.slices))} slices"
          f"{'; ' + bounds if bounds else ''}; {time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0
