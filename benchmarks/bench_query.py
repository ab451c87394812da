"""Fleet query over many host captures: the first query (every capture read and summarised, the
summaries cached beside the captures) and the second (answered from the cache), each a whole
``accelview query`` process as a user runs it. Prints wall and CPU time (the process's own).
Target (issue 24): a cached query over 256 hosts ≤ 1 s.

The fleet is ``--hosts`` hard copies (distinct files, each with its own cache) of the host captures
of one simulated dp-straggler run (``--source-hosts`` hosts × ``--devices`` devices).

Run: .venv/bin/python benchmarks/bench_query.py [--hosts 256] [--workers N] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ACCELVIEW = str(Path(sys.executable).with_name("accelview"))
QUERY = "op ~ '*all_reduce*' and p95_ns > 1us"


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, its stdout) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), r.stdout


def make_fleet(folder: Path, hosts: int, source_hosts: int, devices: int) -> int:
    """``hosts`` captures in ``folder`` copied from one simulated run; returns their total size."""
    src = folder / "source"
    subprocess.run([ACCELVIEW, "profile", "--workload", "dp-straggler", "--param", f"hosts={source_hosts}",
                    "--param", f"devices={devices}", "--param", "steps=8", "-o", str(src)], check=True,
                   capture_output=True)
    made = sorted(src.glob("*.h5"))
    fleet = folder / "fleet"
    fleet.mkdir()
    for i in range(hosts):
        shutil.copyfile(made[i % len(made)], fleet / f"host{i:03d}.h5")
    return sum(p.stat().st_size for p in fleet.glob("*.h5"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=256)
    ap.add_argument("--source-hosts", type=int, default=8)
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--workers", type=int, default=0, help="Dask workers for the first query (0: in-process)")
    ap.add_argument("--repeat", type=int, default=5, help="cached queries timed (the median is printed)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_query_") as tmp:
        size = make_fleet(Path(tmp), args.hosts, args.source_hosts, args.devices)
        fleet = str(Path(tmp) / "fleet")
        cmd = [ACCELVIEW, "query", fleet, QUERY, "--by", "host", "--format", "json"]
        first = cmd + (["--workers", str(args.workers)] if args.workers else [])
        print(f"fleet: {args.hosts} captures ({size / 1e6:.1f} MB) of a {args.source_hosts}-host × {args.devices}-"
              f"device dp-straggler run; query {QUERY!r} --by host")
        wall, cpu, out = timed(first)
        doc = json.loads(out)
        engine = f"{args.workers} Dask workers" if args.workers else "in-process"
        print(f"first query  ({engine}; {doc['computed']} captures summarised): {wall:.2f} s wall, "
              f"{cpu:.2f} s CPU (the command and its workers); {len(doc['rows'])} rows")
        sidecars = sum(p.stat().st_size for p in Path(fleet).glob(".*.fleet.json"))
        print(f"cache beside the captures: {sidecars / 1e3:.0f} kB ({sidecars / args.hosts / 1e3:.1f} kB per host)")
        walls, cpus = [], []
        for _ in range(args.repeat):
            wall, cpu, out = timed(cmd)
            again = json.loads(out)
            if again["computed"] or again["rows"] != doc["rows"]:
                sys.exit("the second query did not come from the cache unchanged")
            walls.append(wall)
            cpus.append(cpu)
        print(f"cached query (whole process, {args.repeat} runs): median {statistics.median(walls):.3f} s wall "
              f"(best {min(walls):.3f}), {statistics.median(cpus):.3f} s CPU; target ≤ 1 s "
              f"(load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
