"""Host metrics of the profiled process, sampled from the OS at every drain: RSS and CPU
utilisation of the process and of each of its threads, as counter tracks under the process.

Linux reads ``/proc/self/statm`` and ``/proc/self/task/*/stat`` (utime + stime in clock
ticks); elsewhere only the process totals (``resource``/``time.process_time``) are recorded.
A utilisation is CPU time over wall time since the previous sample, in % of one core.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

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


class HostMetrics:
    """Counter tracks of one process; ``sample`` adds one value to each at a host time."""

    def __init__(self, meta: TraceBuilder, parent: int, host: str) -> None:
        self.meta, self.parent, self.host = meta, parent, host
        self.rss = meta.add_counter_track("process RSS", "B", "host", "resident memory of the profiled process",
                                          parent=parent, host=host)
        self.cpu = meta.add_counter_track("process CPU", "%", "host",
                                          "CPU time of the profiled process over wall time (100% = one core)",
                                          parent=parent, host=host)
        self.threads: dict[str, int] = {}
        self.last_wall = time.monotonic()
        self.last_cpu = time.process_time()
        self.last_threads = thread_cpu_s()

    def sample(self, b: TraceBuilder, now_ns: int) -> None:
        """One sample of every metric, stamped ``now_ns`` (the host clock of the capture)."""
        wall, cpu, threads = time.monotonic(), time.process_time(), thread_cpu_s()
        dt = max(wall - self.last_wall, 1e-9)
        b.add_counter(self.rss, now_ns, float(rss_bytes()))
        b.add_counter(self.cpu, now_ns, 100.0 * (cpu - self.last_cpu) / dt)
        for name, used in threads.items():
            track = self.threads.get(name)
            if track is None:
                track = self.meta.add_counter_track(f"thread {name} CPU", "%", "host",
                                                    "CPU time of one thread over wall time (100% = one core)",
                                                    parent=self.parent, host=self.host)
                self.threads[name] = track
            b.add_counter(track, now_ns, 100.0 * (used - self.last_threads.get(name, used)) / dt)
        self.last_wall, self.last_cpu, self.last_threads = wall, cpu, threads
