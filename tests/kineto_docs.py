"""Small PyTorch profiler (Kineto) traces made to show one thing: a document builder whose
events follow Kineto's layout (host pid/tid, GPU pid 0 with one tid per stream, runtime calls
linked to their device work by ``args.correlation``), written and imported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from accelview.model import Trace
from accelview.model.importers import import_trace, kineto
from chrome_files import write

HOST_PID, HOST_TID = 100, 100
A100 = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "numSms": 108, "computeMajor": 8, "computeMinor": 0}


class KinetoDoc:
    """Events of one Kineto trace, in µs as Kineto writes them."""

    def __init__(self, device: dict[str, Any] | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.device = device or A100
        self._corr = 0

    def _x(self, cat: str, pid: int, tid: int, ts: float, dur: float, name: str, args: dict | None) -> None:
        ev = {"ph": "X", "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "name": name}
        if args:
            ev["args"] = args
        self.events.append(ev)

    def cpu(self, ts: float, dur: float, name: str, args: dict | None = None, cat: str = "cpu_op") -> None:
        """A host op (``cpu_op``) or annotation (``user_annotation``: ``ProfilerStep#N``)."""
        self._x(cat, HOST_PID, HOST_TID, ts, dur, name, args)

    def step(self, ts: float, dur: float, n: int) -> None:
        """The profiler's step annotation."""
        self.cpu(ts, dur, f"ProfilerStep#{n}", cat="user_annotation")

    def runtime(self, ts: float, dur: float, name: str) -> int:
        """A runtime call on the host thread; returns its correlation id."""
        self._corr += 1
        self._x("cuda_runtime", HOST_PID, HOST_TID, ts, dur, name, {"correlation": self._corr, "cbid": 211})
        return self._corr

    def launch(self, call_ts: float, call_dur: float, ts: float, dur: float, name: str, stream: int = 7,
               cat: str = "kernel", call: str = "cudaLaunchKernel", args: dict | None = None) -> int:
        """A runtime call and the device work it launched on ``stream``; returns the correlation."""
        corr = self.runtime(call_ts, call_dur, call)
        self._x(cat, 0, stream, ts, dur, name, {"correlation": corr, "stream": stream, "device": 0, **(args or {})})
        return corr

    def copy(self, call_ts: float, call_dur: float, ts: float, dur: float, kind: str = "HtoD (Pinned -> Device)",
             nbytes: int = 1 << 20, stream: int = 7, call: str = "cudaMemcpyAsync") -> int:
        """A memcpy and its runtime call."""
        return self.launch(call_ts, call_dur, ts, dur, f"Memcpy {kind}", stream, "gpu_memcpy", call,
                           {"bytes": nbytes})

    def trace(self, tmp: Path, name: str = "t.json", all_args: bool = False) -> Trace:
        """The document written under ``tmp`` and imported (with every op's arguments: ``all_args``)."""
        doc = {"schemaVersion": 1, "deviceProperties": [self.device], "traceEvents": self.events}
        path = write(tmp / name, doc)
        return kineto.load(path, all_args=True) if all_args else import_trace(path)
