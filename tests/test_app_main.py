"""run_app: creates the window, opens the file, runs the event loop and returns its exit code."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from accelview.app.main import run_app
from accelview.app.window import MainWindow
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication


def test_run_app_opens_the_file_and_returns(qapp, tmp_path, monkeypatch):
    capture_writer = pytest.importorskip("accelview.model.capture_writer")
    from accelview.model.synthetic import demo_trace

    monkeypatch.setenv("HOME", str(tmp_path))  # QSettings of this run go to a scratch home
    path = tmp_path / "run.h5"
    capture_writer.write_capture(demo_trace(steps=1, layers=1), path)
    seen = {}

    def check_and_quit():
        wins = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)]
        if wins and wins[-1].state.trace is not None:
            seen["slices"] = len(wins[-1].state.trace.slices)
            for w in wins:
                w.close()
            QApplication.quit()
        else:
            QTimer.singleShot(50, check_and_quit)

    QTimer.singleShot(50, check_and_quit)
    QTimer.singleShot(15000, QApplication.quit)  # never hang the suite
    assert run_app(str(path)) == 0
    assert seen.get("slices", 0) > 0
