"""Host time as the simulator sees it: real script time plus modelled API costs and virtual waits.

The script's own work between runtime calls is real host time (measured with
``time.perf_counter_ns``); a runtime call costs its *modelled* host time, and a host wait on
the device jumps the clock forward instead of sleeping, so a workload of seconds of device
time profiles in far less wall time. In deterministic mode the script's real time is left
out (it is never the same twice) and only modelled costs count, so identical inputs give
identical captures.
"""

from __future__ import annotations

import time

DETERMINISTIC_START_NS = 1_000_000_000  # host clock reading when a deterministic session starts


class HostClock:
    """Virtual host clock of one simulated process (one host thread)."""

    def __init__(self, deterministic: bool = True, start_ns: int | None = None,
                 script_gap_ns: int = 0) -> None:
        self.deterministic = deterministic
        if start_ns is None:
            start_ns = DETERMINISTIC_START_NS if deterministic else time.monotonic_ns()
        self._now = int(start_ns)
        self.start_ns = self._now
        self.script_gap_ns = int(script_gap_ns)  # modelled script time between calls (deterministic)
        self._real_mark = time.perf_counter_ns()

    @property
    def now(self) -> int:
        """Current host time in ns (without the script time since the last call returned)."""
        return self._now

    def idle_now(self) -> int:
        """Host time now, read between two calls (from outside the runtime): the script's time
        since the last call returned counts, as ``enter_call`` would count it (without moving
        the clock). Deterministic: the clock as it is."""
        if self.deterministic:
            return self._now
        return self._now + max(0, time.perf_counter_ns() - self._real_mark)

    def enter_call(self) -> int:
        """A runtime call begins: account the script's time since the last call; return now."""
        if self.deterministic:
            self._now += self.script_gap_ns
        else:
            real = time.perf_counter_ns()
            self._now += max(0, real - self._real_mark)
        return self._now

    def exit_call(self) -> int:
        """A runtime call returns: the script's time starts counting again; return now."""
        self._real_mark = time.perf_counter_ns()
        return self._now

    def spend(self, ns: float) -> int:
        """The host spends ``ns`` (a modelled cost); returns the new time."""
        self._now += max(0, round(ns))
        return self._now

    def wait_until(self, t_ns: float) -> int:
        """The host blocks until ``t_ns`` (no-op if that is past); returns the new time."""
        self._now = max(self._now, int(-(-t_ns // 1)))
        return self._now
