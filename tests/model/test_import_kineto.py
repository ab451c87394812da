"""PyTorch profiler (Kineto) import over the real traces in ../shared/traces/kineto.

Counts are checked against a plain JSON decode of the same file (msgspec untyped: dicts and
lists, the same as ``json.load`` but faster), never against the importer's own code paths.
"""

from __future__ import annotations

import gc
import gzip
from collections import Counter
from functools import cache
from typing import Any

import msgspec
import numpy as np
import pytest
from accelview.model import CaptureError, Trace, TrackKind
from accelview.model.importers import find_importer, kineto
from accelview.model.loader import load_trace
from kineto_traces import TRACES, imported, needs_traces

pytestmark = needs_traces

COUNTED = [
    "a100_alexnet.json.gz", "a100_event_sync_multistream.json.gz", "mi250_rocm_minitoy_train.json.gz",
    "a100_2rank_nccl_rank0.json.gz", "v100_1rank_ns_resolution.json.gz", "a100_128rank_sampled/rank-0.json.gz",
    "mtia_1rank_inference_accelerator.json.gz",
]
HOST_CATS = {"cuda_runtime", "cuda_driver", "mtia_runtime"}
DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "mtia_ccp_events"}


@cache
def plain(name: str) -> dict[str, Any]:
    gc.disable()  # millions of small dicts: the cyclic GC would dominate (shared/MEASURED.md)
    try:
        return msgspec.json.decode(gzip.open(TRACES / name).read())
    finally:
        gc.enable()


def plain_counts(doc: dict[str, Any]) -> tuple[Counter, int]:
    """(X events per category, flows expected) from the plain decode, in one pass."""
    cats: Counter = Counter()
    steps: dict[Any, set] = {}
    host: set = set()
    device: list = []
    for e in doc["traceEvents"]:
        ph = e.get("ph")
        if ph == "X":
            cat = e.get("cat")
            cats[cat] += 1
            corr = e.get("args", {}).get("correlation") if cat in HOST_CATS or cat in DEVICE_CATS else None
            if corr is not None:
                (host.add(corr) if cat in HOST_CATS else device.append(corr))
        elif ph in ("s", "f") and e.get("cat") == "fwdbwd":
            steps.setdefault(e["id"], set()).add(ph)
    fwdbwd = sum(1 for v in steps.values() if v == {"s", "f"})
    return cats, fwdbwd + sum(1 for c in device if c in host)


def model_categories(trace: Trace) -> Counter:
    ids, counts = np.unique(trace.slices.category, return_counts=True)
    return Counter({trace.name(int(i)): int(n) for i, n in zip(ids, counts, strict=True)})


@pytest.mark.parametrize("name", COUNTED)
def test_counts_match_a_plain_json_count(name: str) -> None:
    trace = imported(name)
    assert find_importer(TRACES / name).name == "kineto"
    assert trace.self_check() == []
    cats, flows = plain_counts(plain(name))
    got = model_categories(trace)
    for cat in ("kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "cuda_runtime", "mtia_ccp_events", "user_annotation"):
        assert got.get(cat, 0) == cats.get(cat, 0), cat
    assert len(trace.flows) == flows
    assert trace.metadata["import_stats"]["events"] == len(plain(name)["traceEvents"])
    assert trace.metadata["import_stats"]["malformed_events"] == 0


@pytest.mark.parametrize("name", COUNTED)
def test_every_launched_kernel_is_linked_to_its_launch(name: str) -> None:
    trace = imported(name)
    sl = trace.slices
    cat = np.array([trace.name(int(c)) for c in sl.category])
    host = np.isin(cat, list(HOST_CATS)) & (sl.correlation >= 0)
    device = np.isin(cat, list(DEVICE_CATS)) & (sl.correlation >= 0)
    launched = device & np.isin(sl.correlation, sl.correlation[host])
    assert launched.sum() > 0
    linked = np.zeros(len(sl), dtype=bool)
    src, dst = trace.flows.src, trace.flows.dst
    ok = host[src] & (sl.correlation[src] == sl.correlation[dst])
    linked[dst[ok]] = True
    assert np.array_equal(linked & device, launched)
    kinds = trace.tracks.kind[sl.track[device]]
    assert set(np.unique(kinds).tolist()) <= {TrackKind.GPU_STREAM, TrackKind.DMA_ENGINE}
    assert set(np.unique(trace.tracks.kind[sl.track[host]]).tolist()) == {TrackKind.HOST_THREAD}


@pytest.mark.parametrize(("name", "rank", "world"), [
    ("a100_2rank_nccl_rank0.json.gz", 0, 2),
    ("v100_1rank_ns_resolution.json.gz", 0, 1),
    ("a100_128rank_sampled/rank-0.json.gz", 0, 128),
    ("mtia_1rank_inference_accelerator.json.gz", 0, 1),
])
def test_rank_and_world_size_are_read(name: str, rank: int, world: int) -> None:
    trace = imported(name)
    assert [r["rank"] for r in trace.metadata["ranks"]] == [rank]
    assert trace.metadata["world_size"] == world
    roots = [trace.track_name(t) for t in np.flatnonzero(trace.tracks.parent == -1)]
    assert f"rank {rank}" in roots


def test_a_directory_of_ranks_opens_as_one_trace() -> None:
    trace = imported("a100_128rank_sampled")
    assert find_importer(TRACES / "a100_128rank_sampled").name == "kineto"
    assert [r["rank"] for r in trace.metadata["ranks"]] == [0, 1]
    assert trace.metadata["world_size"] == 128
    roots = {trace.track_name(t) for t in np.flatnonzero(trace.tracks.parent == -1)}
    assert {"rank 0", "rank 1"} <= roots
    one = [imported(f"a100_128rank_sampled/rank-{r}.json.gz") for r in (0, 1)]
    assert len(trace.slices) == sum(len(t.slices) for t in one)
    assert len(trace.flows) == sum(len(t.flows) for t in one)
    assert set(trace.metadata["import_stats"]["files"]) == {"rank-0.json.gz", "rank-1.json.gz"}
    assert trace.self_check() == []


def test_timestamps_are_exact_and_absolute() -> None:
    # No baseTimeNanoseconds: the first cpu op's ts 1712195495519689.047 µs is kept to the ns.
    trace = imported("v100_1rank_ns_resolution.json.gz")
    assert 1712195495519689047 in set(trace.slices.start_ns.tolist())
    # baseTimeNanoseconds is added back: ts 4203669603793.474 µs + 1735632360000000000 ns.
    mi250 = imported("mi250_rocm_minitoy_train.json.gz")
    assert mi250.metadata["ranks"][0]["baseTimeNanoseconds"] == 1735632360000000000
    assert int(mi250.slices.start_ns.min()) > 1735632360000000000


def test_device_tracks_and_properties() -> None:
    trace = imported("a100_2rank_nccl_rank0.json.gz")
    kinds = Counter(TrackKind(int(k)).name for k in trace.tracks.kind)
    assert kinds["DEVICE"] >= 1 and kinds["GPU_STREAM"] == 2 and kinds["HOST_THREAD"] >= 1
    assert trace.metadata["deviceProperties"][0]["name"] == "NVIDIA A100-PG509-200"
    assert trace.metadata["distributedInfo"]["backend"] == "nccl"
    mtia = imported("mtia_1rank_inference_accelerator.json.gz")
    names = {mtia.track_name(t): TrackKind(int(k)) for t, k in enumerate(mtia.tracks.kind)}
    assert names["MTIA 9"] is TrackKind.DEVICE and names["DMA_REQUEST"] is TrackKind.DMA_ENGINE
    assert names["Stream 1 FW"] is TrackKind.GPU_STREAM
    assert mtia.metadata["import_stats"]["duplicate_metadata_events"] > 300_000


def test_op_arguments_are_kept_on_request() -> None:
    name = "a100_alexnet.json.gz"
    lean, full = imported(name), kineto.load(TRACES / name, all_args=True)
    op = next(i for i in range(len(full.slices)) if full.name(full.slices.category[i]) == "cpu_op")
    assert "External id" in full.args(int(full.slices.args[op]))
    assert (lean.slices.args[lean.slices.category == lean.strings.lookup("cpu_op")] == -1).all()
    assert len(full.tables["args"]) > len(lean.tables["args"])


@pytest.mark.parametrize(("cut", "problem"), [
    (lambda data: data[: len(data) // 2], "truncated: the gzip stream ends early"),
    (lambda data: gzip.compress(gzip.decompress(data)[:300_000]), "truncated: the file ends inside an event"),
    (lambda data: gzip.compress(gzip.decompress(data).replace(b'"ph": "X"', b'"ph" "X"', 1)), "malformed JSON"),
    (lambda data: b"", "empty file"),
])
def test_a_damaged_real_trace_gives_one_clear_error(tmp_path: Any, cut: Any, problem: str) -> None:
    path = tmp_path / "rank0.json.gz"
    path.write_bytes(cut((TRACES / "a100_alexnet.json.gz").read_bytes()))
    with pytest.raises(CaptureError) as err:
        load_trace(path)
    assert problem in str(err.value) and str(path) in str(err.value)
