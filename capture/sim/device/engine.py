"""The device side: an event-driven simulation of one device's queues, units, DMA and link.

Times are true host nanoseconds (floats); the recorder later turns them into device ticks.
Each stream is an in-order queue. Its head starts when the command processor has seen it
(submit + doorbell), its predecessor has finished, the events it waits on have fired and
its resource is free: the execution unit of its kind (matrix, vector, collective: one op at
a time each, different units overlap) or, for copies, any free DMA engine. A DMA job has a
fixed setup phase, a data phase that shares its link direction equally with the other data
phases in flight (fluid sharing), and a fixed completion phase. An op has a fixed launch
phase and a body that draws HBM bandwidth (its DRAM bytes over its standalone body time);
when the ops running on different units together ask for more than HBM delivers, the
bandwidth is shared max-min fairly and their bodies stretch.

Every finished command keeps the constraint that bound its start (``cause``): ``host``
(not yet submitted), ``pcie`` (after a transfer), ``sync`` (an event or another unit's op),
``resource`` (its unit or engine was busy). The recorder derives idle-time truth from it.

A collective (an op with a ``rendezvous``, or a graph replay with collective nodes) meets the
other participants on their devices: it starts like an op, but its end is known only once every
participant has arrived (``cluster/rendezvous.py``). Until then the engine does not run past
it: before moving time on it resolves the collectives it holds, running the other participants'
engines up to their arrival (``waiting``, :meth:`settled`); when that cannot succeed yet (the
others wait on this device's other streams) the rest of the device goes on. A stream that waits
on a collective marks the work after it with the cause ``communication``.
"""

from __future__ import annotations

import math
from collections import deque

from .command import Command
from .pcie import Direction, Link
from .specs import DeviceSpec
from .transfer import DmaJob, dma_job

EXEC_UNITS = ("matrix", "vector", "collective")
_EPS_BYTES = 1e-3
_EPS_NS = 1e-6


def _extend(segments: list[tuple[float, float, float, int]], t0: float, t1: float, amount: float,
            sharers: int) -> None:
    """Append a progress segment, merging it into the last one when it continues at the same rate."""
    if segments:
        a, b, moved, n = segments[-1]
        if b == t0 and n == sharers and abs(moved * (t1 - t0) - amount * (b - a)) <= 1e-9 * moved * (t1 - t0):
            segments[-1] = (a, t1, moved + amount, sharers)
            return
    segments.append((t0, t1, amount, sharers))


class DeviceEngine:
    """One device's simulated hardware; ``advance(t)`` runs it up to host time ``t``."""

    def __init__(self, spec: DeviceSpec, n_streams: int = 1) -> None:
        self.spec = spec
        self.link = Link.from_spec(spec)
        self.bandwidth = {d: self.link.bulk_bandwidth(d) * 1e-9 for d in ("h2d", "d2h")}  # bytes/ns
        self.hbm_capacity = spec.hbm_bytes_per_s * 1e-9 * spec.memory.efficiency_sequential  # bytes/ns
        self._rates: dict[int, float] | None = None  # op body speeds; None when the set of bodies changed
        self.now = 0.0
        self.streams: list[deque[Command]] = [deque() for _ in range(n_streams)]
        self.prev_end: list[float] = [-math.inf] * n_streams
        self.prev_tag: list[str] = ["host"] * n_streams
        self.units: dict[str, Command | None] = dict.fromkeys(EXEC_UNITS)
        # each unit kind's slots: the collective engines run that many collectives at once
        self.slots = {u: [u] for u in EXEC_UNITS}
        self.slots["collective"] += [f"collective {i}" for i in range(1, spec.compute.collective_engines)]
        self.units.update(dict.fromkeys(self.slots["collective"][1:]))
        self.dma: list[Command | None] = [None] * spec.pcie.dma_engines
        self.active: dict[str, list[Command]] = {"h2d": [], "d2h": []}
        self.graph: Command | None = None  # the graph replay running (it holds every execution unit)
        self.finished: list[Command] = []
        self._jobs: dict[tuple[int, str], DmaJob] = {}
        # what is in flight, counted, so that a step skips what has nothing in it
        self._ops = 0  # execution units running an op
        self._copies = 0  # DMA engines running a copy
        self._moving = 0  # copies in their data phase
        self._links = [(act, self.bandwidth[d]) for d, act in self.active.items()]  # each direction's data phases
        self.waiting: list[Command] = []  # collectives started whose end is not known yet

    def dma_job(self, nbytes: int, direction: Direction) -> DmaJob:
        """The DMA job that moves ``nbytes`` in ``direction`` (made once per size: copies repeat)."""
        key = (nbytes, direction)
        job = self._jobs.get(key)
        if job is None:
            if len(self._jobs) > 4096:  # a script copying many different sizes
                self._jobs.clear()
            job = self._jobs[key] = dma_job(self.spec, nbytes, direction, self.link)
        return job

    def add_stream(self) -> int:
        """A new in-order queue; returns its index."""
        self.streams.append(deque())
        self.prev_end.append(-math.inf)
        self.prev_tag.append("host")
        return len(self.streams) - 1

    def submit(self, cmd: Command) -> None:
        """Queue ``cmd`` on its stream (the caller has advanced the engine to its submit time)."""
        self.streams[cmd.stream].append(cmd)

    def pending(self, stream: int | None = None) -> int:
        """Commands submitted and not finished, on one stream or all."""
        if stream is None:
            return sum(len(q) for q in self.streams)
        return len(self.streams[stream])

    # -- running -------------------------------------------------------------------------------
    def advance(self, until: float) -> None:
        """Process everything that happens up to ``until``."""
        stuck = 0
        while True:
            self._dispatch()
            if self.waiting and not self._settle():
                return  # time cannot pass a collective until every participant has arrived
            t = self._next_time()
            if t > until:
                break
            stuck = self._check_progress(t, stuck)
            self._step(t)
        self._progress(max(self.now, until))

    def _settle(self) -> bool:
        """Resolve the collectives this device holds (every one: one that cannot be yet may wait on
        another that can); False when one cannot be yet."""
        done = [cmd not in self.waiting or cmd.rendezvous.resolve() for cmd in list(self.waiting)]
        return all(done)

    def settled(self, cmd: Command, end: float) -> None:
        """Collective ``cmd`` (started, held in ``waiting``) ends at ``end``. When this engine has
        already run past ``end`` (it went on while the collective could not resolve), it ends now,
        at ``end``."""
        self.waiting.remove(cmd)
        if cmd.kind == "graph":
            cmd.end_ns = end
        elif end > self.now:
            cmd.remaining = max(0.0, end - (self.now if cmd.phase == "body" else cmd.phase_end))
        else:
            slot = next(u for u, c in self.units.items() if c is cmd)
            self.units[slot] = None
            self._ops -= 1
            self._rates = None
            cmd.end_ns = end
            self._finish(cmd)

    def run_to_start(self, cmd: Command) -> bool:
        """Run until ``cmd`` has started; False when it cannot yet (it waits on something no
        submitted work provides, or on a collective that cannot resolve)."""
        stuck = 0
        while math.isnan(cmd.start_ns):
            self._dispatch()
            if not math.isnan(cmd.start_ns):
                break
            # a collective this device holds that cannot resolve yet (its other participants wait on
            # this device's other streams): the rest of the device goes on; it ends when it resolves
            self._settle()
            t = self._next_time()
            if t == math.inf:
                return False
            stuck = self._check_progress(t, stuck)
            self._step(t)
        return True

    def _check_progress(self, t: float, stuck: int) -> int:
        """Count steps that do not move time; many in a row mean a phase can never complete."""
        if t > self.now:
            return 0
        if stuck > 10_000:
            raise RuntimeError(f"device simulation stuck at t={t} ns (a phase that never completes)")
        return stuck + 1

    def run_until(self, cmd: Command) -> float:
        """Run until ``cmd`` has finished; return its end time."""
        stuck = 0
        while not cmd.done:
            self._dispatch()
            if cmd.done:
                break
            if self.waiting and not self._settle() and self._next_time() == math.inf:
                raise RuntimeError(f"device deadlock: {self.waiting[0].name!r} waits for a participant that has "
                                   "not submitted its part (issue every participant's part before waiting)")
            t = self._next_time()
            if t == math.inf:
                raise RuntimeError(f"device deadlock: {cmd.name!r} can never run (waiting on an event "
                                   "that is never recorded?)")
            stuck = self._check_progress(t, stuck)
            self._step(t)
        return cmd.end_ns

    def run_until_idle(self) -> float:
        """Run until every queue is empty; return the time the last command finished."""
        last = -math.inf
        for q in self.streams:
            if q:
                last = max(last, self.run_until(q[-1]))
        return max(last, max(self.prev_end, default=-math.inf))

    # -- internals -----------------------------------------------------------------------------
    def _next_time(self) -> float:
        t = math.inf
        now = self.now
        running = [c for c in self.units.values() if c is not None] if self._ops else None
        if running:
            rates = self._op_rates()
            lone = len(running) == 1
            for cmd in running:
                if cmd.phase == "launch":
                    # alone, its body starts without changing anyone's HBM share: no event needed
                    x = cmd.phase_end + cmd.remaining if lone else cmd.phase_end
                else:
                    x = now + cmd.remaining / rates[id(cmd)]
                if x < t:
                    t = x
        if self._copies:
            for cmd in self.dma:
                if cmd is not None and cmd.phase != "data" and cmd.phase_end < t:
                    t = cmd.phase_end
        if self.graph is not None and self.graph.end_ns < t:
            t = self.graph.end_ns
        if self._moving:
            for act, bandwidth in self._links:
                if act:
                    x = now + min(c.remaining for c in act) / (bandwidth / len(act))
                    if x < t:
                        t = x
        for q in self.streams:
            if q:
                head = q[0]
                if math.isnan(head.start_ns) and now < head.visible_ns < t:
                    t = head.visible_ns
        return now if now > t else t

    def _op_rates(self) -> dict[int, float]:
        """Speed (1 = standalone) of each op body in flight under max-min fair HBM sharing."""
        if self._rates is None:
            self._rates = self._share_hbm()
        return self._rates

    def _share_hbm(self) -> dict[int, float]:
        bodies = [c for c in self.units.values() if c is not None and c.phase == "body"]
        if len(bodies) < 2:
            return {id(c): 1.0 for c in bodies}
        demand = {id(c): (c.cost.dram_read_bytes + c.cost.dram_write_bytes) / c.cost.body_ns
                  if c.cost and c.cost.body_ns > 0 and c.rendezvous is None else 0.0 for c in bodies}
        left = max(self.hbm_capacity, max(demand.values()))  # an op alone is never slowed
        rates, order = {}, sorted(demand, key=demand.__getitem__)
        for k, key in enumerate(order):
            share = left / (len(order) - k)
            got = min(demand[key], share)
            left -= got
            rates[key] = got / demand[key] if demand[key] > 0 else 1.0
        return rates

    def _progress(self, t: float) -> None:
        """Move fluid data phases forward to ``t``."""
        now = self.now
        dt = t - now
        if dt > 0:
            running = [c for c in self.units.values() if c is not None] if self._ops else None
            if running:
                for cmd in running:  # a lone op's body began inside this interval
                    if cmd.phase == "launch" and cmd.phase_end < t:
                        cmd.phase, cmd.data_start_ns, cmd.phase_end = "body", cmd.phase_end, math.inf
                        self._rates = None
                rates = self._op_rates()
                for cmd in running:
                    if cmd.phase == "body":
                        t0 = max(now, cmd.data_start_ns)
                        step = min(cmd.remaining, rates[id(cmd)] * (t - t0))
                        cmd.remaining -= step
                        _extend(cmd.segments, t0, t, step, len(rates))
            for act, bandwidth in self._links if self._moving else ():
                if act:
                    moved = bandwidth / len(act) * dt
                    for c in act:
                        step = min(moved, c.remaining)
                        c.remaining -= step
                        _extend(c.segments, now, t, step, len(act))
        if t > now:
            self.now = t

    def _step(self, t: float) -> None:
        self._progress(t)
        # What is left of a phase can be below what the clock can still resolve at t (floats of
        # absolute ns lose sub-ns digits on a long-running host): such a phase is complete.
        tol = 4 * math.ulp(t)
        units = self.units
        rates = None
        for unit, cmd in units.items() if self._ops else ():
            if cmd is not None:
                if rates is None:  # the speeds before this step changes any of them
                    rates = self._op_rates()
                if cmd.phase == "launch" and cmd.phase_end <= t:
                    cmd.phase, cmd.phase_end = "body", math.inf
                    cmd.data_start_ns = t
                    self._rates = None
                if cmd.phase == "body" and cmd.remaining <= _EPS_NS + rates.get(id(cmd), 1.0) * tol:
                    cmd.end_ns = t
                    units[unit] = None
                    self._ops -= 1
                    self._rates = None
                    self._finish(cmd)
        if self.graph is not None and self.graph.end_ns <= t:
            cmd, self.graph = self.graph, None
            self._finish(cmd)
        for act, bandwidth in self._links if self._moving else ():
            if not act:
                continue
            left = _EPS_BYTES + bandwidth / len(act) * tol
            for c in [c for c in act if c.remaining <= left]:
                act.remove(c)
                self._moving -= 1
                c.data_end_ns = t
                c.phase, c.phase_end = "completion", t + (c.job.completion_ns if c.job else 0.0)
        for i, cmd in enumerate(self.dma) if self._copies else ():
            if cmd is None or cmd.phase == "data" or cmd.phase_end > t:
                continue
            if cmd.phase == "setup" and cmd.direction != "d2d" and cmd.job and cmd.job.nbytes > 0:
                cmd.phase, cmd.phase_end, cmd.data_start_ns = "data", math.inf, t
                cmd.remaining = float(cmd.job.nbytes)
                self.active[cmd.direction].append(cmd)
                self._moving += 1
            elif cmd.phase == "setup" and cmd.direction != "d2d":  # zero bytes: straight to completion
                cmd.data_start_ns = cmd.data_end_ns = t
                cmd.phase, cmd.phase_end = "completion", t + (cmd.job.completion_ns if cmd.job else 0.0)
            else:
                cmd.end_ns = t
                self.dma[i] = None
                self._copies -= 1
                self._finish(cmd)

    def _finish(self, cmd: Command) -> None:
        q = self.streams[cmd.stream]
        assert q and q[0] is cmd, "commands finish in stream order"
        q.popleft()
        cmd.done = True
        self.prev_end[cmd.stream] = cmd.end_ns
        self.prev_tag[cmd.stream] = "pcie" if cmd.kind == "copy" else (
            cmd.cause if cmd.kind in ("record", "wait") else "communication" if cmd.rendezvous is not None
            else "sync")
        if cmd.kind == "record" and cmd.event is not None:
            cmd.event.done_ns = cmd.end_ns
            cmd.event.tag = cmd.cause if cmd.cause in ("pcie", "sync", "communication") else "sync"
        self.finished.append(cmd)

    def _ready(self, cmd: Command) -> bool:
        if cmd.visible_ns > self.now:
            return False
        return not (cmd.kind == "wait" and cmd.event is not None and cmd.event.done_ns is None)

    def _cause(self, cmd: Command) -> str:
        s = cmd.stream
        t, why = cmd.visible_ns, "host"  # the latest constraint; the first of equal ones
        if self.prev_end[s] > t:
            t, why = self.prev_end[s], self.prev_tag[s]
        if cmd.kind == "wait" and cmd.event is not None and cmd.event.done_ns is not None and cmd.event.done_ns > t:
            t, why = cmd.event.done_ns, cmd.event.tag
        if why not in ("host", "pcie", "communication"):
            why = "sync"
        return "resource" if self.now > t + 1e-9 else why

    def _dispatch(self) -> None:
        streams = self.streams
        if len(streams) == 1:  # one queue: its head, while heads start
            q = streams[0]
            while q and math.isnan(q[0].start_ns) and self._ready(q[0]) and self._start(q[0]):
                pass
            return
        progress = True
        while progress:
            progress = False
            heads = [q[0] for q in streams if q and math.isnan(q[0].start_ns) and self._ready(q[0])]
            heads.sort(key=lambda c: (max(c.visible_ns, self.prev_end[c.stream]), c.stream))
            for cmd in heads:
                if self._start(cmd):
                    progress = True

    def _start(self, cmd: Command) -> bool:
        cause = self._cause(cmd)
        if cmd.kind in ("record", "wait"):
            cmd.start_ns = cmd.end_ns = self.now
            cmd.cause = self.prev_tag[cmd.stream] if cmd.kind == "record" else cause
            if cmd.kind == "wait" and cmd.event is not None and cmd.event.done_ns is not None \
                    and cmd.event.done_ns >= self.prev_end[cmd.stream]:
                cmd.cause = cmd.event.tag
            self._finish(cmd)
            return True
        if cmd.kind == "graph":
            # a collective already running (a send on another stream) goes on beside it
            if self.graph is not None or any(c is not None and c.rendezvous is None for c in self.units.values()):
                return False
            cmd.start_ns, cmd.cause = self.now, cause
            self.graph = cmd
            if cmd.rendezvous is not None:
                cmd.end_ns = math.inf
                self.waiting.append(cmd)
                cmd.rendezvous.arrive(cmd, self.now)
            else:
                cmd.end_ns = self.now + (cmd.graph.total_ns if cmd.graph is not None else 0.0)
            return True
        if cmd.kind == "op":
            unit = next((u for u in self.slots[cmd.cost.unit if cmd.cost else "vector"] if self.units[u] is None),
                        None)
            if unit is None or self.graph is not None:
                return False
            cmd.start_ns, cmd.cause = self.now, cause
            cmd.phase = "launch"
            cmd.phase_end = self.now + (cmd.cost.launch_ns if cmd.cost else 0.0)
            cmd.remaining = cmd.cost.body_ns if cmd.cost else 0.0
            self.units[unit] = cmd
            self._ops += 1
            if cmd.rendezvous is not None:
                cmd.remaining = math.inf
                self.waiting.append(cmd)
                cmd.rendezvous.arrive(cmd, self.now)
            return True
        free = [i for i, c in enumerate(self.dma) if c is None]
        if not free:
            return False
        cmd.engine = free[0]
        cmd.start_ns, cmd.cause = self.now, cause
        cmd.phase = "setup"
        setup = cmd.fixed_ns if cmd.direction == "d2d" else (cmd.job.setup_ns if cmd.job else 0.0)
        cmd.phase_end = self.now + setup
        self.dma[cmd.engine] = cmd
        self._copies += 1
        return True
