"""Soak: profile a script that produces ``--events`` events (50M by default) and watch the service.

The capture service runs in this process (``CaptureService``, as ``accelview profile`` runs it);
the script, a loop of launches with a copy every 64 and a sync every 4,096 (three events a launch:
the call, its submission, the op), runs in its child. Printed:

- the service's memory (this process's RSS, from /proc) over time, with the events so far and the
  phase (recording: the spool grows; converting: the records become the capture), and its peak
  per phase: it must stay flat, not grow with the events;
- the seconds per million events at the start and at the end of each phase (constant: nothing
  slows down as the capture grows);
- the file: it opens (its structure checked), holds the events the service counted, and is
  complete.

Run: .venv/bin/python benchmarks/soak.py [--events 50000000] [--live] [--keep]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from accelview.capture.protocol.config import CaptureConfig
from accelview.capture.service.runner import CaptureService, Progress
from accelview.model.store.reader import open_capture

SCRIPT = textwrap.dedent("""\
    import sys
    from accelview.capture import sim
    dev = sim.device(0)
    h = sim.host_buffer((64, 64), "bf16")
    w = dev.alloc((64, 64), "bf16")
    for i in range(int(sys.argv[1])):
        dev.launch("elementwise", elements=4096)
        if i % 64 == 0:
            dev.copy(w, h)
        if i % 4096 == 4095:
            dev.synchronize()
    dev.synchronize()
    """)
EVENTS_PER_LAUNCH = 3


def rss_mb() -> float:
    """This process's resident memory now, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Watch:
    """The progress callback: samples memory every ``every_s`` and the time each million events is reached."""

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self.t0 = time.monotonic()
        self.last = -1e9
        self.samples: list[tuple[float, str, int, float]] = []  # (s, phase, events, RSS MB)
        self.millions: dict[str, list[tuple[int, float]]] = {}  # phase → (million, s)

    def __call__(self, p: Progress) -> None:
        now = time.monotonic() - self.t0
        marks = self.millions.setdefault(p.phase, [])
        while p.events >= (len(marks) + 1) * 1_000_000:
            marks.append((len(marks) + 1, now))
        if now - self.last >= self.every_s:
            self.last = now
            self.samples.append((now, p.phase, p.events, rss_mb()))
            print(f"  {now:7.1f} s  {p.phase:<10} {p.events:>12,} events  service RSS {self.samples[-1][3]:7.1f} MB",
                  flush=True)


def per_million(marks: list[tuple[int, float]], n: int = 3) -> tuple[float, float] | None:
    """Seconds per million events over the first and the last ``n`` millions of a phase."""
    if len(marks) < 2:
        return None
    n = max(1, min(n, (len(marks) - 1) // 2))
    return (marks[n][1] - marks[0][1]) / n, (marks[-1][1] - marks[-1 - n][1]) / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=50_000_000)
    ap.add_argument("--live", action="store_true", help="convert while the script runs")
    ap.add_argument("--every", type=float, default=5.0, help="seconds between two memory samples")
    ap.add_argument("--keep", action="store_true", help="keep the capture (its folder is printed)")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="soak-"))
    script = folder / "soak_script.py"
    script.write_text(SCRIPT)
    out = folder / "soak.h5"
    launches = args.events // EVENTS_PER_LAUNCH
    print(f"soak: {launches:,} launches (~{args.events:,} events), {'--live' if args.live else 'spooled'}, "
          f"into {out}", flush=True)
    watch = Watch(args.every)
    t0 = time.monotonic()
    result = CaptureService(CaptureConfig(output=str(out), live=args.live), [str(script), str(launches)],
                            on_progress=watch).run()
    wall = time.monotonic() - t0
    print(f"ended after {wall:.1f} s: {'complete' if result.complete else 'incomplete: ' + result.reason}; "
          f"{result.progress.events:,} events, {result.progress.bytes_written / 1e6:.1f} MB")
    for phase in ("recording", "converting"):
        rss = [s[3] for s in watch.samples if s[1] == phase]
        if rss:
            half = len(rss) // 2
            print(f"service RSS while {phase}: first sample {rss[0]:.1f} MB, peak of the first half "
                  f"{max(rss[:half] or rss):.1f} MB, peak of the second half {max(rss[half:]):.1f} MB, "
                  f"last {rss[-1]:.1f} MB ({len(rss)} samples)")
        pm = per_million(watch.millions.get(phase, []))
        if pm:
            print(f"seconds per million events while {phase}: {pm[0]:.2f} at the start, {pm[1]:.2f} at the end")
    with open_capture(out) as f:
        meta = f.metadata.get("capture", {})
        ok = f.finalized and meta.get("events") == result.progress.events and result.complete
        print(f"file: opens, finalized {f.finalized}, complete {f.complete}, {meta.get('events', 0):,} events in its "
              f"metadata (the service counted {result.progress.events:,}) -> {'OK' if ok else 'FAILED'}")
    if args.keep:
        print(f"kept in {folder}")
    else:
        shutil.rmtree(folder)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
