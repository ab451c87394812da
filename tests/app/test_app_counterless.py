"""A profiler's trace without hardware counters in the app: colour by class (B) colours its ops
by what the trace alone allows, the legend says what the classes rest on, Details states each
op's class, confidence and evidence, and the Findings panel lists the trace-alone findings."""

from __future__ import annotations

from accelview.model.analysis.ops import CLASS_COLOURS
from kineto_docs import KinetoDoc
from PySide6.QtCore import QSettings

GEMM = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1>(Params)"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def _trace(tmp_path):
    d = KinetoDoc()
    for i in range(3):  # a copy, a GEMM, an add and an exposed all-reduce per step, CPU work between steps
        d.step(i * 2_000, 2_000, i)
        d.cpu(i * 2_000, 600, "metrics.compute")
        d.copy(i * 2_000 + 600, 5, i * 2_000 + 610, 100)
        d.launch(i * 2_000 + 610, 5, i * 2_000 + 710, 600, GEMM)
        d.launch(i * 2_000 + 620, 5, i * 2_000 + 1_310, 50, ADD)
        d.launch(i * 2_000 + 630, 5, i * 2_000 + 1_360, 500, NCCL, stream=20)
    return d.trace(tmp_path)


def test_b_colours_a_counterless_trace_by_class_with_an_honest_legend(qtbot, tmp_path):
    from accelview.app.window import MainWindow

    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.resize(1600, 1000)
    trace = _trace(tmp_path)
    with qtbot.waitSignal(w.findings.report_ready, timeout=20_000):
        w.set_trace(trace)
    names = [trace.strings.lookup(n) for n in (GEMM, ADD, NCCL, "Memcpy HtoD (Pinned -> Device)")]
    w.bottleneck_action.setChecked(True)
    assert w.state.lod.colours(names).tolist() == [CLASS_COLOURS[c] for c in
                                                   ("compute", "memory", "communication", "transfer")]
    legend = w.legend
    assert legend.isVisibleTo(w)
    shown = {name for name, (sw, _) in legend.entries.items() if sw.isVisibleTo(legend)}
    assert shown == {"compute", "memory", "communication", "transfer", "host · other"}
    assert legend.evidence.text() == "(no counters)"
    assert "no hardware counters: classed by name" in legend.toolTip()
    # The Findings panel lists what the trace alone shows, and its header says how ops were classed.
    kinds = {f.kind for f in w.findings.model.findings}
    assert {"low-comm-overlap", "stream-serialisation"} <= kinds
    assert "no hardware counters: classed by" in w.findings.status.text()
    # Details of the GEMM: its class, confidence and the evidence used.
    gemm = int(trace.slices.name.tolist().index(names[0]))
    w.state.select(gemm)
    row = dict(zip(w.details.texts(0), w.details.texts(1), strict=True))
    assert row["Bottleneck"].startswith("compute · ") and "confidence" in row["Bottleneck"]
    assert row["Evidence"] == "its name's op family (gemm)"
    w.grab().save(str(tmp_path / "counterless.png"))
