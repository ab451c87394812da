"""The tracer inside the profiled process: records, and hands the records over; nothing more.

The recorder hooks every runtime API call (it records the session's calls in place of
:meth:`HostLog.record`): it notes the user's call
site, and every ``flush_events`` calls or ``flush_ms`` it *drains* the session
(:func:`accelview.capture.sim.runtime.drain.drain`) and sends what finished since the last drain as
one ``RECS`` frame of packed raw records (:mod:`..protocol.payloads`). Each device writes its finished
commands into a ring of its own as they finish (:mod:`..sim.device.ring`), so a drain reads no cold
records. Turning records into the capture's rows, counters, flows and truth is the service's
work (:mod:`.collector`): the profiled program pays for the hook, the rings, packing their
lists (``struct`` and msgpack), and a copy into the pipe. A timer thread (:meth:`Recorder._ticker`)
marks a ``flush_ms`` drain due; the drains run on the script's thread, between two calls. When no
call comes to run it (the script has stopped calling the runtime), the timer asks ``wake`` (the
child's: a signal to the script's thread) for :meth:`Recorder.idle_drain` there, so a kill
loses at most about ``flush_ms`` of records whatever the script does.
The first call ``SAMPLE_MS`` of host time after the last sample reads the process's RSS and CPU
into a buffer the next drain ships (:class:`..protocol.hostmetrics.Ticks`): a compare per call.
"""

from __future__ import annotations

import contextlib
import gc
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any

import numpy as np

from ..protocol import wire
from ..protocol.config import CaptureConfig
from ..protocol.hostmetrics import SAMPLE_MS, Ticks, read_sample
from ..protocol.payloads import PROTOCOL, pack
from ..protocol.simcodec import spec_plain
from ..sim.device.ring import DeviceRing, Templates
from ..sim.runtime import api as sim_api
from ..sim.runtime import copies as sim_copies
from ..sim.runtime import graph as sim_graph
from ..sim.runtime import hostlog as sim_hostlog
from ..sim.runtime import simulator as sim_runtime
from ..sim.runtime.drain import drain
from ..sim.runtime.hostlog import HostLog
from ..sim.runtime.simulator import Simulator

Send = Callable[[bytes, Mapping[str, Any], Mapping[str, np.ndarray | bytes] | None], None]
# Frames inside these files are the runtime's, not the user's: a call site is the first frame outside.
IDLE_GRACE_S = 0.005  # after a drain fell due, how long the timer waits for a call to run it
RUNTIME_FILES = frozenset(m.__file__ for m in (sim_api, sim_runtime, sim_copies, sim_graph, sim_hostlog)) | {
    __file__}
_getframe = sys._getframe


def _user_frame() -> tuple[FrameType | None, int]:
    """For the recorder's hook (called by the hook's helper), its call site: the first frame
    outside the runtime's files from the hook's caller outwards (None: none), and that frame's
    depth as ``sys._getframe`` counts it in the hook."""
    # depth 1 is the hook's caller (the runtime's submit, or HostLog.call): the walk starts past it
    f: FrameType | None = _getframe(4)
    depth = 2
    while f is not None and f.f_code.co_filename in RUNTIME_FILES:
        f = f.f_back
        depth += 1
    return f, depth


class Recorder:
    """Sends one simulated session's raw records through ``send`` while the session runs."""

    def __init__(self, sim: Simulator, config: CaptureConfig, send: Send, process: str = "python",
                 extra_metadata: Mapping[str, Any] | None = None) -> None:
        self.sim, self.config, self.send = sim, config, send
        self.sites: list[int] = []  # per call since the last drain: its call-site id (-1: none)
        self._site_ids: dict[tuple[int, int], int] = {}  # (id of a code, instruction offset) → site id
        self._codes: list[Any] = []
        self._new_sites: list[tuple[int, str, str]] = []
        self.calls = 0  # API calls sent so far
        self.events = 0
        self._flush_s = config.flush_ms / 1e3
        self._deadline = time.monotonic() + self._flush_s
        # the hook counts the calls waiting by its list of sites, or (no call sites) by the log's
        # objects, two a call; it drains once ``_due[0]`` are waiting (0: flush_ms has passed)
        self._per_call = 1 if config.call_sites else 2
        self._due = [config.flush_events * self._per_call]
        self._stopped = threading.Event()
        self.drains = 0  # drains so far (the timer's way to see whether calls still come)
        self.busy = False  # whether the devices had work in flight or queued at the last drain
        # how the timer gets an idle script's thread to drain (the child's signal); None: it cannot
        self.wake: Callable[[], None] | None = None
        self.draining = False
        self.stop_requested = False
        self.after_drain: Callable[[], None] | None = None
        session = {"process": process, "extra": dict(extra_metadata or {}), "config": config.to_json(),
                   "host": "sim-host" if config.deterministic else socket.gethostname(),
                   "devices": len(sim.devices), "seed": sim.seed, "deterministic": sim.clock.deterministic,
                   "counter_period_ns": sim.counter_period_ns, "start_ns": sim.clock.start_ns}
        # host metrics are wall-clock readings: a deterministic capture records none
        self.ticks = Ticks() if config.on("host_metrics") and not config.deterministic else None
        if self.ticks is not None:
            session["host_metrics"] = read_sample()  # the baseline of the first utilisation
        self._tick_ns = int(SAMPLE_MS * 1e6)
        # the host time of the next sample (never, without host metrics)
        self._next_tick = [sim.clock.now + self._tick_ns if self.ticks is not None else 1 << 62]
        session.update(protocol=PROTOCOL, spec=spec_plain(sim.spec))
        send(wire.SESSION, session, None)

    def install(self) -> None:
        """Start seeing every API call of the session (and, unless deterministic, the timer of ``flush_ms``)."""
        log = self.sim.log
        log.record = self._hook(log)  # type: ignore[method-assign]  # this log's calls go through the hook
        templates = Templates()
        for dev in self.sim.devices:  # each device writes its finished commands into a ring of its own
            dev.engine.finished = DeviceRing(templates)  # type: ignore[assignment]
        # Deterministic: drains every flush_events calls only. Where a drain falls shapes the
        # capture (clock sync samples, the estimate records are converted with), so no wall clock.
        if not self.config.deterministic:
            threading.Thread(target=self._ticker, name="accelview flush timer", daemon=True).start()

    def _hook(self, log: HostLog) -> Callable[[int, int, str, int, dict[str, Any]], None]:
        """What records every API call of ``log`` in place of :meth:`HostLog.record`: its entry,
        its call site (the first frame outside the runtime, found by ``sys._getframe`` at the depth
        last seen for the kind of call), and a drain when one is due. How and why: docs/CAPTURE.md."""
        sites = self.sites
        append, site_ids, codes, new_sites = sites.append, self._site_ids, self._codes, self._new_sites
        due, next_tick, tick = self._due, self._next_tick, self._tick
        cells: dict[str, list[Any]] = {}  # call name → its kind's cell
        # kind → its cell: [depth of its last call site, that depth's table, kind]; a table maps an
        # instruction offset to the (code, site id) last found there making a call of the kind
        kinds: dict[str, list[Any]] = {}
        tables: dict[tuple[str, int], dict[int, tuple[Any, int]]] = {}  # (kind, depth) → its table
        cell_get = cells.get

        def cell_of(name: str) -> list[Any]:
            if len(cells) > 100_000:  # a script that names every call differently
                cells.clear()
            kind = name.partition(" ")[0]
            cell = kinds.get(kind)
            if cell is None:
                cell = kinds[kind] = [4, tables.setdefault((kind, 4), {}), kind]
            cells[name] = cell
            return cell

        def site_of(cell: list[Any]) -> int:
            f, depth = _user_frame()
            if depth != cell[0]:
                cell[0], cell[1] = depth, tables.setdefault((cell[2], depth), {})
            if f is None:
                return -1
            code = f.f_code
            lasti = f.f_lasti
            key = (id(code), lasti)  # not the code object itself: hashing one hashes its bytecode
            site = site_ids.get(key, -1)
            if site < 0:
                site = site_ids[key] = len(site_ids)
                codes.append(code)  # keeps the id in the keys this code's
                new_sites.append((site, f"{code.co_filename}:{f.f_lineno}", code.co_name))
            cell[1][lasti] = (code, site)
            return site

        def on_call(start_ns: int, end_ns: int, name: str, cid: int, args: dict[str, Any]) -> None:
            log.call_ints.extend((start_ns, end_ns, cid))  # the log's lists: a drain replaces them
            log.call_objects.extend((name, args))
            cell = cell_get(name) or cell_of(name)
            try:
                f = _getframe(cell[0])
                code, site = cell[1][f.f_lasti]
                if code is not f.f_code:
                    site = site_of(cell)
            except (KeyError, ValueError):  # an instruction not seen yet; the stack not that deep
                site = site_of(cell)
            append(site)
            if end_ns >= next_tick[0]:
                tick(end_ns)
            if len(sites) >= due[0]:
                self.drain()

        def on_call_without_site(start_ns: int, end_ns: int, name: str, cid: int, args: dict[str, Any]) -> None:
            log.call_ints.extend((start_ns, end_ns, cid))
            objects = log.call_objects
            objects.extend((name, args))
            if end_ns >= next_tick[0]:
                tick(end_ns)
            if len(objects) >= due[0]:
                self.drain()

        return on_call if self.config.call_sites else on_call_without_site

    def detach(self) -> None:
        """Stop seeing API calls (in a process forked from the traced one: the session's log
        records on its own again, as in an untraced run; nothing is drained or sent)."""
        # del, not __dict__: reading that would slow every attribute load of the log
        with contextlib.suppress(AttributeError):
            del self.sim.log.record
        if self.ticks is not None:
            self.ticks.close()

    def request_stop(self) -> None:
        """Make the next API call's hook drain, and ``after_drain`` run after it (a signal
        handler's way of stopping the script where its records are whole)."""
        self.stop_requested = True
        self._due[0] = 0

    def _ticker(self) -> None:
        """The timer thread: makes a drain due at the first call ``flush_ms`` after the last drain;
        when none has come ``IDLE_GRACE_S`` later and there are records to send (calls logged, or
        device work that goes on finishing), it has the script's thread drain where it is (``wake``)."""
        while not self._stopped.wait(max(self._deadline - time.monotonic(), 0.0)):
            if time.monotonic() < self._deadline:
                continue
            seen = self.drains
            self._due[0] = 0
            if self._stopped.wait(IDLE_GRACE_S):
                return
            if self.drains == seen:  # no call came to drain
                if self.wake is not None and (self.sim.log.call_objects or self.busy or self.sim.log.ranges):
                    self.wake()
                self._deadline = time.monotonic() + self._flush_s  # again, while no call comes

    def idle_drain(self) -> None:
        """Drain from outside any API call (the script has stopped calling the runtime): the
        devices first run up to the host's time now, as real ones go on executing their queues."""
        now = self.sim.clock.idle_now()
        for dev in self.sim.devices:
            dev.engine.advance(now)
        self.drain()

    def _tick(self, host_ns: int) -> None:
        """Sample the process's RSS and CPU at ``host_ns`` (the hook's, once ``SAMPLE_MS`` of host time passed)."""
        self._next_tick[0] = host_ns + self._tick_ns
        if self.ticks is not None:
            self.ticks.sample(host_ns)

    def drain(self, final: bool = False) -> None:
        """Send everything finished since the last drain (``final``: the run is over). While
        ``draining`` is true a signal handler must not raise (it would cut the stream between
        frames): it sets ``stop_requested``, and ``after_drain`` runs once the drain is done."""
        self.draining = True
        try:
            d = drain(self.sim, final)
            n = d.n_calls
            self.calls += n
            sites = None
            if self.config.call_sites:
                sites = self.sites[:n]
                del self.sites[:n]  # the hook holds this list
                sites.extend([-1] * (n - len(sites)))  # a call the script was stopped in before its hook ran
            collecting = gc.isenabled()
            gc.disable()  # packing makes many short-lived objects: no collections of the script's heap for them
            try:
                meta, cols = pack(d, sites, named=final)
            finally:
                if collecting:
                    gc.enable()
            meta.update(final=final, calls=self.calls, sites=self._new_sites[:])
            if self.ticks is not None:
                meta["host_ticks"] = self.ticks.take()
                meta["host_metrics"] = read_sample()
            self._new_sites.clear()  # the hook holds this list
            self.events += meta["events"]  # also the service's progress while it only spools
            self.send(wire.RECORDS, meta, cols)
        finally:
            self.draining = False
        self.drains += 1
        self.busy = any(dev.engine.pending() for dev in self.sim.devices)
        self._deadline = time.monotonic() + self._flush_s
        self._due[0] = self.config.flush_events * self._per_call
        if self.stop_requested and self.after_drain is not None:
            self.after_drain()

    def finish(self, exit_code: int, error: str = "") -> None:
        """Last drain (the devices finish their queued work), then the END frame."""
        self.detach()
        self._stopped.set()
        self.stop_requested = False  # the script has ended: nothing is left to stop
        self.drain(final=True)
        self.send(wire.END, {"exit_code": exit_code, "error": error, "events": self.events}, None)


def traced_simulator(config: CaptureConfig, send: Send, asked: Mapping[str, Any] | None = None,
                     process: str = "python", extra_metadata: Mapping[str, Any] | None = None) -> Recorder:
    """A session traced by an installed recorder (call ``recorder.finish(...)`` at the end).
    The config's spec, seed and device count win over what the script ``asked`` for."""
    asked = dict(asked or {})

    def pick(name: str, default: Any) -> Any:
        value = getattr(config, name)
        return value if value is not None else asked.get(name, default)

    sim = Simulator(pick("spec", "gen5x16-141g"), pick("devices", 1), pick("seed", 0), config.deterministic,
                    config.counter_period_ns)
    rec = Recorder(sim, config, send, process, extra_metadata)
    rec.install()
    return rec
