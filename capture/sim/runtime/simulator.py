"""The runtime API user scripts call: devices, buffers, streams, events, copies and launches.

::

    from accelview.capture import sim

    with sim.session(spec="gen5x16-141g", seed=0) as s:
        dev = sim.device(0)
        w = dev.alloc((4096, 4096), "bf16")
        h = sim.host_buffer((4096, 4096), "bf16", pinned=True)
        st = dev.stream()
        dev.copy(w, h, stream=st)                    # async on a stream
        dev.launch("gemm", stream=st, m=1, n=4096, k=4096, weights=w)
        dev.synchronize()
    trace = s.trace()

Every call costs modelled host time (``spec.host.*_api_ns``) and submits commands to the
device's driver queue (a ring of ``spec.host.queue_depth`` entries: a full ring blocks the
host). Host waits on the device advance host time virtually (see :mod:`.hostclock`).
"""

from __future__ import annotations

import itertools
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cluster.timebase import ClockModel, IdentityClock
from ..device.clock import DeviceClock
from ..device.command import Command, EventState
from ..device.costs import CostTerms, cost, cost_terms
from ..device.engine import DeviceEngine
from ..device.ops import OpWork, op_work
from ..device.specs import DeviceSpec, load_spec
from . import copies
from .buffers import DeviceBuffer, HostBuffer, device_buffer, host_buffer
from .graph import Graph
from .graph import capture as graph_capture
from .hostclock import HostClock
from .hostlog import HostLog
from .limits import check_bounds

if TYPE_CHECKING:
    from accelview.model import Trace

    from ..cluster.communicator import Communicator
    from ..cluster.rendezvous import Fabric


class Simulator:
    """One simulated process: a host thread, its clock, and ``devices`` identical devices."""

    def __init__(self, spec: str | DeviceSpec = "gen5x16-141g", devices: int = 1, seed: int = 0,
                 deterministic: bool = True, counter_period_ns: int = 10_000, script_gap_ns: int = 0,
                 host_start_ns: int | None = None) -> None:
        if devices < 1:
            raise ValueError(f"devices must be at least 1, got {devices}")
        if counter_period_ns < 1:
            raise ValueError(f"counter_period_ns must be positive, got {counter_period_ns}")
        check_bounds(devices, counter_period_ns)
        self.spec = spec if isinstance(spec, DeviceSpec) else load_spec(spec)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        # host_start_ns: where the host clock starts (default: 1 s when deterministic, else now
        # on the host's monotonic clock)
        self.clock = HostClock(deterministic, host_start_ns, script_gap_ns)
        self.counter_period_ns = int(counter_period_ns)
        self.log = HostLog()
        self._cid = 0
        self.shapes = itertools.count()  # numbers the devices' caches give the op shapes they cost (OpCost.shape)
        clock_rng = np.random.default_rng([seed, 1])
        self.devices = [Device(self, i, clock_rng) for i in range(devices)]
        # a host of a cluster: its index and name, and its clock (raw host ns <-> the cluster's true time)
        self.host_index, self.host_name = 0, ""
        self.clock_model: ClockModel = IdentityClock()
        self.fabric: Fabric | None = None  # the links between devices (made on first use when not in a cluster)

    def next_cid(self) -> int:
        """A fresh correlation id."""
        self._cid += 1
        return self._cid

    def device(self, index: int = 0) -> Device:
        """Device ``index``."""
        if not 0 <= index < len(self.devices):
            raise ValueError(f"no device {index}: this session has {len(self.devices)}")
        return self.devices[index]

    def communicator(self, devices: list[Device] | None = None, algorithm: str = "ring") -> Communicator:
        """Collectives over ``devices`` of this host (default: all of them), see :mod:`..cluster.communicator`."""
        from ..cluster.communicator import Communicator
        from ..cluster.rendezvous import Fabric
        from ..cluster.topology import Topology

        if self.fabric is None:
            self.fabric = Fabric(Topology(1, len(self.devices)))
        return Communicator(self.fabric, devices if devices is not None else self.devices, algorithm)

    def host_buffer(self, shape: int | tuple[int, ...], dtype: Any = "bf16",
                    pinned: bool = True) -> HostBuffer:
        """Host memory for copies (no data is allocated)."""
        return host_buffer(shape, dtype, pinned)

    def host_work(self, name: str, ns: float) -> None:
        """The script's own work on the host thread for ``ns`` (a data loader, a sampler): a phase
        ``name`` on the thread during which it launches nothing."""
        start = self.clock.enter_call()
        end = self.clock.spend(ns)
        self.clock.exit_call()
        self.log.annotate(start, end, name)

    def finish(self) -> int:
        """Let every device drain its queues; returns the host time at the end."""
        for dev in self.devices:
            dev.engine.run_until_idle()
        return self.clock.now

    def trace(self) -> Trace:
        """Finish and build the capture as a ``Trace`` (see :mod:`.tracewriter`; a big capture's
        counters may be made by a short-lived forked helper, :mod:`.offload`)."""
        from ...convert.tracewriter import build_trace

        self.finish()
        return build_trace(self)


class Event:
    """A marker recorded in a stream; other streams and the host can wait for it."""

    def __init__(self, stream: Stream, state: EventState, cmd: Command) -> None:
        self.stream, self.state, self.command = stream, state, cmd

    def synchronize(self) -> None:
        """Block the host until the event has fired."""
        dev = self.stream.device
        dev.host_wait("event_synchronize", lambda: dev.engine.run_until(self.command))

    def query(self) -> bool:
        """Whether the event has fired by now (host time), without blocking."""
        dev = self.stream.device
        dev.engine.advance(dev.sim.clock.now)
        return self.state.done_ns is not None


class Stream:
    """An in-order queue of device work."""

    def __init__(self, device: Device, index: int) -> None:
        self.device, self.index = device, index
        self.call_args = {"stream": index}  # the arguments of its API calls (one shared dict)

    def record_event(self) -> Event:
        """Record an event at the current end of this stream."""
        dev = self.device
        state = EventState(self.index)
        cmd = dev.submit("record", self, "record_event", dev.spec.host.event_api_ns, event=state)
        return Event(self, state, cmd)

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait until ``event`` has fired."""
        if event.stream.device is not self.device:
            raise ValueError("wait_event: the event belongs to another device (cross-device events are "
                             "not simulated yet)")
        self.device.submit("wait", self, "wait_event", self.device.spec.host.event_api_ns, event=event.state)

    def synchronize(self) -> None:
        """Block the host until everything queued on this stream has finished."""
        dev = self.device
        q = dev.engine.streams[self.index]
        if q:
            last = q[-1]
            dev.host_wait("stream_synchronize", lambda: dev.engine.run_until(last))
        else:
            dev.host_wait("stream_synchronize", lambda: dev.sim.clock.now)


DEVICE_DRIFT_PPM = 30.0  # a device counter drifts within this of its host clock (REFERENCE.md: up to 30)


class Device:
    """One simulated accelerator."""

    def __init__(self, sim: Simulator, index: int, clock_rng: np.random.Generator) -> None:
        self.sim, self.index, self.spec = sim, index, sim.spec
        self.engine = DeviceEngine(self.spec, 1)
        freq = round(self.spec.timing.timer_mhz * 1e6)
        self.clock = DeviceClock(freq, int(clock_rng.integers(0, 5_000_000_000)),
                                 float(clock_rng.uniform(-DEVICE_DRIFT_PPM, DEVICE_DRIFT_PPM)), sim.clock.start_ns)
        self.default_stream = Stream(self, 0)
        self.streams = [self.default_stream]
        self.hbm_used = 0
        self._next_address = 1 << 20
        self._costs: dict[tuple, tuple[OpWork, CostTerms, dict[str, Any]]] = {}  # per (op, shapes)
        # op name → (that name, its launch call's name): one string object per name however the script
        # builds it (an f-string per launch makes a new one), which a tracer pickles once per frame
        self._names: dict[str, tuple[str, str]] = {}
        self.capturing: Graph | None = None  # the graph that launches go into, inside ``with dev.graph()``

    def __repr__(self) -> str:
        return f"Device({self.index}, {self.spec.name})"

    # -- memory and streams --------------------------------------------------------------------
    def alloc(self, shape: int | tuple[int, ...], dtype: Any = "bf16") -> DeviceBuffer:
        """Allocate HBM; raises ``MemoryError`` when the device is full."""
        buf = device_buffer(self, shape, dtype, self._next_address)
        if self.hbm_used + buf.nbytes > self.spec.hbm_bytes:
            raise MemoryError(f"device {self.index}: cannot allocate {buf.nbytes} B, "
                              f"{self.spec.hbm_bytes - self.hbm_used} B of HBM free")
        self.hbm_used += buf.nbytes
        self._next_address += (buf.nbytes + 255) // 256 * 256
        self.host_call("alloc", self.spec.host.event_api_ns, bytes=buf.nbytes)
        return buf

    def free(self, buf: DeviceBuffer) -> None:
        """Return a buffer's HBM."""
        if not buf.freed:
            buf.freed = True
            self.hbm_used -= buf.nbytes

    def stream(self) -> Stream:
        """A new stream on this device."""
        s = Stream(self, self.engine.add_stream())
        self.streams.append(s)
        return s

    # -- work ----------------------------------------------------------------------------------
    def cost_of(self, op: str, dims: dict[str, Any]) -> tuple[OpWork, CostTerms]:
        """The jitter-free cost of op kind ``op`` with shapes ``dims`` (cached per shape)."""
        return self._cached(op, dims)[:2]

    def _cached(self, op: str, dims: dict[str, Any]) -> tuple[OpWork, CostTerms, dict[str, Any]]:
        """Cost and the trace arguments of a launch of ``op`` with ``dims``, computed once per
        shape (the arguments are one shared dict: recorders can number them by identity; the
        terms carry the shape's number, which its costs keep)."""
        key = (op, *sorted(dims.items()))
        try:
            return self._costs[key]
        except KeyError:
            work = op_work(op, **dims)
            terms = cost_terms(self.spec, work, next(self.sim.shapes))
            return self._costs.setdefault(key, (work, terms, {"op": op, **dims}))
        except TypeError:  # unhashable shape values: no caching
            work = op_work(op, **dims)
            return work, cost_terms(self.spec, work), {"op": op, **dims}

    def launch(self, op: str, stream: Stream | None = None, name: str | None = None, **shapes: Any) -> None:
        """Launch op kind ``op`` (see :mod:`.ops`) asynchronously; buffer arguments are accepted
        and recorded but do not change the cost. Inside ``with dev.graph():`` the launch is
        recorded into the graph instead."""
        buffers = {k: v for k, v in shapes.items() if isinstance(v, DeviceBuffer)}
        dims = {k: v for k, v in shapes.items() if k not in buffers} if buffers else shapes
        described = {k: f"{v.nbytes} B @ {v.address:#x}" for k, v in buffers.items()}
        if self.capturing is not None:
            if stream is not None:
                raise ValueError("launch inside a graph capture: the stream is chosen when the graph is launched")
            self.capturing.add(name or op, op, dims, described)
            return
        work, terms, args = self._cached(op, dims)
        cost_ = cost(self.spec, work, self.sim.rng, terms)
        if described:
            args = {**args, **described}
        names = self._names.get(name or op)
        if names is None:
            if len(self._names) > 100_000:  # a script that names every launch differently
                self._names.clear()
            names = self._names[name or op] = (name or op, f"launch {name or op}")
        name, api_name = names
        self.submit("op", stream or self.default_stream, name, self.spec.host.launch_api_ns, cost=cost_, args=args,
                    api_name=api_name)

    def graph(self, name: str = "graph") -> AbstractContextManager[Graph]:
        """Capture the launches made inside a ``with`` block into a :class:`~.graph.Graph`
        (nothing runs); ``graph.launch(stream, **updates)`` then replays them with one API call."""
        return graph_capture(self, name)

    def launch_graph(self, graph: Graph, stream: Stream | None, updates: dict[str, Any],
                     rendezvous: Any = None) -> Command:
        """One replay of ``graph`` (what ``Graph.launch`` calls); ``rendezvous``: where the replay's
        collective nodes meet the other participants' (a graph captured by a communicator)."""
        if self.capturing is not None:
            raise RuntimeError("a graph cannot be launched while another is being captured")
        run = graph.plan(updates, self.sim.rng)
        stream = stream or self.default_stream
        args = {"nodes": len(run), **updates}
        return self.submit("graph", stream, graph.name, self.spec.host.launch_api_ns,
                           api_name=f"launch graph {graph.name}", call_args={"stream": stream.index, **args},
                           graph=run, args=args, rendezvous=rendezvous)

    def copy(self, dst: HostBuffer | DeviceBuffer, src: HostBuffer | DeviceBuffer,
             stream: Stream | None = None, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default: all of ``src``) from ``src`` into ``dst``; direction from the
        buffers. On a stream: asynchronous (pageable H2D returns once staged, pageable D2H once
        complete); without: synchronous."""
        copies.copy(self, dst, src, stream, nbytes)

    def synchronize(self) -> None:
        """Block the host until all work on this device has finished."""
        self.host_wait("device_synchronize", self.engine.run_until_idle)

    # -- plumbing shared with copies -----------------------------------------------------------
    def host_call(self, name: str, cost_ns: float, **args: Any) -> None:
        """A synchronous API call that costs the host ``cost_ns`` and submits nothing."""
        clock = self.sim.clock
        start = clock.enter_call()
        end = clock.spend(cost_ns)
        self.sim.log.call(start, end, name, -1, **args)
        clock.exit_call()

    def enqueue(self, kind: str, stream: Stream, name: str, cid: int, chunk: int = -1,
                **fields: Any) -> Command:
        """Write one command into ``stream``'s ring at the current host time (blocking while the
        ring is full) and ring the doorbell.

        The engine is not advanced here: commands wait in their queues with their visible time
        and the engine processes them in time order whenever the host needs an answer (a wait,
        a query, a full ring), which gives the same result with far fewer engine steps."""
        clock, engine = self.sim.clock, self.engine
        depth = self.spec.host.queue_depth
        while engine.pending(stream.index) >= depth:
            blocked = clock.now
            clock.wait_until(engine.run_until(engine.streams[stream.index][0]))
            self.sim.log.wait(blocked, clock.now)
            engine.advance(clock.now)
        now = clock.now
        visible = now + round(self.spec.timing.doorbell_ns)
        cmd = Command(cid, kind, stream.index, now, visible, name, **fields)
        engine.submit(cmd)
        self.sim.log.submit(self.index, stream.index, now, visible, name, cid, chunk)
        return cmd

    def submit(self, kind: str, stream: Stream, name: str, api_ns: float, api_name: str | None = None,
               call_args: dict[str, Any] | None = None, **fields: Any) -> Command:
        """One asynchronous API call that submits one command; the call's arguments are
        ``call_args`` (default: the stream's)."""
        clock = self.sim.clock
        cid = self.sim.next_cid()
        start = clock.enter_call()
        clock.spend(api_ns)
        cmd = self.enqueue(kind, stream, name, cid, **fields)
        self.sim.log.record(start, clock.now, api_name or name, cid, call_args or stream.call_args)
        clock.exit_call()
        return cmd

    def host_wait(self, name: str, until: Any) -> None:
        """A blocking API call: the host waits for ``until()`` (a device time) plus the interrupt."""
        clock = self.sim.clock
        start = clock.enter_call()
        self.engine.advance(clock.now)
        done = until()
        blocked = clock.spend(self.spec.host.sync_api_ns)
        if done is not None and done > -np.inf:
            clock.wait_until(done + self.spec.timing.interrupt_ns)
        self.sim.log.wait(blocked, clock.now)
        self.engine.advance(clock.now)
        self.sim.log.call(start, clock.now, name, -1)
        clock.exit_call()
