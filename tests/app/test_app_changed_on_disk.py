"""A file that changes on disk while it is open (rewritten, truncated, replaced, deleted) does not
break the view: the window read it whole and keeps what it read; the status bar says the file
changed, with a link that reopens it."""

from __future__ import annotations

import os

import pytest
from accelview.capture.synthetic import demo_trace
from accelview.model.store.writer import write_capture
from timeline_widgets import shown_window


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _replace(path):
    other = path.with_name("other.h5")
    other.write_text("not a capture any more\n")
    os.replace(other, path)


def _delete(path):
    path.unlink()


def _rewrite(path):
    write_capture(demo_trace(steps=2), path, overwrite=True)


CHANGES = {"truncated": _truncate, "replaced": _replace, "deleted": _delete, "rewritten": _rewrite}


@pytest.mark.parametrize("change", CHANGES)
def test_the_view_keeps_what_it_read_and_says_the_file_changed(qtbot, tmp_path, change):
    path = tmp_path / "run.h5"
    write_capture(demo_trace(), path)
    w = shown_window(qtbot, tmp_path)
    with qtbot.waitSignal(w.findings.report_ready, timeout=30_000):
        w.open_path(str(path))
    trace = w.state.trace
    assert not w.file_watch.label.isVisible()

    CHANGES[change](path)
    qtbot.waitUntil(w.file_watch.label.isVisible, timeout=10_000)
    assert "run.h5 changed on disk" in w.file_watch.label.text() and "reopen it" in w.file_watch.label.text()

    # everything the view does after opening works on what it read
    sid = int(len(trace.slices) // 2)
    w.state.select(sid)
    assert w.details.items.rowCount() > 0
    w.state.set_marks([(0.0, 1000.0)])  # a bookmark: its sidecar is written beside the file
    w.timeline.grab()
    job = w.export_chrome(str(tmp_path / "out.json"))
    with qtbot.waitSignal(job.finished, timeout=20_000):
        pass
    assert (tmp_path / "out.json").stat().st_size > 0
    assert w.state.trace is trace
    w.grab().save(str(tmp_path / f"changed_{change}.png"))

    # the link reopens it: the new contents, or the reader's one line for what is no longer a capture
    w.file_watch.label.linkActivated.emit("reopen")
    with qtbot.waitSignal(w.job.finished, timeout=20_000):
        pass
    if change == "rewritten":
        qtbot.waitUntil(lambda: w.state.trace is not trace, timeout=10_000)
        assert not w.file_watch.label.isVisible()
    else:
        qtbot.waitUntil(lambda: w.error_box is not None and w.error_box.isVisible(), timeout=10_000)
        assert w.error_box.text().startswith(str(path)) and w.state.trace is trace
        w.error_box.close()


def test_a_folder_is_watched_through_its_files(qtbot, tmp_path):
    from accelview.app.file_watch import FileWatch
    from PySide6.QtWidgets import QStatusBar

    bar = QStatusBar()
    qtbot.addWidget(bar)
    folder = tmp_path / "ranks"
    folder.mkdir()
    (folder / "a.json").write_text("{}")
    watch = FileWatch(bar)
    watch.watch(str(folder))
    assert watch.changed() is None
    (folder / "a.json").write_text('{"traceEvents": []}')
    assert watch.changed() == folder / "a.json"
    watch.watch(str(tmp_path / "several folders (3 files)"))  # the label of a set of files: nothing watched
    assert watch.path is None and watch.changed() is None
