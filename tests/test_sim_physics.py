"""HBM efficiency and the op cost model: roofline-consistent ops and the issue's figures."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.capture.sim.device import hbm
from accelview.capture.sim.device.costs import op_cost
from accelview.capture.sim.device.opcounters import STALL_REASONS
from accelview.capture.sim.device.specs import list_presets, load_spec
from accelview.capture.sim.llm import MODELS, decode_ops, prefill_ops


@pytest.fixture
def g5():
    return load_spec("gen5x16-141g")


def test_hbm_efficiency_by_access_pattern(g5) -> None:
    seq = hbm.efficiency(g5, hbm.SEQUENTIAL)
    strided = hbm.efficiency(g5, hbm.AccessPattern("strided", 256))
    random = hbm.efficiency(g5, hbm.AccessPattern("random", 64))
    gather4 = hbm.efficiency(g5, hbm.AccessPattern("random", 4))
    assert seq == pytest.approx(0.9, abs=0.03)
    assert random < 0.5 * seq < strided < seq
    assert gather4 < 0.05
    runs = [4, 32, 64, 256, 1024, 4096]
    effs = [hbm.efficiency(g5, hbm.AccessPattern("strided", r)) for r in runs]
    assert effs == sorted(effs)
    assert hbm.burst_utilisation(hbm.AccessPattern("random", 4), 64) == pytest.approx(4 / 64)
    with pytest.raises(ValueError, match="sequential, strided or random"):
        hbm.AccessPattern("diagonal", 64)  # type: ignore[arg-type]


@pytest.mark.parametrize("preset", list_presets())
def test_doubling_k_doubles_a_large_gemm(preset: str) -> None:
    spec = load_spec(preset)
    rng = np.random.default_rng(7)
    base = op_cost(spec, "gemm", rng, m=8192, n=8192, k=4096)
    double = op_cost(spec, "gemm", rng, m=8192, n=8192, k=8192)
    assert base.limiter == double.limiter == "compute"
    assert double.duration_ns / base.duration_ns == pytest.approx(2.0, rel=0.10)
    achieved = double.flops / (double.duration_ns * 1e-9)
    assert 0.6 * spec.matrix_flops("bf16") < achieved < spec.matrix_flops("bf16")


def test_small_gemms_waste_the_matrix_engines(g5) -> None:
    even = op_cost(g5, "gemm", m=512, n=8192, k=8192)
    odd = op_cost(g5, "gemm", m=513, n=8192, k=8192)  # one more row: a mostly empty tile row and wave
    assert even.limiter == odd.limiter == "compute"
    assert odd.utilisation < 0.85 * even.utilisation
    assert odd.duration_ns > 1.15 * even.duration_ns
    tiny = op_cost(g5, "gemm", m=16, n=128, k=64)
    assert tiny.limiter == "latency"
    assert tiny.duration_ns == pytest.approx(g5.timing.op_launch_ns + g5.timing.op_latency_floor_ns)


@pytest.mark.parametrize("preset", ["gen5x16-141g", "gen4x16-64g"])
def test_8b_decode_step_is_memory_bound_at_weight_bytes_over_bandwidth(preset: str) -> None:
    spec = load_spec(preset)
    cfg = MODELS["8b"]
    rng = np.random.default_rng(0)
    costs = [(name, op_cost(spec, kind, rng, **shapes)) for name, kind, shapes in decode_ops(cfg, 1, 1024)]
    total = sum(c.duration_ns for _, c in costs)
    reference = cfg.weight_bytes / spec.hbm_bytes_per_s * 1e9  # REFERENCE.md: ~3.3 ms at 4.8 TB/s
    assert total == pytest.approx(reference, rel=0.10)
    moved = sum(c.bytes_read + c.bytes_written for _, c in costs)
    assert total > moved / spec.hbm_bytes_per_s * 1e9  # never faster than peak bandwidth
    memory_time = sum(c.duration_ns for _, c in costs if c.limiter == "memory")
    assert memory_time > 0.9 * total
    assert all(c.limiter == "memory" for name, c in costs if name.endswith("_proj") or name == "lm_head")


def test_prefill_is_compute_bound_and_decode_attention_memory_bound(g5) -> None:
    cfg = MODELS["8b"]
    pre = {n: op_cost(g5, k, **s) for n, k, s in prefill_ops(cfg, 1, 2048) if n.startswith("layers.0.")}
    assert pre["layers.0.qkv_proj"].limiter == "compute"
    assert pre["layers.0.attention"].limiter == "compute"
    long_decode = op_cost(g5, "attention", batch=1, heads=32, kv_heads=8, head_dim=128, q_len=1, kv_len=32768)
    assert long_decode.limiter == "memory"
    causal = op_cost(g5, "attention", batch=1, heads=32, head_dim=128, q_len=2048, kv_len=2048)
    full = op_cost(g5, "attention", batch=1, heads=32, head_dim=128, q_len=2048, kv_len=2048, causal=False)
    assert causal.flops == pytest.approx(full.flops / 2, rel=0.01)


def test_vector_ops_are_memory_bound_and_patterns_cost(g5) -> None:
    n = 1 << 26
    seq = op_cost(g5, "elementwise", elements=n, inputs=2)
    assert seq.limiter == "memory"
    assert seq.duration_ns == pytest.approx(3 * n * 2 / (g5.hbm_bytes_per_s * 0.92) * 1e9, rel=0.02)
    strided = op_cost(g5, "elementwise", elements=n, inputs=2, pattern="strided", run_bytes=64)
    assert strided.duration_ns > 1.3 * seq.duration_ns
    assert strided.counters["burst_efficiency"] == 1.0  # 64 B runs fill whole bursts
    narrow = op_cost(g5, "elementwise", elements=n, pattern="random", run_bytes=4)
    assert narrow.counters["burst_efficiency"] < 0.7
    assert narrow.counters["hbm_read_bytes"] == n * 2 * 64 // 4
    vector_ops = [
        ("rmsnorm", dict(tokens=4096, hidden=4096)),
        ("layernorm", dict(tokens=4096, hidden=4096)),
        ("softmax", dict(rows=32 * 2048, cols=2048)),
        ("embedding", dict(tokens=4096, hidden=4096, vocab=128256)),
        ("kv_append", dict(batch=8, tokens=512, kv_heads=8, head_dim=128)),
    ]
    for op, shapes in vector_ops:
        c = op_cost(g5, op, **shapes)
        assert c.unit == "vector" and c.limiter == "memory", op
    assert op_cost(g5, "rmsnorm", tokens=1, hidden=4096).limiter == "latency"


def test_counters_add_up(g5) -> None:
    rng = np.random.default_rng(3)
    for op, shapes in [("gemm", dict(m=4096, n=4096, k=4096)), ("gemm", dict(m=1, n=4096, k=4096)),
                       ("rmsnorm", dict(tokens=1, hidden=4096)), ("attention", dict(batch=1, heads=32,
                       head_dim=128, q_len=1, kv_len=8192, kv_heads=8))]:
        c = op_cost(g5, op, rng, **shapes)
        k = c.counters
        stalls = sum(k[f"stall_{r}_cycles"] for r in STALL_REASONS)
        assert k["busy_cycles"] + stalls == k["active_cycles"]
        assert abs(k["dispatch_cycles"] + k["active_cycles"] - k["elapsed_cycles"]) <= 1
        assert k["elapsed_cycles"] == pytest.approx(c.duration_ns * g5.clock_hz * 1e-9, abs=1)
        assert k["hbm_read_bytes"] >= c.bytes_read and k["hbm_write_bytes"] >= c.bytes_written
        assert min(k[f"stall_{r}_cycles"] for r in STALL_REASONS) >= 0
        expected = {"memory": "stall_memory_cycles", "latency": "stall_latency_cycles",
                    "compute": "stall_pipeline_cycles"}[c.limiter]
        assert k[expected] == max(k[f"stall_{r}_cycles"] for r in STALL_REASONS)


def test_jitter_is_seeded_small_and_optional(g5) -> None:
    shapes = dict(m=4096, n=4096, k=4096)
    a = [op_cost(g5, "gemm", np.random.default_rng(5), **shapes).duration_ns for _ in range(2)]
    b = op_cost(g5, "gemm", np.random.default_rng(6), **shapes).duration_ns
    plain = op_cost(g5, "gemm", **shapes)
    assert a[0] == a[1] != b
    assert plain.jitter == 1.0
    assert abs(b / plain.duration_ns - 1) <= 3 * g5.timing.jitter


def test_bad_op_shapes_name_the_op(g5) -> None:
    with pytest.raises(ValueError, match="gemm: missing a required argument: 'k'"):
        op_cost(g5, "gemm", m=1, n=1)
    with pytest.raises(ValueError, match="gemm: m must be positive"):
        op_cost(g5, "gemm", m=0, n=1, k=1)
    with pytest.raises(ValueError, match="unknown op 'conv'"):
        op_cost(g5, "conv", m=1)
    with pytest.raises(ValueError, match="unknown dtype 'int4'"):
        op_cost(g5, "gemm", m=1, n=1, k=1, dtype="int4")
    with pytest.raises(ValueError, match="multiple of kv_heads"):
        op_cost(g5, "attention", batch=1, heads=32, kv_heads=5, head_dim=128, q_len=1, kv_len=8)
