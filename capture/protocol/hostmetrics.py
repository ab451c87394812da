"""Host metrics of the profiled process: RSS and CPU utilisation of the process, sampled every
``SAMPLE_MS`` by the tracer's timer thread (:class:`Ticks`), and of each of its threads, at every
drain (:func:`read_sample`); the service turns them into counter tracks under the process.

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
SAMPLE_MS = 5.0  # the timer thread's period for process RSS and CPU (device counters: 10 µs)


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


class Ticks:
    """Process RSS and CPU read cheaply (one ``pread`` of a kept-open statm, ``os.times``) by a
    timer thread, buffered as ``[host_ns, wall_s, cpu_s, rss]`` until the next drain ``take``s them."""

    def __init__(self) -> None:
        self.rows: list[list[float]] = []
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        try:
            self._fd = os.open("/proc/self/statm", os.O_RDONLY)
        except OSError:
            self._fd = -1

    def sample(self, host_ns: int) -> None:
        """Append one row stamped ``host_ns`` (the capture's host clock)."""
        if self._fd >= 0:
            try:
                rss = int(os.pread(self._fd, 128, 0).split()[1]) * self._page
            except (OSError, ValueError, IndexError):
                rss = rss_bytes()
        else:
            rss = rss_bytes()
        self.rows.append([host_ns, time.monotonic(), time.process_time(), rss])

    def take(self) -> list[list[float]]:
        """The rows since the last ``take`` (the list is swapped, not copied)."""
        rows, self.rows = self.rows, []
        return rows

    def close(self) -> None:
        """Close the statm descriptor (a forked child closes its copy)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


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
        self.last_proc: tuple[int, float, float] | None = None  # (host ns, wall, cpu) of the last process value

    def add_ticks(self, b: TraceBuilder, rows: list[list[float]]) -> None:
        """Process RSS and CPU from the timer's rows (:class:`Ticks`), each against the one before."""
        for host_ns, wall, cpu, rss in rows:
            self._proc(b, int(host_ns), wall, cpu, rss)

    def _proc(self, b: TraceBuilder, now_ns: int, wall: float, cpu: float, rss: float) -> None:
        last = self.last_proc
        if last is not None and (now_ns <= last[0] or wall <= last[1]):
            return  # no call since the last value: the same instant of the capture's clock
        self.last_proc = (now_ns, wall, cpu)
        if last is None:
            return
        b.add_counter(self.rss, now_ns, float(rss))
        b.add_counter(self.cpu, now_ns, 100.0 * (cpu - last[2]) / (wall - last[1]))

    def add(self, b: TraceBuilder, now_ns: int, sample: dict[str, Any]) -> None:
        """One value of every metric from ``sample`` (:func:`read_sample` in the profiled process),
        stamped ``now_ns`` (the host clock of the capture); the first sample only sets the baseline."""
        last, self.last = self.last, sample
        self._proc(b, now_ns, sample["wall"], sample["cpu"], sample["rss"])
        if last is None:
            return
        dt = max(sample["wall"] - last["wall"], 1e-9)
        for name, used in sample["threads"].items():
            track = self.threads.get(name)
            if track is None:
                track = self.meta.add_counter_track(f"thread {name} CPU", "%", "host",
                                                    "CPU time of one thread over wall time (100% = one core)",
                                                    parent=self.parent, host=self.host)
                self.threads[name] = track
            b.add_counter(track, now_ns, 100.0 * (used - last["threads"].get(name, used)) / dt)
