"""A synthetic capture shaped for the dependency graph, of any size: steps of layers of ops, each
op launched by a host call through a driver submission onto one of two streams, ops that wait
on earlier ops of the other stream (flows), and a blocking synchronise at the end of each
step. About 3 nodes and 6 edges per op; repeated layers and steps fold into groups."""

from __future__ import annotations

from accelview.model import Trace, TraceBuilder, TrackKind

OPS = ("norm", "qkv", "attention", "out", "mlp_up", "mlp_down")


def graph_trace(ops: int, layers: int = 8, seed_step_ns: int = 1_000) -> Trace:
    """About ``ops`` device ops (whole layers of six) in steps of ``layers`` layers."""
    b = TraceBuilder()
    host = b.add_track("host", TrackKind.HOST, host="h")
    thread = b.add_track("main", TrackKind.HOST_THREAD, host, host="h")
    api = b.add_track("runtime API", TrackKind.RUNTIME_API, thread, host="h")
    queue = b.add_track("queue 0", TrackKind.DRIVER_QUEUE, host, host="h", device=0)
    dev = b.add_track("device 0", TrackKind.DEVICE, host="h", device=0)
    units = [b.add_track(f"stream {i}", TrackKind.EXEC_UNIT, dev, device=0) for i in range(2)]
    t, step = 0, 0
    free = [0, 0]
    done: list[tuple[int, int]] = []  # (slice, end) of every op so far
    n = 0
    while n < ops:
        step_start = t
        for layer in range(layers):
            for k, name in enumerate(OPS):
                s = k % 2
                call = b.add_slice(api, t, 4_000, f"launch layers.{layer}.{name}", "runtime")
                sub = b.add_slice(queue, t + 3_000, 300, f"submit layers.{layer}.{name}", "driver")
                waits = [done[-i] for i in (2, 5) if len(done) >= i]
                start = max([t + 3_500, free[s], *(e for _, e in waits)])
                dur = 2_000 + 1_500 * (k % 3) + seed_step_ns * (layer % 2)
                op = b.add_slice(units[s], start, dur, f"layers.{layer}.{name}", "kernel")
                b.add_flow(call, sub, "submit")
                b.add_flow(sub, op, "execute")
                for src, _ in waits:
                    b.add_flow(src, op, "event")
                free[s] = start + dur
                done.append((op, start + dur))
                t += 4_500
                n += 1
        end = max(free) + 1_500
        b.add_slice(api, t, end - t, "synchronize", "runtime")
        b.add_slice(thread, step_start, end + 500 - step_start, f"step {step}", "step", depth=0)
        t, step = end + 2_000, step + 1
    return b.build(source=f"graph-{ops}")
