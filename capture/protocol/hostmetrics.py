"""Host metrics of the profiled process, sampled from the OS at every drain: RSS and CPU
utilisation of the process and of each of its threads, as counter tracks under the process.
The profiled process reads them (:func:`read_sample`); the service turns them into counters.

Linux reads ``/proc/self/statm`` and ``/proc/self/task/*/stat`` (utime + stime in clock
ticks); elsewhere only the process totals (``resource``/``time.process_time``) are recorded.
A utilisation is CPU time over wall time since the previous sample, in % of one core.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from accelview.model import TraceBuilder

_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
_TASKS = Path("/proc/self/task")


def rss_bytes() -> int:
    """Resident memory of this process now (peak RSS where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def thread_cpu_s() -> dict[str, float]:
    """CPU seconds used so far per thread, keyed ``"name (tid)"`` (empty where /proc is missing)."""
    out: dict[str, float] = {}
    try:
        tasks = list(_TASKS.iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            stat = (task / "stat").read_bytes()
        except OSError:  # the thread ended meanwhile
            continue
        name = stat[stat.index(b"(") + 1:stat.rindex(b")")].decode(errors="replace")
        fields = stat[stat.rindex(b")") + 2:].split()
        out[f"{name} ({task.name})"] = (int(fields[11]) + int(fields[12])) * _TICK_S  # utime, stime
    return out


def read_sample() -> dict[str, Any]:
    """What the OS says about this process now (JSON-able): wall and CPU clocks, RSS, per-thread CPU."""
    return {"wall": time.monotonic(), "cpu": time.process_time(), "rss": rss_bytes(), "threads": thread_cpu_s()}


class HostMetrics:
    """Counter tracks of one process; ``add`` turns two successive samples into one value each."""

    def __init__(self, meta: TraceBuilder, parent: int, host: str) -> None:
        self.meta, self.parent, self.host = meta, parent, host
        self.rss = meta.add_counter_track("process RSS", "B", "host", "resident memory of the profiled process",
                                          parent=parent, host=host)
        self.cpu = meta.add_counter_track("process CPU", "%", "host",
                                          "CPU time of the profiled process over wall time (100% = one core)",
                                          parent=parent, host=host)
        self.threads: dict[str, int] = {}
        self.last: dict[str, Any] | None = None

    def add(self, b: TraceBuilder, now_ns: int, sample: dict[str, Any]) -> None:
        """One value of every metric from ``sample`` (:func:`read_sample` in the profiled process),
        stamped ``now_ns`` (the host clock of the capture); the first sample only sets the baseline."""
        last, self.last = self.last, sample
        if last is None:
            return
        dt = max(sample["wall"] - last["wall"], 1e-9)
        b.add_counter(self.rss, now_ns, float(sample["rss"]))
        b.add_counter(self.cpu, now_ns, 100.0 * (sample["cpu"] - last["cpu"]) / dt)
        for name, used in sample["threads"].items():
            track = self.threads.get(name)
            if track is None:
                track = self.meta.add_counter_track(f"thread {name} CPU", "%", "host",
                                                    "CPU time of one thread over wall time (100% = one core)",
                                                    parent=self.parent, host=self.host)
                self.threads[name] = track
            b.add_counter(track, now_ns, 100.0 * (used - last["threads"].get(name, used)) / dt)
