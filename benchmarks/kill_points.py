"""Issue 23's kill test: SIGKILL ``accelview profile`` at random instants, in each mode.

For each mode (spooled: the default, converting after the script; ``--live``; and ``service``:
the spooled mode with only the service killed, its child left to notice) an unkilled run first
gives the events of the whole run and how long it takes from the start of the command to its
end (recording, converting and finalising). Then ``--points`` runs are each killed after a
delay drawn uniformly from that span, so the kills fall while the script records, while the
spool is converted and while the file is finalised. After each kill the output must read back
(after ``accelview convert`` of the spool, when the output is still the placeholder that names
it) and hold every event the service had received whole before the kill (the events of the
whole frames in the spool at that instant, or of the whole run once the capture was in place).

Printed per mode: kill points tried / captures readable / events lost, and where the kills
fell (the spool converted after the kill, or the finished capture already in place); a run that
ended by itself before its kill with fewer events than the unkilled run ("ended short": its child
could not start, or died) is printed with its reason and not counted as a kill's loss.

Run: .venv/bin/python benchmarks/kill_points.py [--points 50] [--launches 60000] [--modes spooled live service]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from kill_points import judge, kill, start, wait_for


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=50)
    ap.add_argument("--launches", type=int, default=60_000, help="launches of the profiled script")
    ap.add_argument("--modes", nargs="+", default=["spooled", "live", "service"])
    ap.add_argument("--seed", type=int, default=23)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    failed = 0
    for mode in args.modes:
        live = mode == "live"
        with tempfile.TemporaryDirectory(prefix="kill-points-") as d:
            folder = Path(d)
            proc, out = start(folder, args.launches, live)
            wait_for(proc, out.exists)
            t0 = time.monotonic()
            proc.wait()
            span = time.monotonic() - t0
            whole = judge(out, 0).kept
            print(f"{mode}: an unkilled run: {whole:,} events, {span:.1f} s from its start to its end", flush=True)
            tried = readable = lost = 0
            states: dict[str, int] = {}
            for k in range(args.points):
                run = folder / f"k{k}"
                run.mkdir()
                (run / "work.py").write_text((folder / "work.py").read_text())
                proc, out = start(run, args.launches, live)
                wait_for(proc, out.exists)
                delay = rng.uniform(0.0, span * 1.05)
                wait_for(proc, lambda: False, timeout=delay)
                ended = proc.poll()  # the command ended by itself before the kill (then nothing was killed)
                kill(proc, service_only=mode == "service")
                o = judge(out, whole)
                if ended is not None and o.state == "final" and o.kept < whole:
                    # not a kill's loss: the run itself ended short (a child that could not start or
                    # died early sends nothing); the judge, which takes a finished capture for the
                    # whole run, would count every event of it as lost
                    print(f"  point {k}: the command ended by itself (status {ended}) before the kill at "
                          f"{delay:.2f} s with {o.kept:,} events: {o.problem or 'no reason given'}", flush=True)
                    o.state, o.flushed = "ended short", o.kept
                tried += 1
                readable += o.readable
                lost += o.lost
                states[o.state] = states.get(o.state, 0) + 1
                if not o.readable or o.lost:
                    print(f"  point {k} at {delay:.2f} s: {o.state}, readable {o.readable}, flushed {o.flushed:,}, "
                          f"kept {o.kept:,} {o.problem}", flush=True)
                shutil.rmtree(run)
            failed += (tried - readable) + (lost > 0)
            where = ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
            print(f"{mode}: kill points tried {tried} / captures readable {readable} / events lost {lost} "
                  f"(left: {where})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
