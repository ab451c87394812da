"""The Graph dock: built when shown, selection synchronised with the timeline both ways, groups
unfold on click, hover names edges with their latency, and it renders without a display."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest
from accelview.app.cli.main import main
from accelview.app.graph_panel import GraphPanel
from accelview.app.state import ViewState
from accelview.app.theme import THEMES
from accelview.app.timeline import TimelineWidget
from accelview.model.graph.dag import OP
from accelview.model.graph.display import GROUP
from accelview.model.loader import load_trace
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QImage

DEMO = str(resources.files("accelview.resources").joinpath("demo.h5"))


@pytest.fixture(scope="module")
def demo_trace():
    return load_trace(DEMO)


@pytest.fixture
def panel(qtbot, demo_trace):
    state = ViewState()
    p = GraphPanel(state, THEMES["dark"])
    qtbot.addWidget(p)
    p.resize(1200, 500)
    p.show()
    state.set_trace(demo_trace)
    qtbot.waitUntil(lambda: p.graph is not None, timeout=20_000)  # built in a worker thread
    return p


def centre(p: GraphPanel, i: int) -> QPointF:
    p.canvas.centre_on(i)
    return p.canvas._screen_rect(i).center()


def test_clicking_a_node_selects_its_slice_in_the_timeline(qtbot, panel):
    d = panel.disp
    i = int(np.flatnonzero(d.kind == OP)[0])
    sid = int(panel.graph.slice_of[d.source[i]])
    qtbot.mouseClick(panel.canvas, Qt.MouseButton.LeftButton, pos=centre(panel, i).toPoint())
    assert panel.state.selected == sid
    assert panel.canvas.selected == i
    assert "Lifecycle" in panel.lifecycle_label.text() and "execution" in panel.lifecycle_label.text()


def test_selecting_a_slice_in_the_timeline_selects_its_node(qtbot, panel, demo_trace):
    timeline = TimelineWidget(panel.state, THEMES["dark"])
    qtbot.addWidget(timeline)
    timeline.resize(1200, 600)
    timeline.show()
    t = demo_trace
    # A copy's DMA job: drawn as itself in the folded graph.
    dma = int(np.flatnonzero(t.slices.name == t.strings.lookup("D2H 513024 B"))[0])
    panel.state.show_window(int(t.slices.start_ns[dma]) - 1000, int(t.slices.start_ns[dma] + t.slices.dur_ns[dma]))
    rect = timeline.painter.slice_rect(dma, timeline.vbar.value())
    timeline.vbar.setValue(max(int(rect.top()) - 200, 0))  # its lane in view
    rect = timeline.painter.slice_rect(dma, timeline.vbar.value())
    qtbot.mouseClick(timeline, Qt.MouseButton.LeftButton, pos=rect.center().toPoint())
    assert panel.state.selected == dma
    node = panel.graph.index_of(dma)
    assert panel.canvas.selected == int(panel.disp.node_of[node]) >= 0
    assert "dma" in panel.lifecycle_label.text() and "wake" in panel.lifecycle_label.text()
    # A slice folded into a group selects the group that holds it.
    op = int(np.flatnonzero(t.slices.name == t.strings.lookup("decode.layers.5.o_proj"))[2])
    panel.state.select(op)
    assert panel.disp.kind[panel.canvas.selected] == GROUP


def test_a_group_unfolds_and_folds_on_click(qtbot, panel):
    d = panel.disp
    groups = np.flatnonzero(d.kind == GROUP)
    assert len(groups)
    before = len(d)
    label = d.labels[int(groups[-1])]
    qtbot.mouseClick(panel.canvas, Qt.MouseButton.LeftButton, pos=centre(panel, int(groups[-1])).toPoint())
    assert len(panel.disp) > before and label not in panel.disp.labels
    inside = int(np.flatnonzero(panel.disp.kind == OP)[-1])  # a member of the unfolded group
    qtbot.mouseClick(panel.canvas, Qt.MouseButton.RightButton, pos=centre(panel, inside).toPoint())
    assert len(panel.disp) == before and label in panel.disp.labels  # a right-click folds it back
    panel.fold_all()
    assert len(panel.disp) == before
    panel.expand_all()
    assert len(panel.disp) == len(panel.graph)


def test_hover_names_a_node_and_an_edge_with_its_type_and_latency(panel):
    c, d = panel.canvas, panel.disp
    e = int(np.flatnonzero(d.etype == 0)[0])  # a launch edge
    c.centre_on(int(d.src[e]))
    a, b = c._screen_rect(int(d.src[e])), c._screen_rect(int(d.dst[e]))
    mid = QPointF((a.right() + b.left()) / 2, (a.center().y() + b.center().y()) / 2)
    text = c.tooltip_at(mid)
    assert "launch ·" in text and ("s" in text.split("·")[-1])
    assert d.labels[int(d.src[e])] in c.tooltip_at(a.center())


def test_zoomed_out_frames_drop_labels_and_still_draw(panel):
    c = panel.canvas
    img_near = QImage(800, 400, QImage.Format.Format_RGB32)
    c.readable()
    from PySide6.QtGui import QPainter

    p = QPainter(img_near)
    c.paint_to(p, 800, 400)
    p.end()
    c.fit()
    img_far = QImage(800, 400, QImage.Format.Format_RGB32)
    p = QPainter(img_far)
    c.paint_to(p, 800, 400)
    p.end()
    assert img_near != img_far
    assert c.zoom * 170 < 60  # fitted, the boxes are below the label size


def test_window_has_a_graph_dock_built_when_shown(qtbot, demo_trace):
    from accelview.app.window import MainWindow
    from PySide6.QtCore import QSettings

    w = MainWindow(settings=QSettings("accelview-test", "graph"))
    qtbot.addWidget(w)
    w.show()
    w.set_trace(demo_trace)
    assert w.graph_panel.graph is None  # hidden: not built yet
    w.docks["Graph"].show()
    qtbot.waitUntil(lambda: w.graph_panel.graph is not None, timeout=20_000)
    assert len(w.graph_panel.graph) == 3299
    w.close()


def test_render_view_graph_writes_a_png(tmp_path, capsys):
    out = tmp_path / "g.png"
    assert main(["render", DEMO, "--view", "graph", "--out", str(out), "--size", "900x400", "--timing"]) == 0
    assert len(capsys.readouterr().out.split("paint ms per frame:")[1].split("\n")[0].split()) == 10
    img = QImage(str(out))
    colours = {img.pixel(x, y) for x in range(0, 900, 5) for y in range(0, 400, 5)}
    assert img.width() == 900 and len(colours) > 6  # boxes of several classes, edges, text


def test_request_shows_the_selected_ops_chain_alone(panel, demo_trace):
    t = demo_trace
    dma = int(np.flatnonzero(t.slices.name == t.strings.lookup("D2H 513024 B"))[0])
    panel.state.select(dma)
    panel.show_request()
    names = {panel.graph.name(i) for i in range(len(panel.graph))}
    assert {"copy", "submit D2H 513024 B", "D2H 513024 B", "wake: copy"} <= names
    assert len(panel.graph) <= 6 and "request of D2H" in panel.scope_label.text()


def test_analyze_what_if_prints_the_stages_and_the_time_saved(capsys):
    assert main(["analyze", DEMO, "--what-if", "execution=20"]) == 0
    out = capsys.readouterr().out
    assert "wake " in out and "execution" in out.split("What if")[0]
    assert "What if execution were 20% faster" in out and "saves" in out and "decode 7" in out
    assert main(["analyze", DEMO, "--what-if", "queue=20"]) == 2
    assert "queue is waiting" in capsys.readouterr().err
