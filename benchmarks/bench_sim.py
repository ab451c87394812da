"""Simulator throughput on the llm workload: device events (slices on device lanes) and all
trace rows produced per second of wall time, including building the capture (accelview compiled
to bytecode first, as an installed package is). The sampled counters are made by a forked
helper on the second core while the rest of the capture is built (capture/convert/counter_rows.py); its
CPU time is printed beside this process's. Target (issue 3): ≥ 500k events/s. Then the same
figures for tp-decode (one host of ``--tp-devices`` devices, the decode steps replayed as graphs
with two all-reduces a layer; issue 19's target: ≥ 500k events/s too).

Run: .venv/bin/python benchmarks/bench_sim.py [--tokens 256] [--model 8b] [--tp-devices 8] [--tp-tokens 256]
"""

from __future__ import annotations

import argparse
import resource
import time

import machine_speed
import numpy as np
from accelview.capture import sim
from accelview.capture.sim import workloads
from accelview.model import TrackKind, forking

DEVICE_LANES = (TrackKind.EXEC_UNIT, TrackKind.DMA_ENGINE, TrackKind.PCIE, TrackKind.DRIVER_QUEUE,
                TrackKind.NETWORK_LINK)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="8b")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--tp-devices", type=int, default=8)
    ap.add_argument("--tp-tokens", type=int, default=256)
    args = ap.parse_args()
    machine_speed.compile_accelview()
    params = [f"model={args.model}", f"tokens={args.tokens}", f"prompt={args.prompt}", "upload=false"]
    t, c = time.perf_counter(), time.process_time()
    with sim.session(spec="gen5x16-141g", seed=0) as s:
        workloads.run("llm", params)
    run_s, run_cpu = time.perf_counter() - t, time.process_time() - c
    t, c = time.perf_counter(), time.process_time()
    trace = s.trace()
    build_s, build_cpu = time.perf_counter() - t, time.process_time() - c
    forking.reap(block=True)  # the helper, if one made the sampled counters: its CPU time counts
    helper = resource.getrusage(resource.RUSAGE_CHILDREN)
    helper_cpu = helper.ru_utime + helper.ru_stime
    total = run_s + build_s
    kinds = trace.tracks.kind[trace.slices.track]
    device = int(np.isin(kinds, [int(k) for k in DEVICE_LANES]).sum())
    rows = len(trace.slices) + len(trace.flows) + len(trace.counters)
    t0, t1 = trace.time_bounds()
    print(f"workload          llm {' '.join(params)}")
    print(machine_speed.reference())
    print(f"simulated         {(t1 - t0) / 1e6:,.1f} ms of device time")
    print(f"wall              {total:.2f} s (run {run_s:.2f} s, build capture {build_s:.2f} s)")
    # CPU time of this process: steadier than wall time on a shared machine
    print(f"cpu               {run_cpu + build_cpu + helper_cpu:.2f} s (run {run_cpu:.2f} s, build capture "
          f"{build_cpu:.2f} s, its helper process {helper_cpu:.2f} s)")
    print(f"device events     {device:,} → {device / total:,.0f} events/s")
    print(f"all trace rows    {rows:,} (slices, flows, counter samples) → {rows / total:,.0f} rows/s")
    tp_decode(args)


def tp_decode(args: argparse.Namespace) -> None:
    """The tp-decode row: run, then every host's capture, timed the same way."""
    params = [f"model={args.model}", f"devices={args.tp_devices}", f"tokens={args.tp_tokens}", f"prompt={args.prompt}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t, c = time.perf_counter(), time.process_time()
    cluster = workloads.run_cluster("tp-decode", params)
    run_s, run_cpu = time.perf_counter() - t, time.process_time() - c
    t, c = time.perf_counter(), time.process_time()
    traces = cluster.traces()
    build_s, build_cpu = time.perf_counter() - t, time.process_time() - c
    forking.reap(block=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    helper_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    total = run_s + build_s
    device = rows = 0
    for trace in traces:
        kinds = trace.tracks.kind[trace.slices.track]
        device += int(np.isin(kinds, [int(k) for k in DEVICE_LANES]).sum())
        rows += len(trace.slices) + len(trace.flows) + len(trace.counters)
    t0, t1 = traces[0].time_bounds()
    print()
    print(f"workload          tp-decode {' '.join(params)} ({len(cluster.fabric.truth):,} collectives)")
    print(f"simulated         {(t1 - t0) / 1e6:,.1f} ms of device time")
    print(f"wall              {total:.2f} s (run {run_s:.2f} s, build capture {build_s:.2f} s)")
    print(f"cpu               {run_cpu + build_cpu + helper_cpu:.2f} s (run {run_cpu:.2f} s, build capture "
          f"{build_cpu:.2f} s, its helper process {helper_cpu:.2f} s)")
    print(f"device events     {device:,} → {device / total:,.0f} events/s")
    print(f"all trace rows    {rows:,} (slices, flows, counter samples) → {rows / total:,.0f} rows/s")


if __name__ == "__main__":
    main()
