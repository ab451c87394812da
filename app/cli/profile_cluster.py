"""``accelview profile --workload NAME`` for a cluster workload (tp-decode, pp-hosts, dp-straggler):
one capture per host, as a real cluster's profiler writes them.

    accelview profile --workload dp-straggler --param hosts=4 --param devices=8 -o run/
        → run/host0.h5 … run/host3.h5, each a complete capture in its host's own raw time

``-o FILE.h5`` with a one-host cluster writes that one file. The cluster runs in this process
(deterministic, as every built-in workload): there is no script to trace.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    """Run the cluster workload of ``args``, write its captures; returns the exit status."""
    from accelview.capture.sim import workloads
    from accelview.model.errors import AccelviewError
    from accelview.model.store.writer import write_capture

    out = Path(args.output)
    t0 = time.perf_counter()
    try:
        params = workloads.parse_params(args.workload, args.param)
        hosts = params.get("hosts", workloads.CLUSTER_SHAPES[args.workload][0])
        single = hosts == 1 and out.suffix == ".h5"
        paths = [out] if single else [out / f"host{h}.h5" for h in range(hosts)]
        for p in paths:
            if p.exists() and not args.force:
                raise AccelviewError(f"{p}: already exists (use --force to overwrite)")
        if out.suffix == ".h5" and not single:
            raise AccelviewError(f"{out}: a cluster of {hosts} hosts writes one capture per host: give a directory")
        cluster = workloads.run_cluster(args.workload, params, spec=args.spec or "gen5x16-141g",
                                        seed=args.seed or 0, counter_period_ns=args.counter_period_ns)
        if not single:
            out.mkdir(parents=True, exist_ok=True)
        events = 0
        for p, trace in zip(paths, cluster.traces(), strict=True):
            write_capture(trace, p, overwrite=args.force)
            events += len(trace.slices)
    except (ValueError, MemoryError) as e:
        raise AccelviewError(f"profile: {e}") from None
    where = str(paths[0]) if single else f"{paths[0]} … {paths[-1].name}"
    print(f"accelview: {len(paths)} capture{'s' if len(paths) > 1 else ''} {where} ({len(cluster.hosts)} host"
          f"{'s' if len(cluster.hosts) > 1 else ''} × {len(cluster.hosts[0].devices)} devices; {events:,} slices, "
          f"{time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0
