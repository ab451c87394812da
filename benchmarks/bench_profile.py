"""``accelview profile``: tracing overhead, the capture service's memory, and whether it keeps up.

(a) An API-heavy script (the llm workload's decode loop launched op by op, ``graphs=false``:
    ~300 launches and a D2H copy per token) runs as ``python script.py`` (capture off) and
    under ``accelview profile`` (capture on). Printed: the script's own wall time both ways
    (best of ``--repeat`` rounds), their ratio, the extra ns per recorded event, from the best
    runs and paired (the median of each round's traced minus plain time: this VM's speed drifts
    from round to round, and a best traced run from a quick minute against a best plain run
    from another misleads by more than the tracer costs), also net of the garbage collector's
    time inside the script (a plain run keeps every record, so its collections cost more the
    longer it runs); the same with call sites (``--call-sites``, off by default) and with the
    service converting while the script runs (``--live``; by default it spools the records and
    converts them after the script), and the end-to-end time of the profile run (child start,
    converting, finalizing the file). At
    16 tokens (~15k events, 0.25 s) and 160 (~141k events, 2.4 s): the tracer also has costs
    paid once a run or once a name (first drains, each new launch name's call-site cell, each
    new shape's template), which weigh more in the short run. Capture on runs with
    ``--deterministic``: the simulator then models host time as a plain run does, so the
    difference is the tracer's alone; the profile's default (measured host time) is printed
    beside it.
(b) Peak RSS of the service process while it takes 1M and 10M events into a capture (spooling
    them, then converting them: "streaming"), fed
    by a synthetic producer that speaks the child's wire protocol as fast as it can (the
    simulator itself would need minutes for 10M events). Printed: peak RSS while streaming,
    peak RSS while closing (the sort into the capture layout, ``CaptureWriter.close``; the
    kernel's high-water mark is restarted when it begins, from the RSS printed in brackets),
    and the time of each.
(c) How fast the capture service converts (with ``--live``: whether it keeps up; by default:
    how long the user waits after the script): the same loop, longer (``--service-tokens``), and three
    other built-in workloads (tiny kernels, small pageable copies, a sync per op), each recorded
    in one process with the frames kept in memory, then replayed through the service's
    conversion (collector) and writing (``CaptureWriter``). Printed: events per second the
    traced script produces, and events per second the service converts and writes. A service
    slower than the script falls behind; once it holds ``MAX_BUFFERED`` bytes the script waits.

Targets (issue 4): ≤ 1.10× wall time, ≤ 1 µs per event, flat memory.

Run: .venv/bin/python benchmarks/bench_profile.py [--tokens 16 160] [--service-tokens 96]
     [--events 1000000 10000000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import machine_speed

SCRIPT = textwrap.dedent("""\
    import gc, sys, time
    from accelview.capture.sim import workloads
    collecting = [0.0, 0.0]  # seconds spent in the garbage collector, start of the current collection
    def timed(phase, info):
        if phase == "start":
            collecting[1] = time.perf_counter()
        else:
            collecting[0] += time.perf_counter() - collecting[1]
    gc.callbacks.append(timed)
    t = time.perf_counter()
    workloads.run("llm", [f"tokens={sys.argv[1]}", "prompt=128", "upload=false", "graphs=false"])
    print("SCRIPT_S", time.perf_counter() - t, collecting[0])
""")

PRODUCER = textwrap.dedent("""\
    import sys, os, numpy as np
    from accelview.capture.protocol import wire
    out = wire.FrameWriter(int(sys.argv[1]))
    total, batch = int(sys.argv[2]), 50_000
    out.send(wire.HELLO, {"metadata": {"capture": {"producer": "synthetic"}}})
    out.send(wire.STRINGS, {"first": 0, "strings": ["", "host", "runtime API", "launch", "runtime", "submit"]})
    out.send(wire.ROWS, {"table": "tracks"}, {"parent": np.array([-1, 0], np.int32), "kind": np.array([0, 3], np.uint8),
             "name": np.array([1, 2], np.int32), "host": np.array([1, 1], np.int32),
             "device": np.array([-1, -1], np.int16), "clock": np.array([-1, -1], np.int16),
             "sort": np.array([0, 1], np.int32)})
    out.send(wire.CLOCKS, {"clocks": [["host monotonic", True, 0.0, 0.0, 0.0]]})
    sent = 0
    while sent < total:
        n = min(batch, total - sent)
        start = 1_000_000_000 + (sent + np.arange(n, dtype=np.int64)) * 1000
        out.send(wire.ROWS, {"table": "slices"}, {"track": np.ones(n, np.int32), "start_ns": start,
                 "dur_ns": np.full(n, 800, np.int64), "name": np.full(n, 3, np.int32),
                 "category": np.full(n, 4, np.int16), "depth": np.zeros(n, np.uint16),
                 "correlation": sent + np.arange(n, dtype=np.int64), "args": np.full(n, -1, np.int32)})
        ids = sent + np.arange(0, n - 1, 2, dtype=np.int64)
        out.send(wire.ROWS, {"table": "flows"}, {"src": ids, "dst": ids + 1, "name": np.full(len(ids), 5, np.int32)})
        sent += n
        out.send(wire.STATS, {"events": sent, "calls": sent, "dropped": {}})
    out.send(wire.END, {"exit_code": 0, "error": "", "events": sent})
""")

SERVICE = textwrap.dedent("""\
    import json, sys, time
    from accelview.capture.service import runner as service
    from accelview.capture.protocol.config import CaptureConfig
    from accelview.model.store.writer import CaptureWriter
    producer, out, events = sys.argv[1], sys.argv[2], sys.argv[3]
    service.child_command = lambda cfg, fd, *a, **k: [sys.executable, producer, str(fd), events]
    def peak_rss():  # the kernel's high-water mark of this process's resident memory
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    measured = {}
    close = CaptureWriter.close
    def measured_close(self, *a, **k):
        measured["streaming_rss"] = peak_rss()
        with open("/proc/self/statm") as f:
            measured["before_close_rss"] = int(f.read().split()[1]) * 4096
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # restart the high-water mark from the current RSS: what follows is the close's
        t = time.perf_counter()
        try:
            return close(self, *a, **k)
        finally:
            measured["close_s"], measured["close_rss"] = time.perf_counter() - t, peak_rss()
    CaptureWriter.close = measured_close
    result = service.CaptureService(CaptureConfig(output=out), ["synthetic"]).run()
    print(json.dumps({**measured, "events": result.progress.events, "wall_s": result.progress.elapsed_s,
                      "complete": result.complete}))
""")


SERVICE_RATE = textwrap.dedent("""\
    import json, sys, tempfile, time
    from pathlib import Path
    from accelview.capture.protocol import wire
    from accelview.capture.tracer import recorder
    from accelview.capture.service.collector import RecordSink
    from accelview.capture.protocol.config import CaptureConfig
    from accelview.capture.service.ingest import Ingest
    from accelview.capture.service.runner import FLUSH_ROWS
    from accelview.capture.sim import workloads
    from accelview.capture.sim.runtime import api
    from accelview.model.store.writer import CaptureWriter
    frames = []
    def keep(kind, meta, cols=None):  # what the pipe would carry, as the service's reader decodes it
        frames.extend(wire.FrameReader().feed(b"".join(wire.encode(kind, meta, cols))))
    rec = recorder.traced_simulator(CaptureConfig(deterministic=True), keep)
    api.set_profiler(lambda asked: rec.sim)
    t = time.perf_counter()
    workloads.run(sys.argv[1], sys.argv[2:])
    script_s = time.perf_counter() - t
    rec.finish(0)
    with tempfile.TemporaryDirectory() as d:
        writer = CaptureWriter(Path(d) / "c.h5", flush_rows=FLUSH_ROWS)
        ingest = Ingest(writer)
        sink = RecordSink(ingest.handle)
        t = time.perf_counter()
        for kind, meta, cols in frames:
            sink.handle(kind, meta, cols)
        stream_s = time.perf_counter() - t
        t = time.perf_counter()
        ingest.close(True, "")
        close_s = time.perf_counter() - t
    print(json.dumps({"events": rec.events, "script_s": script_s, "stream_s": stream_s, "close_s": close_s,
                      "error": sink.error}))
""")


def _run(cmd: list[str], cwd: Path) -> str:
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout


def _script_s(out: str) -> tuple[float, float]:
    """The script's wall time and the part of it in the garbage collector."""
    line = next(line.split() for line in out.splitlines() if line.startswith("SCRIPT_S"))
    return float(line[1]), float(line[2])


def overhead(tokens: int, repeat: int, d: Path) -> None:
    """(a): the same script with capture off and on."""
    script = d / "api_heavy.py"
    script.write_text(SCRIPT)
    from accelview.model.store.reader import load_capture

    off, on, sites, live, measured, total, total_live, events, rows = [], [], [], [], [], [], [], 0, 0
    for i in range(repeat):
        off.append(_script_s(_run([sys.executable, str(script), str(tokens)], d)))
        out = d / f"on{tokens}-{i}.h5"
        profile = [sys.executable, "-m", "accelview.app.cli", "profile", str(script), str(tokens), "-o", str(out)]
        t = time.perf_counter()
        on.append(_script_s(_run([*profile, "--deterministic"], d)))  # the simulator as a plain run sets it up
        total.append(time.perf_counter() - t)
        trace = load_capture(out)
        events = trace.metadata["capture"]["events"]
        rows = sum(len(t) for t in trace.tables.values()) + sum(len(t) for t in trace.truth.values())
        sites.append(_script_s(_run([*profile, "--force", "--deterministic", "--call-sites"], d)))
        t = time.perf_counter()
        live.append(_script_s(_run([*profile, "--force", "--deterministic", "--live"], d)))
        total_live.append(time.perf_counter() - t)
        measured.append(_script_s(_run([*profile, "--force"], d)))
    (best_off, gc_off), (best_on, gc_on), best_sites = min(off), min(on), min(sites)[0]

    def extra(runs: list[tuple[float, float]], without_gc: bool = False) -> str:
        """ns per event over the plain run: the best runs', and the median of each round's difference
        (a traced run minus the plain run of the same round: this VM's speed drifts between rounds)."""
        def cost(run: tuple[float, float]) -> float:
            return run[0] - run[1] if without_gc else run[0]
        best = min(runs)
        paired = statistics.median(cost(r) - cost(o) for r, o in zip(runs, off, strict=True))
        return (f"{(cost(best) - cost(min(off))) / events * 1e9:,.0f} ns best runs, "
                f"{paired / events * 1e9:,.0f} ns paired")

    print(f"(a) tracing overhead, llm decode loop, {tokens} tokens: {events:,} recorded events, {rows:,} rows "
          f"written (slices, args, counter samples ...), {repeat} rounds")
    print(f"    script wall time, best runs: capture off {best_off:.3f} s, on {best_on:.3f} s -> "
          f"{best_on / best_off:.3f}x (target <= 1.10x)")
    print(f"    extra per recorded event: {extra(on)} (target <= 1,000 ns); per row written "
          f"{(best_on - best_off) / rows * 1e9:,.0f} ns; simulator alone: {best_off / events * 1e9:,.0f} ns per event")
    print(f"    garbage collection inside the script: off {gc_off * 1e3:.1f} ms, on {gc_on * 1e3:.1f} ms (a plain run "
          f"keeps every record; the traced one hands them off); without it: {extra(on, True)}")
    print(f"    with call sites (--call-sites): {best_sites / best_off:.3f}x; {extra(sites)}; without garbage "
          f"collection {extra(sites, True)}")
    print(f"    converting while the script runs (--live): {min(live)[0] / best_off:.3f}x; {extra(live)}; without "
          f"garbage collection {extra(live, True)}")
    print(f"    profile's default, measured host time instead of the plain run's modelled time: "
          f"{min(measured)[0] / best_off:.3f}x (the simulator's own cost of the real clock included)")
    print(f"    whole `accelview profile` run (child start-up, converting after the script, finalizing the file): "
          f"{min(total):.2f} s; with --live {min(total_live):.2f} s")


RATE_RUNS = (  # workload, params: about 1-2 s of script each
    ("llm", ["prompt=128", "upload=false", "graphs=false"]),
    ("launch-bound", ["count=30000"]),
    ("pageable-small", ["count=10000"]),
    ("sync-heavy", ["count=8000"]),
)


def service_rate(tokens: int, d: Path) -> None:
    """(c): the rate each traced script produces events at, and the rate the service converts them at."""
    (d / "rate.py").write_text(SERVICE_RATE)
    print("(c) capture service throughput: events/s the traced script produces -> events/s the service converts "
          "and writes")
    for name, params in RATE_RUNS:
        params = [*params, f"tokens={tokens}"] if name == "llm" else params
        r = json.loads(_run([sys.executable, str(d / "rate.py"), name, *params], d))
        if r["error"]:
            raise SystemExit(f"service_rate: the service could not convert a frame of {name}: {r['error']}")
        made, taken = r["events"] / r["script_s"], r["events"] / r["stream_s"]
        print(f"    {name:15s} {r['events']:>8,} events: {made:>7,.0f}/s -> {taken:>7,.0f}/s "
              f"({r['stream_s'] / r['events'] * 1e6:4.1f} us an event) {taken / made:.2f}x: with --live it "
              f"{'keeps up' if taken >= made else 'FALLS BEHIND'}, after the script it takes {made / taken:.2f} s "
              f"a second of script; then closing the file {r['close_s']:.2f} s")


def memory(counts: list[int], d: Path) -> None:
    """(b): the service's peak RSS while streaming ``counts`` events, and while closing."""
    (d / "producer.py").write_text(PRODUCER)
    (d / "service.py").write_text(SERVICE)
    print("(b) capture service peak RSS (synthetic producer, slices + flows)")
    for n in counts:
        out = d / f"mem{n}.h5"
        r = json.loads(_run([sys.executable, str(d / "service.py"), str(d / "producer.py"), str(out), str(n)], d))
        size = out.stat().st_size
        print(f"    {n:>12,} events: streaming {r['streaming_rss'] / 2**20:6.1f} MiB, closing "
              f"{r['close_rss'] / 2**20:6.1f} MiB (from {r['before_close_rss'] / 2**20:.1f}); streaming "
              f"{r['wall_s']:.1f} s, closing {r['close_s']:.1f} s, {size / 2**20:.0f} MiB file")
        out.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[16, 160],
                    help="decode steps of (a): a short run (the tracer's one-time costs weigh in) and a longer one")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--service-tokens", type=int, default=96, help="tokens of the run in (c); 0 skips (c)")
    ap.add_argument("--events", type=int, nargs="*", default=[1_000_000, 10_000_000])
    args = ap.parse_args()
    machine_speed.compile_accelview()  # the child and the service import it as an installed package
    print(machine_speed.reference())
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for tokens in args.tokens:
            overhead(tokens, args.repeat, d)
        memory(args.events, d)
        if args.service_tokens:
            service_rate(args.service_tokens, d)


if __name__ == "__main__":
    main()
