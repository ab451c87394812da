"""Only plain data crosses the pipe and lands in a spool: a crafted stream runs no code."""

from __future__ import annotations

import ast
import json
import pickle
from pathlib import Path

import msgspec
import numpy as np
import pytest
from accelview.capture.protocol import plain, wire
from accelview.capture.protocol.config import CaptureConfig
from accelview.capture.service.runner import convert_spool
from accelview.capture.sim.runtime import api
from accelview.capture.tracer.recorder import traced_simulator
from accelview.model.errors import CaptureError

CAPTURE = Path(__file__).resolve().parents[1] / "capture"


class _Marker:
    """Unpickling this creates a file: what a crafted spool would make ``accelview convert`` do."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return open, (str(self.path), "w")


def _recorded_frames() -> list[tuple[bytes, dict, dict]]:
    """The frames a traced session sends: SESS, RECS..., END."""
    frames: list[tuple[bytes, dict, dict]] = []
    rec = traced_simulator(CaptureConfig(flush_events=20), lambda k, m, c: frames.append((k, dict(m), dict(c or {}))))
    dev = rec.sim.device(0)
    x = dev.alloc((256, 256), "bf16")
    for _ in range(30):
        dev.launch("gemm", m=8, n=256, k=256)
    dev.copy(api.host_buffer((256, 256), "bf16", pinned=True), x)
    rec.finish(0)
    return frames


def _write_spool(path: Path, frames: list[tuple[bytes, dict, dict]]) -> None:
    path.write_bytes(b"".join(b"".join(map(bytes, wire.encode(k, m, c))) for k, m, c in frames))


def test_a_spool_of_the_old_pickled_format_is_refused_and_runs_nothing(tmp_path) -> None:
    marker = tmp_path / "ran"
    frames = _recorded_frames()
    kind, meta, _ = frames[0]
    assert kind == wire.SESSION
    old = {k: v for k, v in meta.items() if k not in ("protocol", "spec")}  # as an older accelview wrote it
    payload = np.frombuffer(pickle.dumps(_Marker(marker)), dtype=np.uint8)
    spool = tmp_path / ".old.h5.spool"
    _write_spool(spool, [(wire.SESSION, old, {"spec": payload}), *frames[1:]])
    with pytest.raises(CaptureError) as e:
        convert_spool(spool, tmp_path / "old.h5")
    assert str(spool) in str(e.value) and "older accelview" in str(e.value) and "\n" not in str(e.value)
    assert not marker.exists() and not (tmp_path / "old.h5").exists()


@pytest.mark.parametrize("column", ["side", "op_args", "call_args", "call_names"])
def test_a_records_frame_holding_a_pickle_is_not_converted_and_runs_nothing(tmp_path, column) -> None:
    marker = tmp_path / "ran"
    frames = _recorded_frames()
    at = next(i for i, (k, _, c) in enumerate(frames) if k == wire.RECORDS and column in c)
    kind, meta, cols = frames[at]
    frames[at] = (kind, meta, {**cols, column: pickle.dumps(_Marker(marker))})
    spool = tmp_path / ".crafted.h5.spool"
    _write_spool(spool, frames)
    result = convert_spool(spool, tmp_path / "crafted.h5")
    assert not marker.exists()
    assert "could not convert 1 frame(s)" in result.reason


def test_msgpack_extension_types_and_object_arrays_are_refused() -> None:
    with pytest.raises(plain.PlainDataError):
        plain.decode(msgspec.msgpack.encode([msgspec.msgpack.Ext(1, b"\x80\x04")]))
    with pytest.raises(plain.PlainDataError):
        plain.decode_shared(msgspec.msgpack.encode([{"a": msgspec.msgpack.Ext(2, b"x")}]))
    with pytest.raises(plain.PlainDataError):
        plain.unarray(["|O", [1], b"\0" * 8])
    with pytest.raises(plain.PlainDataError):
        plain.unarray(["<f8", [3], b"\0" * 8])  # fewer bytes than the shape says
    assert plain.unarray(plain.array(np.arange(3.0))).tolist() == [0.0, 1.0, 2.0]


def test_a_frame_column_of_object_dtype_is_refused() -> None:
    text = json.dumps({"table": "x", "columns": [["v", "|O", 2]]}).encode()
    forged = wire.HEADER.pack(wire.ROWS, len(text), 16) + text + bytes(16)
    reader = wire.FrameReader()
    assert list(reader.feed(forged, final=True)) == []  # skipped as damaged, never decoded
    assert reader.damaged == 1 and "refused" in reader.problems[0]


def test_nothing_in_capture_imports_pickle_or_marshal() -> None:
    for path in CAPTURE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not {n.split(".")[0] for n in names} & {"pickle", "marshal", "cloudpickle", "dill"}, path
