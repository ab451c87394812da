"""Fleet analysis on Dask at scale: generated fleets of 16 and 64 hosts analysed with 1 and 2
worker processes, against what was planted in them.

    .venv/bin/python benchmarks/bench_fleet.py [--hosts 16,64] [--devices 8] [--workers 1,2] [--dir DIR]

Each fleet is generated once (benchmarks/make_fleet.py's generator) into ``DIR/fleetH`` (a
temporary folder without ``--dir``; an existing fleet there is reused). Per fleet and worker
count it prints the analysis time (a LocalCluster started first, its start timed apart; every
capture's extract recomputed, not read from the sidecars), the speed-up over the first worker
count, the client's peak memory (tracemalloc peak of this process during the analysis, and its
resident set before and at its peak: it must
not grow with the hosts, the captures are read by the workers only), whether the planted
stragglers rank as the latest hosts and the stepped clock is found, and the time of a second,
cached fleet query when ``accelview query`` exists on this branch. Wall and CPU times (CPU: this
process, the client, alone) are printed side by side. Target: 64 hosts in ≤ 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from accelview.capture.sim.cluster.fleet import TRUTH_FILE, FleetPlan, write_fleet
from accelview.model.fleet.analyze import analyze_fleet
from accelview.model.fleet.engine import close_client, open_client


def fleet(folder: Path, hosts: int, devices: int, seed: int) -> dict[str, Any]:
    """The fleet in ``folder`` (generated there first when it is not), its truth."""
    truth_file = folder / TRUTH_FILE
    if truth_file.exists():
        truth = json.loads(truth_file.read_text())
        if (truth["hosts"], truth["devices"], truth["seed"]) == (hosts, devices, seed):
            return truth
    t0, c0 = time.perf_counter(), time.process_time()
    truth = write_fleet(FleetPlan.random(hosts, devices, seed), folder, overwrite=True)
    print(f"generated {hosts} hosts x {devices} devices in {folder}: {time.perf_counter() - t0:.1f} s wall, "
          f"{time.process_time() - c0:.1f} s CPU")
    return truth


def found(report: dict[str, Any], truth: dict[str, Any]) -> tuple[str, str]:
    """Whether the planted late hosts are the report's top-ranked ones, and whether the stepped
    clock (and only it) was found: one line each."""
    late = set(truth["late_hosts"])
    top = {h["host"] for h in report["hosts"][:len(late)]}
    ranks = {h["host"]: h["rank"] for h in report["hosts"]}
    planted = ", ".join(f"{p['kind']} {p['host']}#{ranks.get(p['host'])}" for p in truth["stragglers"])
    stragglers = f"{'yes' if top == late else 'NO'} ({planted}; late hosts {len(late)}, top {len(late)} ranked " \
                 f"{'the same' if top == late else sorted(top)})"
    stepped = {s["host"] for s in truth["clock_steps"]}
    seen = {h["host"] for h in report["hosts"] if h["clock"]["steps"] > 0}
    step = f"{'yes' if seen == stepped else 'NO'} (planted {sorted(stepped)}, found {sorted(seen)})"
    return stragglers, step


def rss_mib(field: str) -> float:
    """This process's ``VmRSS`` or ``VmHWM`` (its peak since the last reset) in MiB (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def reset_rss_peak() -> float:
    """Reset this process's RSS high-water mark (Linux: ``clear_refs`` 5) and return its RSS now."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return rss_mib("VmRSS")


def cached_query(folder: Path) -> float:
    """Seconds of a second, cached ``accelview query FOLDER "op == 'all_reduce'" --by host`` in
    this process (the first one fills the sidecar caches; benchmarks/bench_query.py times the
    whole command, interpreter start included)."""
    from accelview.app.cli.main import main

    argv = ["query", str(folder), "op == 'all_reduce'", "--by", "host", "--format", "json"]
    with contextlib.redirect_stdout(io.StringIO()):
        main(argv)
        t0 = time.perf_counter()
        main(argv)
    return time.perf_counter() - t0


def run(folder: Path, truth: dict[str, Any], workers: list[int]) -> None:
    """Analyse the fleet in ``folder`` with each worker count and print its lines."""
    hosts = truth["hosts"]
    first = None
    for w in workers:
        t0 = time.perf_counter()
        client = open_client(workers=w)
        start = time.perf_counter() - t0
        try:
            rss0 = reset_rss_peak()
            tracemalloc.start()
            t0, c0 = time.perf_counter(), time.process_time()
            report = analyze_fleet(folder, client=client, cache=False)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            rss_peak = rss_mib("VmHWM")
        finally:
            close_client(client)
        first = first or wall
        stragglers, step = found(report, truth)
        print(f"{hosts} hosts, {w} worker{'s' if w > 1 else ''}: analysis {wall:.1f} s wall ({cpu:.1f} s CPU in the "
              f"client; LocalCluster start {start:.1f} s), speed-up x{first / wall:.2f}, client peak "
              f"{peak / 2**20:.1f} MiB (Python objects), RSS {rss0:.0f} → peak {rss_peak:.0f} MiB"
              f"{', partial' if report['partial'] else ''} (load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
        print(f"  planted stragglers found: {stragglers}")
        print(f"  stepped clock found: {step}")
    q = cached_query(folder)
    print(f"  cached query: {f'{q:.2f} s' if q is not None else 'not measured (no accelview query on this branch)'}")


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, generate the fleets, analyse each with each worker count."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", default="16,64", help="fleet sizes, comma-separated")
    p.add_argument("--devices", type=int, default=8)
    p.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dir", help="folder for the fleets (kept and reused; default: a temporary one)")
    a = p.parse_args(argv)
    sizes, workers = [int(x) for x in a.hosts.split(",")], [int(x) for x in a.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        base = Path(a.dir) if a.dir else Path(tmp)
        for hosts in sizes:
            folder = base / f"fleet{hosts}"
            run(folder, fleet(folder, hosts, a.devices, a.seed), workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
