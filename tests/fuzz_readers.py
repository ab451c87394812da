"""Fuzzing the readers with Hypothesis: random traces for the round trips (save and load, Chrome
export and import), random corruptions of real captures and traces (bit flips, truncations,
splices, hostile tokens, field mutations), and the oracle every reader must pass on them.

The oracle runs each input in a forked child with a memory limit and a time limit, so that a
crash (even a signal inside a C library), a hang or a blow-up is a finding and not the end of
the run: the child must end in one clean line naming the file (``AccelviewError``) or in a
trace that keeps every invariant, summarises, analyses, and saves to a capture that reads back
(what ``accelview info``, ``analyze`` and ``convert`` do with it).

Shared by tests/test_fuzz_readers.py (a bounded, derandomized CI budget) and
benchmarks/fuzz_readers.py (a longer run that prints examples tried and failures found).
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import json
import os
import resource
import select
import signal
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from accelview.model import AccelviewError, Trace, TraceBuilder, TrackKind
from accelview.model.analysis.report import analyze
from accelview.model.export.chrome import export_chrome
from accelview.model.loader import load_trace
from accelview.model.store.reader import load_capture
from accelview.model.store.writer import write_capture
from accelview.model.text.summary import summarize
from hypothesis import strategies as st

MEMORY_BOUND = 1 << 30  # address space a child may add to what it inherits
TIME_BOUND = 60.0  # seconds an input may take (a loaded CI machine is slow; a hang never ends)
SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces" / "kineto"

# -- random traces ------------------------------------------------------------------------------
NAMES = st.text(st.characters(exclude_categories=("Cs",)), max_size=10)  # any Unicode but lone surrogates
ARG_VALUES = st.one_of(st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False, allow_infinity=False),
                       NAMES, st.booleans())
ARG_KEYS = NAMES.filter(lambda k: k != "correlation")  # Kineto's args.correlation fills an empty correlation
METADATA = st.dictionaries(NAMES.filter(lambda k: k != "import_stats"),
                           st.one_of(st.integers(-(2**53), 2**53), st.floats(allow_nan=False, allow_infinity=False),
                                     NAMES, st.booleans()), max_size=3)
EVENT_KINDS = [k for k in TrackKind if k is not TrackKind.COUNTER]


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    """A random trace: a tree of tracks, slices that nest, overlap or touch, flows, counter
    tracks with samples, instants, arguments of every kind, metadata, names in any script."""
    b = TraceBuilder()
    tracks: list[int] = []
    for i in range(draw(st.integers(1, 5))):
        tracks.append(b.add_track(draw(NAMES), draw(st.sampled_from(EVENT_KINDS)), draw(st.integers(-1, i - 1)),
                                  host=draw(NAMES), device=draw(st.integers(-1, 7)), sort=draw(st.integers(-3, 3))))
    base = draw(st.integers(-(10**12), 2 * 10**18))  # ns: before zero, and epoch times
    args = st.none() | st.dictionaries(ARG_KEYS, ARG_VALUES, max_size=3)
    ids = [b.add_slice(draw(st.sampled_from(tracks)), base + draw(st.integers(0, 10**7)), draw(st.integers(0, 10**6)),
                       draw(NAMES), draw(NAMES), correlation=draw(st.integers(-1, 2**40)), args=draw(args))
           for _ in range(draw(st.integers(0, 25)))]
    for _ in range(draw(st.integers(0, 4)) if ids else 0):
        b.add_flow(draw(st.sampled_from(ids)), draw(st.sampled_from(ids)), draw(NAMES))
    for j in range(draw(st.integers(0, 2))):  # names unique per parent: the export keys counter lanes by them
        track = b.add_counter_track(f"c{j} {draw(NAMES)}", draw(NAMES), draw(NAMES), draw(NAMES),
                                    parent=draw(st.sampled_from(tracks)))
        for _ in range(draw(st.integers(1, 6))):
            b.add_counter(track, base + draw(st.integers(0, 10**7)),
                          draw(st.floats(allow_nan=False, allow_infinity=False)))
    for _ in range(draw(st.integers(0, 3))):
        b.add_instant(draw(st.sampled_from(tracks)), base + draw(st.integers(0, 10**7)), draw(NAMES), draw(NAMES),
                      args=draw(args))
    b.metadata.update(draw(METADATA))
    return b.build(source="fuzz")


# -- corruptions --------------------------------------------------------------------------------
TOKENS = [b"[", b"{", b"]", b"}", b'"', b",", b":", b"\\", b"\xff", b"\xc3", b"\0", b"1e308", b"-1e400",
          b"9223372036854775808", b"1" * 30, b"null", b"true", b'"ts":', b'"ph":"B",', b'"ph":"E",', b'"args":',
          b"[" * 200, b"{" * 100, b'"\\ud800"', b"\x1f\x8b", b"\x89HDF\r\n\x1a\n"]
HOSTILE_VALUES = [None, True, -1, 0, 2**31, 2**63, -(2**63) - 1, 2**70, 1e308, -1e308, 9.3e15, 0.5, "", "x", "\x00",
                  [], {}, [1, 2], [[[[[]]]]], {"a": {"b": {}}}, ["a", "b", "c", "d", "e", "f", "g", "h", "i"]]

ATTR_VALUES = [True, -1, 0, 2**31, 2**62, 1e308, -1e308, 0.5, "", "x",
               *("json:" + json.dumps(v) for v in HOSTILE_VALUES)]


@st.composite
def byte_corruption(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` after one to four bit flips, truncations, splices, deletions or hostile tokens."""
    buf = bytearray(data)
    for op in draw(st.lists(st.sampled_from(["flip", "truncate", "splice", "delete", "token", "bytes"]),
                            min_size=1, max_size=4)):
        if not buf:
            break
        pos = draw(st.integers(0, len(buf) - 1))
        if op == "flip":
            buf[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del buf[pos:]
        elif op == "splice":
            src = draw(st.integers(0, len(buf) - 1))
            buf[pos:pos] = buf[src : src + draw(st.integers(1, 512))]
        elif op == "delete":
            del buf[pos : pos + draw(st.integers(1, 512))]
        elif op == "token":
            buf[pos:pos] = draw(st.sampled_from(TOKENS))
        else:
            buf[pos : pos + 8] = draw(st.binary(min_size=1, max_size=8))
    return bytes(buf)


def _walk_to(draw: st.DrawFn, doc: Any) -> tuple[Any, Any] | None:
    """A random (container, key) inside a JSON document, reached by descending a few levels."""
    node, at = doc, None
    for _ in range(6):
        keys = list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
        if not keys:
            break
        key = draw(st.sampled_from(keys[:200] if len(keys) <= 200 else keys[:100] + keys[-100:]))
        at = (node, key)
        if not isinstance(node[key], dict | list) or draw(st.booleans()):
            break
        node = node[key]
    return at


@st.composite
def json_mutation(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` (JSON) with one to three fields replaced by hostile values, or removed."""
    doc = json.loads(data)
    for _ in range(draw(st.integers(1, 3))):
        at = _walk_to(draw, doc)
        if at is None:
            break
        node, key = at
        if isinstance(node, dict) and draw(st.integers(0, 4)) == 0:
            del node[key]
        else:
            node[key] = copy.deepcopy(draw(st.sampled_from(HOSTILE_VALUES)))  # later mutations may descend into it
    return json.dumps(doc).encode()


def hdf5_mutation(draw: st.DrawFn, path: Path) -> None:
    """Change a capture in place as a damaged or crafted one would be: values of a column, an
    attribute, a column removed or cut short."""
    with h5py.File(path, "r+") as f:
        names: list[str] = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        for _ in range(draw(st.integers(1, 3))):
            op = draw(st.sampled_from(["set", "set", "attr", "delete", "shrink"]))
            if op == "attr":
                key = draw(st.sampled_from(sorted(f.attrs) or ["metadata"]))
                value = draw(st.sampled_from(ATTR_VALUES))
                f.attrs[key] = value
                continue
            name = draw(st.sampled_from(sorted(names)))
            if name not in f:
                continue
            ds = f[name]
            if op == "delete":
                del f[name]
            elif op == "shrink" and ds.maxshape[0] is None and ds.shape[0]:
                ds.resize((draw(st.integers(0, ds.shape[0] - 1)),))
            elif ds.shape[0] and ds.dtype.kind in "iuf":
                data = ds[()]
                info = np.iinfo(ds.dtype) if ds.dtype.kind in "iu" else np.finfo(ds.dtype)
                value = draw(st.sampled_from([info.min, info.max, -1, 0, 1, 1000, 65535]))
                data[draw(st.integers(0, len(data) - 1))] = max(info.min, min(info.max, value))
                ds[()] = data


# -- the oracle ------------------------------------------------------------------------------
def check_input(path: Path, scratch: Path) -> str:
    """What the commands do with ``path``: "error" (one clean line naming it) or "load" (a
    valid trace that summarises, analyses and saves to a capture that reads back). Anything
    else raises."""
    try:
        trace = load_trace(path)
    except AccelviewError as e:
        message = str(e)
        assert "\n" not in message and message.startswith(f"{path}: "), message
        return "error"
    assert trace.self_check() == [], trace.self_check()
    summarize(trace)
    analyze(trace)
    again = scratch / "again.h5"
    write_capture(trace, again, overwrite=True)
    back = load_capture(again)
    assert len(back.slices) == len(trace.slices) and len(back.tracks) == len(trace.tracks)
    return "load"


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def run_isolated(path: Path, check: Callable[[Path, Path], str] = check_input) -> str:
    """``check(path, scratch)`` in a forked child limited to ``MEMORY_BOUND`` more address space
    and ``TIME_BOUND`` seconds: its answer, or "crash: …", "hang" or "memory: …"."""
    read, write = os.pipe()
    limit = _vm_bytes() + MEMORY_BOUND
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's stack
        status = 1
        try:
            os.close(read)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            with tempfile.TemporaryDirectory() as scratch:
                try:
                    answer = check(path, Path(scratch))
                except MemoryError:
                    answer = "memory: MemoryError"
                except BaseException:
                    answer = "crash: " + traceback.format_exc()[-3000:]
            os.write(write, answer.encode("utf-8", "replace"))
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    chunks, deadline = [], time.monotonic() + TIME_BOUND
    with os.fdopen(read, "rb") as pipe:
        while time.monotonic() < deadline:
            if select.select([pipe], [], [], 0.5)[0]:
                chunk = pipe.read1(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "hang"
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"crash: killed by signal {os.WTERMSIG(status)}"
    return b"".join(chunks).decode() or "crash: the child said nothing"


# -- seeds: real inputs of every reader ------------------------------------------------------
def seeds(folder: Path) -> dict[str, list[Path]]:
    """Real inputs per reader, written into ``folder``: a capture; Chrome JSON plain and
    gzipped; accelview's own export; small real Kineto traces (when ../shared has them, else a
    generated one), plain and gzipped."""
    from factories import tiny_trace
    from hostile_traces import GOOD_EVENTS

    trace = tiny_trace()
    capture = folder / "capture.h5"
    write_capture(trace, capture, overwrite=True)
    chrome = folder / "chrome.json"
    chrome.write_text(json.dumps({"traceEvents": [
        *GOOD_EVENTS,
        {"ph": "s", "pid": 1, "tid": 1, "ts": 2.5, "name": "f", "cat": "c", "id": 1},
        {"ph": "f", "bp": "e", "pid": 1, "tid": 1, "ts": 3.5, "name": "f", "cat": "c", "id": 1},
        {"ph": "b", "pid": 1, "ts": 1, "name": "a", "cat": "c", "id": 2},
        {"ph": "e", "pid": 1, "ts": 9, "name": "a", "cat": "c", "id": 2}]}, indent=1))
    export = export_chrome(trace, folder / "export.json")
    kineto = []
    for name in ("a100_event_sync_multistream.json.gz", "mi250_rocm_minitoy_train.json.gz"):
        if (SHARED / name).is_file():
            plain = folder / name.removesuffix(".gz")
            plain.write_bytes(gzip.decompress((SHARED / name).read_bytes()))
            kineto.append(plain)
    if not kineto:
        plain = folder / "kineto.json"
        plain.write_text(json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1},
                                     "traceEvents": GOOD_EVENTS}))
        kineto.append(plain)
    out: dict[str, list[Path]] = {"hdf5": [capture], "chrome": [chrome], "export": [export], "kineto": kineto}
    for reader in ("chrome", "kineto"):
        plain = out[reader][0]
        gz = plain.with_name(plain.name + ".gz")
        gz.write_bytes(gzip.compress(plain.read_bytes(), compresslevel=6))
        out[reader].append(gz)
    return out


def write_corruption(draw: st.DrawFn, reader: str, seed: Path, folder: Path) -> Path:
    """A corrupted copy of ``seed`` in ``folder`` (same name): bytes, JSON fields or HDF5 values."""
    path = folder / seed.name
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    data = seed.read_bytes()
    kinds = ["bytes", "fields"] if reader == "hdf5" or not seed.name.endswith(".gz") else ["bytes", "fields", "gzip"]
    kind = draw(st.sampled_from(kinds))
    if reader == "hdf5" and kind == "fields":
        path.write_bytes(data)
        hdf5_mutation(draw, path)
    elif kind == "fields":
        path.write_bytes(draw(json_mutation(gzip.decompress(data) if seed.name.endswith(".gz") else data)))
    elif kind == "gzip":  # the JSON inside damaged, then compressed again: a well-formed gzip stream
        path.write_bytes(gzip.compress(draw(byte_corruption(gzip.decompress(data))), compresslevel=1))
    else:
        path.write_bytes(draw(byte_corruption(data)))
    return path
