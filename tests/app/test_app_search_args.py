"""The search box finds slices by argument value (``key=value``, ``arg:text``) and says how."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from accelview.app.search import SearchBar
from accelview.app.state import ViewState
from accelview.model import TraceBuilder, TrackKind
from PySide6.QtCore import Qt


def kernels():
    b = TraceBuilder()
    host = b.add_track("h", TrackKind.HOST, host="h")
    th = b.add_track("t", TrackKind.HOST_THREAD, parent=host, host="h")
    for i, kv in enumerate((512, 514, 5140, 514)):
        b.add_slice(th, i * 1_000_000, 1_000, "attn", "k", args={"kv_len": kv})
    return b.build()


def test_typing_key_equals_value_and_enter_selects_the_slices_with_that_argument(qtbot):
    st = ViewState()
    st.set_trace(kernels())
    bar = SearchBar(st)
    qtbot.addWidget(bar)
    assert "key=value" in bar.edit.placeholderText() and "arg:" in bar.edit.placeholderText()
    assert "argument" in bar.edit.toolTip()
    qtbot.keyClicks(bar.edit, "kv_len=514")
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return)
    assert bar.count.text() == "1 / 2"
    assert st.trace.slice_args(st.selected)["kv_len"] == 514
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return)
    assert st.trace.slice_args(st.selected)["kv_len"] == 514 and bar.count.text() == "2 / 2"
    bar.edit.setText("arg:514")
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return)
    assert bar.count.text() == "1 / 3"  # 514, 5140, 514: values containing the text
