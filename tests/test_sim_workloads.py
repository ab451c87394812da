"""Each built-in workload runs and shows the bottleneck it exists to show, in the truth."""

from __future__ import annotations

from collections import Counter

import pytest
from accelview.capture import sim
from accelview.capture.sim import workloads
from accelview.capture.sim.llm import MODELS


def _capture(name: str, params: list[str], spec: str = "gen5x16-141g"):
    with sim.session(spec, seed=0) as s:
        workloads.run(name, params)
    trace = s.trace()
    assert trace.self_check() == []
    limiters = Counter(trace.strings[i] for i in trace.truth["truth_ops"].limiter)
    idle = trace.truth["truth_idle"]
    causes: Counter = Counter()
    for c, a, z in zip(idle.cause.tolist(), idle.start_ns.tolist(), idle.end_ns.tolist(), strict=True):
        causes[trace.strings[c]] += z - a
    return trace, limiters, causes


def test_every_workload_is_registered() -> None:
    assert set(workloads.WORKLOADS) == {"llm", "gemm", "pageable-small", "pcie-saturate", "launch-bound",
                                        "strided-memory", "sync-heavy"}


def test_gemm_is_compute_bound() -> None:
    _, limiters, _ = _capture("gemm", ["iters=3", "m=4096"])
    assert limiters == Counter({"compute": 3})


def test_launch_bound_idles_on_the_host() -> None:
    trace, limiters, causes = _capture("launch-bound", ["count=300"])
    assert set(limiters) == {"latency"}
    t0, t1 = trace.time_bounds()
    assert causes["host"] > 0.5 * (t1 - t0)


def test_sync_heavy_idles_on_syncs() -> None:
    _, _, causes = _capture("sync-heavy", ["count=40"])
    assert set(causes) == {"sync"}


def test_pcie_saturate_waits_for_the_link() -> None:
    _, _, causes = _capture("pcie-saturate", ["nbytes=1073741824", "chunks=8"])
    assert causes.most_common(1)[0][0] == "pcie"


def test_pageable_small_stages_on_the_host() -> None:
    trace, _, _ = _capture("pageable-small", ["count=20"])
    names = Counter(trace.strings[i] for i in trace.slices.name)
    assert names["staging memcpy h2d"] == 20


def test_strided_memory_is_slower_than_sequential() -> None:
    trace, limiters, _ = _capture("strided-memory", ["count=4"])
    assert set(limiters) == {"memory"}
    dur: dict[str, list[int]] = {}
    for name, d in zip(trace.slices.name.tolist(), trace.slices.dur_ns.tolist(), strict=True):
        dur.setdefault(trace.strings[name], []).append(d)
    assert min(dur["strided copy"]) > 1.3 * max(dur["sequential copy"])


def test_llm_decode_is_memory_bound() -> None:
    trace, limiters, _ = _capture("llm", ["tokens=2", "prompt=128"])
    assert limiters["memory"] > limiters["compute"]
    names = [trace.strings[i] for i in trace.slices.name]
    assert any(n.startswith("prefill.layers.31") for n in names)
    assert any(n.startswith("decode.lm_head") for n in names)
    copy = trace.strings.lookup("copy")
    rows = zip(trace.slices.args, names, trace.slices.category, strict=True)
    uploaded = sum(trace.args(int(a))["bytes"] for a, n, c in rows if n.startswith("H2D") and c == copy)
    assert uploaded == MODELS["8b"].weight_bytes


@pytest.mark.parametrize("graphs", [True, False])
def test_llm_decode_step_on_the_engine_takes_weight_bytes_over_bandwidth(graphs: bool) -> None:
    with sim.session("gen5x16-141g") as s:
        workloads.run("llm", ["tokens=2", "prompt=1024", "upload=false", f"graphs={graphs}"])
    reference = MODELS["8b"].weight_bytes / s.spec.hbm_bytes_per_s * 1e9  # REFERENCE.md: ~3.3 ms
    finished = s.device(0).engine.finished
    if graphs:
        steps = [(c.start_ns, c.end_ns) for c in finished if c.kind == "graph"]
    else:
        ops = [c for c in finished if c.kind == "op" and c.name.startswith("decode.")]
        per_step = len(ops) // 2
        steps = [(step[0].start_ns, step[-1].end_ns) for step in (ops[:per_step], ops[per_step:])]
    assert len(steps) == 2
    for start, end in steps:
        assert end - start == pytest.approx(reference, rel=0.10)


def test_params_are_typed_and_checked() -> None:
    assert workloads.parse_params("llm", ["tokens=4", "upload=no", "model=70b"]) == {
        "tokens": 4, "upload": False, "model": "70b"}
    with pytest.raises(ValueError, match="unknown workload 'nope'"):
        workloads.parse_params("nope", [])
    with pytest.raises(ValueError, match="gemm: unknown parameter 'q'"):
        workloads.parse_params("gemm", ["q=1"])
    with pytest.raises(ValueError, match="gemm: m='big' is not a valid int"):
        workloads.parse_params("gemm", ["m=big"])
    with pytest.raises(ValueError, match="must look like KEY=VALUE"):
        workloads.parse_params("gemm", ["m"])
    with sim.session("gen4x8-24g"), pytest.raises(MemoryError):
        workloads.run("llm", ["model=70b", "tokens=1"])  # 140 GB of weights on a 24 GB card


def test_the_module_writes_a_capture(tmp_path, capsys) -> None:
    from accelview.capture.sim.__main__ import main
    from accelview.model.store.reader import load_capture

    out = tmp_path / "sync.h5"
    assert main(["sync-heavy", "--param", "count=5", "--spec", "gen4x8-24g", "-o", str(out)]) == 0
    assert "sync.h5: " in capsys.readouterr().out
    assert len(load_capture(out).truth["truth_ops"]) == 5
    assert main(["sync-heavy", "-o", str(out)]) == 2  # exists: refused without --force
    assert "already exists" in capsys.readouterr().err
    assert main(["gemm", "--param", "m=big", "-o", str(tmp_path / "x.h5")]) == 2
    assert "gemm: m='big' is not a valid int" in capsys.readouterr().err
