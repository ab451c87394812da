"""The Findings panel: filled by a background analysis; a click zooms and highlights evidence."""

from __future__ import annotations

from accelview.app.findings_panel import FindingsModel, FindingsPanel
from accelview.app.state import ViewState
from accelview.capture import sim
from accelview.capture.sim import workloads
from accelview.model.analysis.report import analyze
from accelview.model.text.values import format_duration


def _sync_heavy():
    with sim.session(spec="gen5x16-141g", seed=0) as s:
        workloads.run("sync-heavy", ["count=60"])
    return s.trace()


def test_findings_model_passes_the_model_tester(qtmodeltester):
    model = FindingsModel()
    model.set_findings(analyze(_sync_heavy()).findings)
    assert model.rowCount() >= 1
    qtmodeltester.check(model)


def test_panel_analyses_in_the_background_and_click_shows_the_evidence(qtbot):
    state = ViewState()
    panel = FindingsPanel(state)
    qtbot.addWidget(panel)
    trace = _sync_heavy()
    with qtbot.waitSignal(panel.report_ready, timeout=20_000):
        state.set_trace(trace)
    assert panel.model.rowCount() >= 1
    first = panel.model.findings[0]
    assert first.kind == "host-sync"
    assert "1 finding" in panel.status.text() or "findings" in panel.status.text()
    span_before = state.scale.span
    panel.show_finding(0)
    assert state.search_text == "finding: host-sync"
    assert "host-sync" in panel.detail.text() and "Fix:" in panel.detail.text()
    lost = format_duration(first.time_lost_ns)  # as the CLI and every other panel print it
    assert panel.model.data(panel.model.index(0, 2)) == lost and f", {lost} lost)" in panel.detail.text()
    assert len(state.hits) == len(first.slices) and state.selected == first.slices[0]
    assert state.scale.t0 <= first.start_ns and state.scale.t1 >= first.end_ns
    assert state.scale.span <= span_before * 1.1


def test_colour_by_bottleneck_recolours_ops_by_their_class(qtbot, tmp_path):
    from accelview.app.window import MainWindow
    from accelview.model.analysis.ops import CLASS_COLOURS, OTHER_COLOUR
    from PySide6.QtCore import QSettings

    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    trace = _sync_heavy()
    assert not w.bottleneck_action.isEnabled()
    with qtbot.waitSignal(w.findings.report_ready, timeout=20_000):
        w.set_trace(trace)
    assert w.bottleneck_action.isEnabled()
    gemm = trace.strings.lookup("gemm")
    sync = trace.strings.lookup("device_synchronize")
    by_name = w.state.lod.colours([gemm, sync]).tolist()
    w.bottleneck_action.setChecked(True)
    assert w.state.lod.colours([gemm, sync]).tolist() == [CLASS_COLOURS["compute"], OTHER_COLOUR]
    w.bottleneck_action.setChecked(False)
    assert w.state.lod.colours([gemm, sync]).tolist() == by_name


def test_panel_says_a_cpu_only_trace_has_no_device_work(qtbot):
    from accelview.model import TraceBuilder, TrackKind

    b = TraceBuilder()
    b.add_slice(b.add_track("main", TrackKind.HOST_THREAD, host="h"), 0, 1_000, "forward")
    state = ViewState()
    panel = FindingsPanel(state)
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.report_ready, timeout=20_000):
        state.set_trace(b.build())
    assert panel.status.text() == "0 findings · no device work in this trace"
