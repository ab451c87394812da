"""The capture service's collector: turns the profiled process's raw records into rows.

The profiled process only records (:mod:`.recorder`); its frames of packed raw records
(:mod:`..protocol.payloads`) arrive here, in the service. For each drain the collector converts host
calls, staging memcpy's and driver submissions (host clock, :mod:`..convert.hostslices`), device records (through the
running clock estimate, :mod:`.clocktrack`) and the sampled counters of the windows now
complete into rows of the capture's tables with *global* ids (slice ids and argument-set
ids count from the first drain; flows may join slices of different drains), and hands them
to ``send(kind, meta, columns)`` (:class:`.ingest.Ingest`). The device model it needs
(specs, the device clocks the records are stamped with) is rebuilt from the session frame:
a ``Simulator`` with the child's spec, seed and start time has the same device clocks.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from accelview.model import StringTable, TraceBuilder, TrackKind
from accelview.model.errors import CaptureError

from ..convert.batch import TraceBatch
from ..convert.clocksync import true_alignment
from ..convert.devicerows import DeviceRows
from ..convert.hostslices import add_calls, add_submissions
from ..convert.records import DeviceRecords
from ..convert.session import session_metadata
from ..convert.summaries import QueueDepth
from ..protocol import wire
from ..protocol.config import CaptureConfig
from ..protocol.hostmetrics import HostMetrics
from ..protocol.payloads import PROTOCOL, RecordUnpacker
from ..protocol.simcodec import spec_of
from ..sim.runtime.drain import Drained
from ..sim.runtime.hostlog import SUBMISSION_INTS
from ..sim.runtime.simulator import Simulator

Send = Callable[[bytes, Mapping[str, Any], Mapping[str, np.ndarray] | None], None]
ORDER = ("slices", "args", "instants", "flows", "counters", "clock_samples", "op_counters", "truth_ops", "truth_idle")


class Collector:
    """Turns one session's raw records into rows and sends them through ``send``, drain by drain."""

    def __init__(self, sim: Simulator, config: CaptureConfig, send: Send, process: str = "python",
                 extra_metadata: Mapping[str, Any] | None = None, host: str = "sim-host",
                 host_metrics: dict[str, Any] | None = None) -> None:
        self.sim, self.config, self.send = sim, config, send
        self.strings = StringTable()
        self.meta = TraceBuilder(self.strings)
        self.host = host
        self.clocks: list[tuple[str, bool, float, float, float]] = [("host monotonic", True, 0.0, 0.0, 0.0)]
        m = self.meta
        self.host_track = m.add_track(host, TrackKind.HOST, host=host)
        self.proc = m.add_track(process, TrackKind.PROCESS, parent=self.host_track, host=host)
        self.thread = m.add_track("main thread", TrackKind.HOST_THREAD, parent=self.proc, host=host)
        self.api = m.add_track("runtime API", TrackKind.RUNTIME_API, parent=self.thread, host=host)
        self.devices = []
        for dev in sim.devices:
            self.clocks.append((f"device {dev.index} timer", False, 0.0, 0.0, 0.0))
            self.devices.append(DeviceRows(m, dev, len(self.clocks) - 1, sim.clock.start_ns, sim.seed, config))
        self.queues: dict[tuple[int, int], tuple[int, int, QueueDepth]] = {}
        self.exec_of: dict[tuple[int, int, int], int] = {}  # (device, cid, chunk) → submission's global id
        self.call_waiting: dict[int, list[int]] = {}  # cid → submissions whose API call is not seen yet
        self.sent = {"slices": 0, "arg_sets": 0, "strings": 0, "tracks": 0, "counter_tracks": 0}
        self.events = 0
        self.calls = 0
        self.max_end = float(sim.clock.start_ns)
        self.sites: dict[int, tuple[str, str]] = {}  # call-site id → (file:line, function)
        self._metrics: HostMetrics | None = None
        if host_metrics is not None:
            self._metrics = HostMetrics(self.meta, self.proc, self.host)
            self._metrics.add(self.meta, 0, host_metrics)  # the baseline
        meta = {**session_metadata(sim), **dict(extra_metadata or {})}
        meta["capture"] = {**meta.get("capture", {}), "config": config.summary()}
        self.send(wire.HELLO, {"metadata": meta}, None)
        self._send_clocks()
        if config.on("truth"):
            params = [true_alignment(d.clock) for d in sim.devices]
            self.send(wire.ROWS, {"table": "truth_clocks"}, {
                "clock": np.arange(1, len(params) + 1, dtype=np.int32),
                "offset_ns": np.array([p[0] for p in params]), "drift_ppm": np.array([p[1] for p in params])})

    def feed(self, d: Drained, final: bool = False, sites: np.ndarray | None = None,
             host_metrics: dict[str, Any] | None = None, host_ticks: list[list[float]] | None = None) -> None:
        """Convert and send one drain's records (``final``: the run is over); ``sites``: each call's
        call-site id (see ``sites``), ``host_metrics``: the OS's sample of the profiled process,
        ``host_ticks``: its timer's RSS and CPU rows since the last drain."""
        cfg = self.config
        b = TraceBuilder(self.strings)
        batch = TraceBatch(b)
        base = self.sent["slices"]
        flows: list[tuple[int, int, int]] = []
        flow_chunks: list[np.ndarray] = []
        intern = self.strings.intern

        def flow(src: int, dst: int | np.ndarray, name: str) -> None:
            if isinstance(dst, np.ndarray):  # a graph replay's nodes
                flow_chunks.append(np.stack(np.broadcast_arrays(np.int64(src), dst.astype(np.int64),
                                                                np.int64(intern(name)))))
            else:
                flows.append((src, dst, intern(name)))

        # the host's records as the log's columns (no record objects: tens of thousands a second)
        api_ids: dict[int, int] = {}
        if cfg.on("runtime"):
            site_ids = sites.tolist() if sites is not None and len(sites) else None
            first, cids = add_calls(batch, d.call_ints, d.call_objects, self.api, self.thread, d.ranges, d.memcpys,
                                    site_ids, self.sites)
            api_ids = {cid: base + first + j for j, cid in enumerate(cids) if cid > 0}
            if self.call_waiting:  # submissions that came in a drain before their call
                submit = intern("submit")
                for cid in self.call_waiting.keys() & api_ids.keys():
                    flows.extend((api_ids[cid], gid, submit) for gid in self.call_waiting.pop(cid))
        if cfg.on("driver"):
            self._submissions(d, batch, base, api_ids, flows)

        def sub_of(device: int, cid: int, chunk: int) -> int:
            return self.exec_of.pop((device, cid, chunk), -1)

        for i, rows in enumerate(self.devices):
            recs: DeviceRecords = d.commands[i]  # type: ignore[assignment]
            if len(recs):
                self.max_end = max(self.max_end, recs.max_end)
            rows.clock.update(d.host_now_ns)
            new = rows.clock.take_unsent()
            if new is not None:
                b.add_rows("clock_samples", {"clock": np.full(len(new.ref_send_ns), rows.clock_id, np.int32),
                                             "ref_send_ns": new.ref_send_ns, "domain_ts": new.domain_ticks,
                                             "ref_recv_ns": new.ref_recv_ns})
            if cfg.on("device"):
                rows.add_slices(batch, recs, sub_of, flow, base)
            for stream, end in zip(*recs.streams_ends(), strict=True):
                q = self.queues.get((i, stream))
                if q is not None:
                    q[2].downs.append(end)
            horizon = d.horizon_ns[i]
            end = max(self.max_end, d.host_now_ns) if final else None
            if cfg.on("counters"):
                at = rows.add_counters(b, recs, horizon, end)
                for (dev, _), (_, qtrack, depth) in self.queues.items():
                    if dev == i and len(at):
                        b.add_counters(qtrack, at.astype(np.int64), depth.at(at))
            if cfg.on("truth"):
                rows.add_idle_truth(b, recs, d.waits, horizon)
        if self._metrics is not None:
            if host_ticks:
                self._metrics.add_ticks(b, host_ticks)
            if host_metrics is not None:
                self._metrics.add(b, d.host_now_ns, host_metrics)
        batch.flush()
        f = np.concatenate([np.array(flows, dtype=np.int64).reshape(-1, 3).T, *flow_chunks], axis=1)
        if f.shape[1]:
            b.add_rows("flows", {"src": f[0], "dst": f[1], "name": f[2].astype(np.int32)})
        self.events += len(d)
        self._send_rows(b, base, batch.arg_sets)

    def _submissions(self, d: Drained, batch: TraceBatch, base: int, api_ids: dict[int, int],
                     flows: list[tuple[int, int, int]]) -> None:
        """Driver submissions as slices on their queues' tracks, each joined to its API call (or
        waiting for it); their queues' depth and the map from command to submission."""
        ints = d.submission_ints
        first = base + add_submissions(batch, ints, d.submission_names, lambda dev, st: self._queue(dev, st)[0],
                                       api_ids, flows, base)
        n = SUBMISSION_INTS
        devices, streams, submits, _, cids, chunks = (ints[i::n] for i in range(n))
        if len(set(zip(devices, streams, strict=True))) == 1:
            self.queues[(devices[0], streams[0])][2].ups.extend(submits)
        else:
            for key, t in zip(zip(devices, streams, strict=True), submits, strict=True):
                self.queues[key][2].ups.append(t)
        gids = range(first, first + len(cids))
        if self.config.on("device"):
            self.exec_of.update(zip(zip(devices, cids, chunks, strict=True), gids, strict=True))
        if self.config.on("runtime"):
            for cid, gid in zip(cids, gids, strict=True):
                if cid not in api_ids:
                    self.call_waiting.setdefault(cid, []).append(gid)

    def _queue(self, device: int, stream: int) -> tuple[int, int, QueueDepth]:
        key = (device, stream)
        if key not in self.queues:
            track = self.meta.add_track(f"device {device} queue {stream}", TrackKind.DRIVER_QUEUE, parent=self.proc,
                                        host=self.host, device=device)
            depth = self.meta.add_counter_track(f"device {device} queue {stream} depth", "entries", "driver",
                                                "commands submitted and not finished", parent=track, host=self.host,
                                                device=device)
            self.queues[key] = (track, depth, QueueDepth())
        return self.queues[key]

    # -- sending ---------------------------------------------------------------------------------
    def _send_rows(self, b: TraceBuilder, base: int, arg_sets: int) -> None:
        sent, send = self.sent, self.send
        n_str = len(self.strings)
        if n_str > sent["strings"]:
            send(wire.STRINGS, {"first": sent["strings"],
                                "strings": [self.strings[i] for i in range(sent["strings"], n_str)]}, None)
            sent["strings"] = n_str
        small = self.meta.tables_so_far()
        for name in ("tracks", "counter_tracks"):
            if name in small and len(small[name]) > sent[name]:
                t = small[name]
                send(wire.ROWS, {"table": name}, {c: t[c][sent[name]:] for c in t.schema.names})
                sent[name] = len(t)
        tables = b.tables_so_far()
        abase = sent["arg_sets"]
        fixes = {"slices": ("args", None), "instants": ("args", None), "args": ("set", None),
                 "truth_ops": ("slice", base), "op_counters": ("slice", base)}
        for name in ORDER:
            t = tables.get(name)
            if t is None or not len(t):
                continue
            cols = {c: t[c] for c in t.schema.names}
            if name in fixes:
                col, off = fixes[name]
                v = cols[col]
                cols[col] = v + off if off is not None else np.where(v >= 0, v + abase, v).astype(v.dtype)
            send(wire.ROWS, {"table": name}, cols)
        sent["slices"] += len(tables["slices"]) if "slices" in tables else 0
        sent["arg_sets"] += arg_sets
        self._send_clocks()
        dropped = {f"device {r.index}": r.dropped for r in self.devices}
        send(wire.STATS, {"events": self.events, "calls": self.calls, "dropped": dropped}, None)

    def _send_clocks(self) -> None:
        """The clock domains with the current estimates (the service keeps the latest)."""
        clocks = [list(self.clocks[0])]
        for rows in self.devices:
            e = rows.clock.estimate
            assert e is not None
            clocks.append([self.clocks[rows.clock_id][0], False, e.offset_ns, e.drift_ppm, e.error_ns])
        self.send(wire.CLOCKS, {"clocks": clocks}, None)



class OldStreamError(ValueError):
    """A stream of an older protocol (its records pickled): refused, never unpickled."""


class RecordSink:
    """The service's end of the pipe: raw-record frames go through a :class:`Collector`, every
    other frame (and the collector's rows) to ``ingest`` (:meth:`.ingest.Ingest.handle`)."""

    def __init__(self, ingest: Send) -> None:
        self.ingest = ingest
        self.collector: Collector | None = None
        self.unpacker = RecordUnpacker()
        self.error = ""  # the first frame the collector could not convert, and why
        self.lost_frames = 0

    def handle(self, kind: bytes, meta: Mapping[str, Any], cols: dict[str, np.ndarray]) -> None:
        """Apply one frame. A frame that cannot be converted (damaged, or one that lies about its
        contents) is counted and skipped (``error`` says why): what was captured before and after
        it is kept. Failures to write the capture (a full disk) are not the frame's: they stop it."""
        try:
            if kind in (wire.SESSION, wire.RECORDS):
                self._records(kind, meta, cols)
            else:
                self.ingest(kind, meta, cols)
        except (OldStreamError, OSError, CaptureError):  # the wrong file, or the capture cannot be written
            raise
        except Exception as e:  # a bug or a corrupt frame must not cost the rest of the capture
            self.lost_frames += 1
            self.error = self.error or f"{type(e).__name__}: {str(e)[:200]}"

    def _records(self, kind: bytes, meta: Mapping[str, Any], cols: dict[str, np.ndarray]) -> None:
        if kind == wire.SESSION:
            self.collector = _collector(meta, cols, self.ingest)
        else:
            if self.collector is None:
                raise ValueError("records before the session frame")
            collecting = gc.isenabled()
            gc.disable()  # a frame's records are many short-lived objects and no cycles: no collections for them
            try:
                d, sites = self.unpacker.unpack(dict(meta), cols)
                self.collector.sites.update({int(i): (site, func) for i, site, func in meta.get("sites", ())})
                self.collector.calls = int(meta.get("calls", self.collector.calls))
                self.collector.feed(d, bool(meta.get("final")), sites, meta.get("host_metrics"),
                                    meta.get("host_ticks"))
            finally:
                if collecting:
                    gc.enable()


def _collector(session: Mapping[str, Any], cols: dict[str, np.ndarray], send: Send) -> Collector:
    """The collector of the session a ``SESS`` frame describes (its device model rebuilt)."""
    if session.get("protocol") != PROTOCOL:
        raise OldStreamError("the stream was written by an older accelview (pickled records), which is not read")
    config = CaptureConfig.from_json(session["config"])
    spec = spec_of(session["spec"])
    sim = Simulator(spec, int(session["devices"]), int(session["seed"]), bool(session["deterministic"]),
                    int(session["counter_period_ns"]), host_start_ns=int(session["start_ns"]))
    return Collector(sim, config, send, str(session["process"]), session.get("extra") or {},
                     str(session.get("host", "sim-host")), session.get("host_metrics"))
