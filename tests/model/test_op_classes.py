"""Classes of device ops without hardware counters: each kind of evidence on a small Kineto trace."""

from __future__ import annotations

import pytest
from accelview.model.analysis.op_classes import CLASSES, classify_without_counters, vocabulary
from accelview.model.analysis.ops import classify_ops
from accelview.model.analysis.roles import Roles
from kineto_docs import KinetoDoc

GEMM = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1>(Params)"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)"


def _classes(tmp_path, build, device=None, all_args=False):
    d = KinetoDoc(device)
    build(d)
    trace = d.trace(tmp_path, all_args=all_args)
    labels = classify_ops(Roles(trace))
    names = [trace.strings[trace.slices.name[s]] for s in labels.slice.tolist()]
    return {n: (str(lab), str(ev)) for n, lab, ev in zip(names, labels.label, labels.evidence, strict=True)}, labels


def test_kind_name_launch_and_duration(tmp_path):
    def build(d):
        d.launch(0, 5, 10, 400, "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)")
        d.launch(10, 5, 420, 300, "ncclDevKernel_AllGather_RING_LL(ncclDevComm*)", stream=20)
        d.copy(20, 5, 800, 50, "HtoD (Pinned -> Device)")
        d.copy(30, 5, 900, 50, "DtoD (Device -> Device)")
        d.launch(40, 5, 1_000, 20, "Memset (Device)", cat="gpu_memset")
        d.launch(50, 5, 1_100, 500, GEMM)
        d.launch(60, 5, 1_700, 40, ADD)
        d.launch(70, 5, 1_800, 2, "void at::native::reduce_kernel<512, 1>(ReduceOp)")
        d.launch(80, 5, 1_900, 40, "void my_kernel(int)", args={"blocks per SM": 0.05, "grid": [1, 1, 1]})
        d.launch(90, 5, 2_000, 40, "void mystery(int)")

    got, labels = _classes(tmp_path, build)
    assert got["ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"] == (
        "communication", "kind")
    assert got["ncclDevKernel_AllGather_RING_LL(ncclDevComm*)"] == ("communication", "kind")
    assert got["Memcpy HtoD (Pinned -> Device)"] == ("transfer", "kind")
    assert got["Memcpy DtoD (Device -> Device)"] == ("memory", "kind")
    assert got["Memset (Device)"] == ("memory", "kind")
    assert got[GEMM] == ("compute", "name")
    assert got[ADD] == ("memory", "name")
    assert got["void at::native::reduce_kernel<512, 1>(ReduceOp)"] == ("latency", "duration")  # 2 µs of work
    assert got["void my_kernel(int)"] == ("latency", "launch")  # one block for 108 SMs
    assert got["void mystery(int)"] == ("unknown", "none")  # nothing allows a guess, and it is counted
    assert labels.unknown_share(labels.slice * 0 + 1) == pytest.approx(0.1)


def test_roofline_from_flops_and_shapes_against_the_device_preset(tmp_path):
    shape = {"op": "gemm", "m": 8192, "n": 8192, "k": 8192, "dtype": "bf16", "flops": 2 * 8192**3}

    def build(d):
        # 1.1 TFLOP in 4 ms: 275 TFLOP/s, near the A100's 312; 400 MB at 2 TB/s would take 0.2 ms.
        d.launch(0, 5, 10, 4_000, "fused_op_a", args=shape)
        # The same bytes and a thousandth of the FLOPs in 0.3 ms: near the HBM roof.
        d.launch(10, 5, 4_100, 300, "fused_op_b", args={**shape, "flops": 2 * 8192**3 / 1000})
        # 2 MB in 1 ms, far from both roofs, little work: latency-bound.
        d.launch(20, 5, 4_500, 1_000, "fused_op_c", args={"op": "gemm", "m": 512, "n": 512, "k": 512,
                                                          "dtype": "bf16", "flops": 2 * 512**3})

    got, labels = _classes(tmp_path, build)
    assert got["fused_op_a"] == ("compute", "roofline")
    assert got["fused_op_b"] == ("memory", "roofline")
    assert got["fused_op_c"] == ("latency", "roofline")
    assert labels.compute_sol[0] == pytest.approx(2 * 8192**3 / 4e-3 / 312e12)
    # Without the device's peaks (a name no preset knows), the ops fall back on their "op" name.
    got, _ = _classes(tmp_path, build, {"id": 0, "name": "Some Accelerator"})
    assert got["fused_op_a"] == got["fused_op_b"] == ("compute", "name")


def test_vocabulary_is_data_with_known_classes():
    voc = vocabulary()
    assert {f.cls for f in voc.families} <= set(CLASSES)
    assert voc.family_of("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL").name == "collective"
    assert voc.family_of("void fbgemm_gpu::permute_2D_data_kernel<false, int>").name == "embedding"
    assert voc.family_of("sm90_xmma_gemm_bf16bf16_bf16f32").name == "gemm"


def test_counters_are_kept_where_ops_have_them(tmp_path):
    from test_analysis_passes import _base, _launch

    b, api, q, _pcie, mxu = _base()
    cyc = {"elapsed_cycles": 1000, "dispatch_cycles": 0, "active_cycles": 1000, "stall_latency_cycles": 0}
    _launch(b, api, q, mxu, 0, 1_000, 8_000, "elementwise", {**cyc, "flops": 8e9, "hbm_read_bytes": 1e5,
                                                              "hbm_write_bytes": 0})
    _launch(b, api, q, mxu, 10_000, 11_000, 8_000, "elementwise")
    labels = classify_ops(Roles(b.build()))
    assert labels.evidence.tolist() == ["counters", "name"]
    assert labels.label.tolist() == ["compute", "memory"]  # the counters over the name
    assert len(classify_without_counters(Roles(b.build()), labels.slice[:0]).label) == 0


def test_flops_and_shapes_from_the_host_op_that_launched_the_kernel(tmp_path):
    def build(d):
        m = 8192  # aten::mm of two 8192² fp16 matrices: 1.1 TFLOP, 268 MB of inputs
        # Recorded by PyTorch (with_flops, record_shapes) on the op enclosing the launch.
        d.cpu(0, 50, "aten::mm", {"Input Dims": [[m, m], [m, m]], "Input type": ["c10::Half", "c10::Half"],
                                  "flops": 2 * m**3})
        d.launch(10, 5, 20, 4_000, "void kernel_a(Params)")
        d.cpu(100, 50, "aten::add", {"Input Dims": [[m, m], [m, m]], "Input type": ["float", "float"],
                                     "flops": m * m})
        d.launch(110, 5, 4_100, 300, "void kernel_b(Params)")

    got, labels = _classes(tmp_path, build)
    assert got["void kernel_a(Params)"] == ("compute", "roofline")  # 275 TFLOP/s of the A100's 312
    assert got["void kernel_b(Params)"] == ("memory", "roofline")  # 537 MB in 0.3 ms: near the HBM roof
    assert labels.memory_sol[1] == pytest.approx(2 * 8192**2 * 4 / 300e-6 / 2e12)


def test_flops_of_a_matmul_from_its_recorded_dims(tmp_path):
    def build(d):  # record_shapes without with_flops: the FLOPs follow from aten::mm's dims
        d.cpu(0, 50, "aten::mm", {"Input Dims": [[8192, 8192], [8192, 8192]], "Input type": ["c10::Half"] * 2})
        d.launch(10, 5, 20, 4_000, "void kernel_a(Params)")

    got, labels = _classes(tmp_path, build, all_args=True)
    assert got["void kernel_a(Params)"] == ("compute", "roofline")
    assert labels.compute_sol[0] == pytest.approx(2 * 8192**3 / 4e-3 / 312e12)
